package kubernetes

// Running the containment probe: the tenants it aims at, its pod, its
// result, and the record of it on the namespace (the pod's shape and
// script are in probepod.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// tenantTargets finds other environments on the cluster for the probe's
// tenant attempts: one LIST of Services across namespaces, by the runtime's
// labels and the gateway's name, made before anything is created.
//
// A user that may not list Services across namespaces (RBAC Forbidden) does
// not stop the environment: the tenant attempts are skipped and a warning is
// logged. They are not failed, because the rest of the probe still proves
// what the services' policies let out; and they are not reported as blocked,
// because an attempt that was never made proves nothing and the probe never
// fabricates a block. Any other error stops the create like every other
// request.
func (cr *creation) tenantTargets(ctx context.Context) ([]string, error) {
	l, err := cr.c.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		LabelSelector: LabelManagedBy + "=" + ManagedBy + "," + LabelRole + "=" + RoleGateway,
		FieldSelector: nameSelector(GatewayName),
		Limit:         tenantListLimit,
	})
	switch {
	case err == nil:
		return pickTenants(l.Items, cr.b.namespace), nil
	case apierrors.IsForbidden(err):
		tflog.Warn(ctx, "containment probe: no tenant attempts, the kubeconfig user may not list Services across namespaces", map[string]any{
			"kubeconfig_context": cr.kctx, "namespace": cr.b.namespace, "error": err.Error(),
		})
		return nil, nil
	default:
		return nil, err
	}
}

// recordContainment keeps the probe result, and what it ran under, on the
// namespace, where Read finds them.
func (cr *creation) recordContainment(ctx context.Context, res probe.Result) (*corev1.Namespace, error) {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		AnnotationContainment: string(raw), AnnotationContainmentObjects: cr.objects.annotation(),
	}}})
	ns, err := cr.c.CoreV1().Namespaces().Patch(ctx, cr.b.namespace, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, err
	}
	cr.nsRV = ns.ResourceVersion
	return ns, nil
}

// runProbe creates the probe pod, waits for its result within ProbeTimeout,
// judges it, and deletes the pod when it is contained.
func (cr *creation) runProbe(ctx context.Context, t probeTargets) (probe.Result, error) {
	c, ns, o := cr.c, cr.b.namespace, cr.r.opts
	plan := o.probePlan(t)
	cr.step = "creating the containment probe Pod " + ProbePodName
	start := time.Now()
	pod, err := c.CoreV1().Pods(ns).Create(ctx, cr.b.probePod(plan, t.publicName), metav1.CreateOptions{})
	if err != nil {
		return probe.Result{}, err
	}
	cr.made = append(cr.made, "the containment probe Pod "+ProbePodName)
	cr.step = "waiting for the containment probe's result"
	pctx, cancel := context.WithTimeout(ctx, o.ProbeTimeout)
	defer cancel()
	last := pod
	pods := follow[*corev1.Pod]{
		list:  listPods(c, ns),
		watch: c.CoreV1().Pods(ns).Watch,
		opts:  metav1.ListOptions{FieldSelector: nameSelector(ProbePodName)},
	}
	err = pods.until(pctx, pod.ResourceVersion, []*corev1.Pod{pod}, func(m map[string]*corev1.Pod) (bool, error) {
		p, ok := m[ProbePodName]
		if !ok {
			return false, errors.New("the containment probe pod was deleted while it ran")
		}
		last = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	elapsed := time.Since(start)
	if err != nil {
		if pctx.Err() != nil && ctx.Err() == nil || errors.Is(err, context.DeadlineExceeded) {
			return probe.Result{}, refusal.New(ProbeDidNotRun, "The containment probe did not finish within %s", elapsed.Round(time.Second)).
				WithDetail("Pod %s/%s on context %s: %s.\nNo application process or image was started.", ns, ProbePodName, cr.kctx, podStory(last)).
				WithNext("Check that the cluster can schedule pods in %s and pull the probe image %s, then apply again.", ns, o.ProbeImage)
		}
		return probe.Result{}, err
	}
	cr.step = "reading the containment probe's result"
	attempts, readErr := cr.probeAttempts(ctx, last)
	res := probe.Judge(summarize(attempts), elapsed)
	if res.Verdict == probe.Contained {
		cr.step = "deleting the containment probe Pod"
		err := c.CoreV1().Pods(ns).Delete(ctx, ProbePodName, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
		if err != nil && !apierrors.IsNotFound(err) {
			return probe.Result{}, err
		}
		return res, nil
	}
	if len(attempts) == 0 {
		why := "neither its termination message nor its log holds an AFPROBE line"
		if readErr != nil {
			why = readErr.Error()
		}
		ref := res.Refusal("")
		ref.Detail = fmt.Sprintf("The probe pod ended %s; %s.\n%s", podStory(last), why, ref.Detail)
		return probe.Result{}, ref
	}
	return res, nil
}

// probeAttempts reads the probe's lines from its termination message, or,
// when that holds none (or was cut short), from its log.
func (cr *creation) probeAttempts(ctx context.Context, pod *corev1.Pod) ([]probe.Attempt, error) {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == "probe" && s.State.Terminated != nil && s.State.Terminated.Message != "" {
			if a, err := probe.ReadLines(strings.NewReader(s.State.Terminated.Message)); err == nil && len(a) > 0 {
				return a, nil
			}
		}
	}
	raw, err := cr.c.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "probe"}).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("its termination message holds no AFPROBE line and its log cannot be read: %w", err)
	}
	return probe.ReadLines(bytes.NewReader(raw))
}

// podStory says where a pod got to, for a message.
func podStory(p *corev1.Pod) string {
	if p == nil {
		return "not created"
	}
	parts := []string{"phase " + string(p.Status.Phase)}
	if p.Status.Reason != "" {
		parts = append(parts, "reason "+p.Status.Reason)
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Reason != "" {
			parts = append(parts, strings.TrimSpace(fmt.Sprintf("%s: %s %s", c.Type, c.Reason, c.Message)))
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil {
			parts = append(parts, strings.TrimSpace(fmt.Sprintf("container %s waiting: %s %s", s.Name, w.Reason, w.Message)))
		}
		if t := s.State.Terminated; t != nil {
			parts = append(parts, fmt.Sprintf("container %s terminated: exit %d %s", s.Name, t.ExitCode, t.Reason))
		}
	}
	if p.Spec.NodeName == "" {
		parts = append(parts, "not scheduled to a node")
	}
	return strings.Join(parts, ", ")
}
