package kubernetes

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// follow is a LIST/WATCH pair over one kind, narrowed by selectors.
type follow[T metav1.Object] struct {
	list  func(ctx context.Context, opts metav1.ListOptions) ([]T, string, error)
	watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	opts  metav1.ListOptions
}

// until follows the objects until done says so. With a resourceVersion it
// starts by watching from there, seeded with initial (what the caller just
// created or read), which costs one request; without one it LISTs first.
// A watch the server ends is resumed from the last version seen; an expired
// version means a fresh LIST.
func (f follow[T]) until(ctx context.Context, rv string, initial []T, done func(map[string]T) (bool, error)) error {
	objs := map[string]T{}
	for _, o := range initial {
		objs[o.GetName()] = o
	}
	relist := rv == ""
	for {
		if relist {
			items, listRV, err := f.list(ctx, f.opts)
			if err != nil {
				return err
			}
			objs = map[string]T{}
			for _, o := range items {
				objs[o.GetName()] = o
			}
			rv, relist = listRV, false
		}
		if ok, err := done(objs); ok || err != nil {
			return err
		}
		opts := f.opts
		opts.ResourceVersion = rv
		opts.AllowWatchBookmarks = true
		if dl, ok := ctx.Deadline(); ok {
			s := int64(time.Until(dl).Seconds()) + 1
			opts.TimeoutSeconds = &s
		}
		w, err := f.watch(ctx, opts)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				relist = true
				continue
			}
			return err
		}
		finished, err := f.drain(ctx, w, objs, &rv, &relist, done)
		w.Stop()
		if finished || err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func (f follow[T]) drain(ctx context.Context, w watch.Interface, objs map[string]T, rv *string, relist *bool, done func(map[string]T) (bool, error)) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
					*relist = true
					return false, nil
				}
				return false, err
			case watch.Bookmark:
				if o, ok := ev.Object.(T); ok {
					*rv = o.GetResourceVersion()
				}
				continue
			}
			o, ok := ev.Object.(T)
			if !ok {
				return false, fmt.Errorf("watch: unexpected object %T", ev.Object)
			}
			*rv = o.GetResourceVersion()
			if ev.Type == watch.Deleted {
				delete(objs, o.GetName())
			} else {
				objs[o.GetName()] = o
			}
			if ok, err := done(objs); ok || err != nil {
				return true, err
			}
		}
	}
}

func nameSelector(name string) string { return "metadata.name=" + name }
