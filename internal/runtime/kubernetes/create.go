package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// creation is one Create in progress: what it has made so far, so that a
// failure at any step can remove exactly that.
type creation struct {
	r        *Runtime
	c        k8s.Interface
	kctx     string
	b        *builder
	createID string

	step        string // what was being done, for the message
	nsAttempted bool   // a create request for the namespace was sent
	nsCreated   bool   // the namespace is ours to remove
	nsUID       types.UID
	nsRV        string
	made        []string     // what exists because of this create, for the refusal after a rollback
	objects     objectHashes // what the probe runs under, as the API server returned it
}

// Create brings the environment up (see the package documentation for the
// order). On any failure it removes the namespace it created, waits until it
// is gone, and refuses saying what was created and removed again (or
// "Nothing was created." when nothing was).
func (r *Runtime) Create(ctx context.Context, env runtime.Environment) (runtime.State, error) {
	if err := r.Check(env); err != nil {
		return runtime.State{}, err
	}
	kctx := contextFor(env)
	c, err := r.client(kctx)
	if err != nil {
		return runtime.State{}, err
	}
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	cr := &creation{
		r: r, c: c, kctx: kctx, createID: hex.EncodeToString(id), objects: objectHashes{},
		b: &builder{opts: r.opts, env: env, namespace: NamespaceFor(runtime.KeyOf(env))},
	}
	st, err := cr.run(ctx)
	if err != nil {
		return runtime.State{}, cr.abort(ctx, err)
	}
	return st, nil
}

func (cr *creation) run(ctx context.Context) (runtime.State, error) {
	c, b, ns := cr.c, cr.b, cr.b.namespace
	var t probeTargets

	// What the probe aims at, read before anything is created.
	cr.step = "reading Service default/kubernetes (the API server's ClusterIP)"
	apiSvc, err := c.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return runtime.State{}, err
	}
	t.apiServerIP = apiSvc.Spec.ClusterIP
	o := cr.r.opts
	cr.step = fmt.Sprintf("reading Service %s/%s (the cluster resolver)", o.ClusterDNSNamespace, o.ClusterDNSService)
	if t.clusterDNS, err = o.clusterResolverIP(ctx, c); err != nil {
		return runtime.State{}, err
	}
	cr.step = "listing the other environments' egress gateways (the probe's tenant targets)"
	if t.tenants, err = cr.tenantTargets(ctx); err != nil {
		return runtime.State{}, err
	}

	if err := cr.createNamespace(ctx); err != nil {
		return runtime.State{}, err
	}
	cr.made = append(cr.made, fmt.Sprintf("namespace %s on context %s", ns, cr.kctx))
	nps := b.networkPolicies()
	for i, np := range nps {
		cr.step = "creating NetworkPolicy " + np.Name
		got, err := c.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{})
		if err != nil {
			cr.made = append(cr.made, fmt.Sprintf("%d of its %d NetworkPolicies", i, len(nps)))
			return runtime.State{}, err
		}
		cr.objects.addPolicy(got)
	}
	cr.made = append(cr.made, fmt.Sprintf("its %d NetworkPolicies", len(nps)))

	cr.step = "creating Service " + GatewayName
	gwSvc, err := c.CoreV1().Services(ns).Create(ctx, b.gatewayService(), metav1.CreateOptions{})
	if err != nil {
		return runtime.State{}, err
	}
	cr.made = append(cr.made, "Service "+GatewayName)
	b.gatewayIP = gwSvc.Spec.ClusterIP
	t.gatewayIP = b.gatewayIP
	egressCfg := b.egressConfig(t.clusterDNS)
	t.publicName = publicNameFor(egressCfg)
	cr.step = "creating ConfigMap " + GatewayConfigMap
	cm, err := c.CoreV1().ConfigMaps(ns).Create(ctx, b.configMap(egressCfg), metav1.CreateOptions{})
	if err != nil {
		return runtime.State{}, err
	}
	cr.made = append(cr.made, "ConfigMap "+GatewayConfigMap)
	cr.objects.addConfigMap(cm)
	cr.step = "creating Deployment " + GatewayName
	gw, err := c.AppsV1().Deployments(ns).Create(ctx, b.gatewayDeployment(egressCfg, cm), metav1.CreateOptions{})
	if err != nil {
		return runtime.State{}, err
	}
	cr.made = append(cr.made, "Deployment "+GatewayName+" (the egress gateway)")
	cr.objects.addGateway(gw)
	cr.step = "waiting for the egress gateway to become available"
	if err := waitRollout(ctx, c, ns, []*appsv1.Deployment{gw}, gw.ResourceVersion); err != nil {
		return runtime.State{}, err
	}

	result, err := cr.runProbe(ctx, t)
	if err != nil {
		return runtime.State{}, err
	}
	if ref := result.Refusal(""); ref != nil {
		return runtime.State{}, ref
	}
	cr.step = "recording the containment result on the namespace"
	nsObj, err := cr.recordContainment(ctx, result)
	if err != nil {
		return runtime.State{}, err
	}

	// Only now, with containment proven, anything of the application.
	var deps []*appsv1.Deployment
	var svcs []corev1.Service
	var ings []networkingv1.Ingress
	for _, s := range b.env.Manifest.Services {
		cr.step = "creating Deployment " + s.Name
		d, err := c.AppsV1().Deployments(ns).Create(ctx, b.serviceDeployment(s), metav1.CreateOptions{})
		if err != nil {
			return runtime.State{}, err
		}
		cr.made = append(cr.made, "Deployment "+s.Name)
		deps = append(deps, d)
		if !s.Web {
			continue
		}
		cr.step = "creating Service " + s.Name
		sv, err := c.CoreV1().Services(ns).Create(ctx, b.webService(s), metav1.CreateOptions{})
		if err != nil {
			return runtime.State{}, err
		}
		cr.made = append(cr.made, "Service "+s.Name)
		svcs = append(svcs, *sv)
		cr.step = "creating Ingress " + s.Name
		ing, err := c.NetworkingV1().Ingresses(ns).Create(ctx, b.ingress(s), metav1.CreateOptions{})
		if err != nil {
			return runtime.State{}, err
		}
		cr.made = append(cr.made, "Ingress "+s.Name)
		ings = append(ings, *ing)
	}
	if b.env.WaitForRollout && len(deps) > 0 {
		cr.step = "waiting for the services' rollout"
		if err := waitRollout(ctx, c, ns, deps, deps[0].ResourceVersion); err != nil {
			return runtime.State{}, err
		}
	}
	all := make([]appsv1.Deployment, 0, len(deps)+1)
	all = append(all, *gw)
	for _, d := range deps {
		all = append(all, *d)
	}
	return cr.r.assemble(runtime.Ref{ID: runtime.KeyOf(b.env).KubernetesID(cr.kctx)}, nsObj, all, svcs, ings, nil), nil
}

// clusterResolverIP is the ClusterIP of the cluster resolver's Service, or
// "" when there is none (or none this user may see): the probe then still
// resolves a public name through its own resolver, and the gateway has no
// upstream resolver.
func (o Options) clusterResolverIP(ctx context.Context, c k8s.Interface) (string, error) {
	svc, err := c.CoreV1().Services(o.ClusterDNSNamespace).Get(ctx, o.ClusterDNSService, metav1.GetOptions{})
	switch {
	case err == nil:
		if ip := svc.Spec.ClusterIP; ip != corev1.ClusterIPNone {
			return ip, nil
		}
		return "", nil
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return "", nil
	}
	return "", err
}

func (cr *creation) createNamespace(ctx context.Context) error {
	c, ns := cr.c, cr.b.namespace
	k := runtime.KeyOf(cr.b.env)
	if legacy := legacyNamespace(k); legacy != ns {
		// An environment of this pair made by an earlier release, under the
		// old name: it exists, so this create must not make a second one.
		cr.step = "looking for this environment under its earlier name " + legacy
		old, err := c.CoreV1().Namespaces().Get(ctx, legacy, metav1.GetOptions{})
		switch {
		case err == nil && ours(old) && keyOf(old) == k:
			return refusal.New(AlreadyExists, "Environment %s already exists on context %s, in namespace %s (the name earlier releases gave it)", k, cr.kctx, legacy).
				WithDetail("The existing namespace was left as it is.").OnAttribute("name")
		case err != nil && !apierrors.IsNotFound(err):
			return err
		}
	}
	for retried := false; ; retried = true {
		cr.step = "creating Namespace " + ns
		cr.nsAttempted = true
		created, err := c.CoreV1().Namespaces().Create(ctx, cr.b.namespaceObject(cr.createID), metav1.CreateOptions{})
		if err == nil {
			cr.nsCreated, cr.nsUID, cr.nsRV = true, created.UID, created.ResourceVersion
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		cr.nsAttempted = false // the server said no: whatever is there is not ours to remove
		cr.step = "reading the existing Namespace " + ns
		old, gerr := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		if old.DeletionTimestamp != nil && ours(old) && !retried {
			// An earlier environment of the same name is still being
			// removed: wait for it, then create afresh.
			cr.step = "waiting for the earlier Namespace " + ns + " to be removed"
			if err := waitNamespaceGone(ctx, c, ns, old.ResourceVersion); err != nil {
				return err
			}
			continue
		}
		if err := checkOwner(old, cr.kctx, k); err != nil {
			return err
		}
		return refusal.New(AlreadyExists, "Namespace %s already exists on context %s: environment %s already exists there", ns, cr.kctx, k).
			WithDetail("The existing namespace was left as it is.").OnAttribute("name")
	}
}

// abort removes what the create made and turns err into the refusal the user
// sees, saying whether anything is left.
func (cr *creation) abort(ctx context.Context, err error) error {
	ref := cr.refusalFor(ctx, err)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cr.r.opts.CleanupTimeout)
	defer cancel()
	ns := cr.b.namespace
	if cr.nsAttempted && !cr.nsCreated {
		// The create request went out but its answer did not come back: the
		// namespace may exist, and it is ours if it carries our token.
		got, gerr := cr.c.CoreV1().Namespaces().Get(cctx, ns, metav1.GetOptions{})
		switch {
		case gerr == nil && got.Annotations[AnnotationCreateID] == cr.createID:
			cr.nsCreated, cr.nsUID, cr.nsRV = true, got.UID, got.ResourceVersion
			cr.made = append(cr.made, fmt.Sprintf("namespace %s on context %s (its create request got no answer, but it was made)", ns, cr.kctx))
		case gerr == nil || apierrors.IsNotFound(gerr):
		default:
			ref.Created = fmt.Sprintf("Namespace %s on context %s may have been created (its create request got no answer and it cannot be read: %v); if it exists, delete it with: kubectl --context %s delete namespace %s.", ns, cr.kctx, gerr, cr.kctx, ns)
			return ref
		}
	}
	if !cr.nsCreated {
		return ref
	}
	if rerr := removeNamespace(cctx, cr.c, ns, cr.nsUID, cr.nsRV); rerr == nil {
		ref.Created = refusal.RolledBack(cr.made)
	} else {
		ref.Created = fmt.Sprintf("Removing what was created failed (%v): namespace %s on context %s may still exist; delete it with: kubectl --context %s delete namespace %s.", rerr, ns, cr.kctx, cr.kctx, ns)
	}
	return ref
}

func (cr *creation) refusalFor(ctx context.Context, err error) *refusal.Refusal {
	var ref *refusal.Refusal
	if errors.As(err, &ref) {
		return ref
	}
	where := fmt.Sprintf("namespace %s on context %s", cr.b.namespace, cr.kctx)
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return refusal.New(RolloutFailed, "The timeout ran out while %s", cr.step).
			WithDetail("In %s: %v", where, err).
			WithNext("Raise the resource's create timeout, or find out what is slow (image pulls, scheduling), then apply again.")
	}
	return refusal.New(APIFailed, "Creating the environment failed while %s: %v", cr.step, err).
		WithDetail("In %s.", where)
}

// removeNamespace deletes the namespace (only the one with uid, when known)
// and waits until it is gone.
func removeNamespace(ctx context.Context, c k8s.Interface, ns string, uid types.UID, rv string) error {
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	var err error
	for i := 0; i < 3; i++ {
		err = c.CoreV1().Namespaces().Delete(ctx, ns, opts)
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(i+1) * 500 * time.Millisecond)
	}
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return nil // gone already, or a different namespace of that name now
	case err != nil:
		return err
	}
	return waitNamespaceGone(ctx, c, ns, rv)
}

func waitNamespaceGone(ctx context.Context, c k8s.Interface, ns, rv string) error {
	f := follow[*corev1.Namespace]{
		list: func(ctx context.Context, opts metav1.ListOptions) ([]*corev1.Namespace, string, error) {
			l, err := c.CoreV1().Namespaces().List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			out := make([]*corev1.Namespace, len(l.Items))
			for i := range l.Items {
				out[i] = &l.Items[i]
			}
			return out, l.ResourceVersion, nil
		},
		watch: c.CoreV1().Namespaces().Watch,
		opts:  metav1.ListOptions{FieldSelector: nameSelector(ns)},
	}
	var initial []*corev1.Namespace
	if rv != "" {
		initial = []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: ns, ResourceVersion: rv}}}
	}
	return f.until(ctx, rv, initial, func(m map[string]*corev1.Namespace) (bool, error) {
		_, present := m[ns]
		return !present, nil
	})
}

func listPods(c k8s.Interface, ns string) func(context.Context, metav1.ListOptions) ([]*corev1.Pod, string, error) {
	return func(ctx context.Context, opts metav1.ListOptions) ([]*corev1.Pod, string, error) {
		l, err := c.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		out := make([]*corev1.Pod, len(l.Items))
		for i := range l.Items {
			out[i] = &l.Items[i]
		}
		return out, l.ResourceVersion, nil
	}
}

func listDeployments(c k8s.Interface, ns string) func(context.Context, metav1.ListOptions) ([]*appsv1.Deployment, string, error) {
	return func(ctx context.Context, opts metav1.ListOptions) ([]*appsv1.Deployment, string, error) {
		l, err := c.AppsV1().Deployments(ns).List(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		out := make([]*appsv1.Deployment, len(l.Items))
		for i := range l.Items {
			out[i] = &l.Items[i]
		}
		return out, l.ResourceVersion, nil
	}
}

// waitRollout waits until every Deployment in want is available with its
// desired replicas, as kubectl rollout status does; a Deployment past its
// progress deadline fails at once. fromRV, when the Deployments were all
// just created in a fresh namespace, is the first one's resourceVersion and
// saves a LIST; otherwise "" (LIST, then WATCH).
func waitRollout(ctx context.Context, c k8s.Interface, ns string, want []*appsv1.Deployment, fromRV string) error {
	names := make([]string, len(want))
	for i, d := range want {
		names[i] = d.Name
	}
	f := follow[*appsv1.Deployment]{
		list:  listDeployments(c, ns),
		watch: c.AppsV1().Deployments(ns).Watch,
		opts:  metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy},
	}
	var last map[string]*appsv1.Deployment
	var initial []*appsv1.Deployment
	if fromRV != "" {
		initial = want
	}
	err := f.until(ctx, fromRV, initial, func(m map[string]*appsv1.Deployment) (bool, error) {
		last = m
		for _, n := range names {
			d, ok := m[n]
			if !ok {
				return false, refusal.New(RolloutFailed, "Deployment %s/%s was deleted while its rollout was awaited", ns, n)
			}
			done, err := rolledOut(d)
			if err != nil || !done {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil) {
		var pending []string
		for _, n := range names {
			if d, ok := last[n]; ok {
				if done, _ := rolledOut(d); !done {
					pending = append(pending, rolloutStory(d))
				}
			}
		}
		return refusal.New(RolloutFailed, "The timeout ran out before the rollout finished").
			WithDetail("Not available yet:\n  %s", strings.Join(pending, "\n  "))
	}
	return err
}

func rolledOut(d *appsv1.Deployment) (bool, error) {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return false, refusal.New(RolloutFailed, "Deployment %s/%s exceeded its progress deadline", d.Namespace, d.Name).
				WithDetail("%s", rolloutStory(d))
		}
	}
	if d.Generation > d.Status.ObservedGeneration {
		return false, nil
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.UpdatedReplicas >= want && s.Replicas <= s.UpdatedReplicas && s.AvailableReplicas >= want, nil
}

func rolloutStory(d *appsv1.Deployment) string {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := fmt.Sprintf("%s: %d of %d updated, %d available", fmtDeploymentName(d.Namespace, d.Name), d.Status.UpdatedReplicas, want, d.Status.AvailableReplicas)
	for _, c := range d.Status.Conditions {
		if c.Status != corev1.ConditionTrue || c.Reason == "ProgressDeadlineExceeded" {
			s += fmt.Sprintf("; %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	return s
}

func ours(o metav1.Object) bool { return o.GetLabels()[LabelManagedBy] == ManagedBy }
