package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

var ownedSelector = LabelManagedBy + "=" + ManagedBy

// open resolves a Ref to a client and the environment's namespace, refusing a
// namespace the runtime did not create or that belongs to another pair.
// runtime.ErrNotFound when it is gone (or being removed).
func (r *Runtime) open(ctx context.Context, ref runtime.Ref) (k8s.Interface, *corev1.Namespace, error) {
	kctx, k, err := ParseRef(ref)
	if err != nil {
		return nil, nil, err
	}
	c, err := r.client(kctx)
	if err != nil {
		return nil, nil, err
	}
	obj, err := findNamespace(ctx, c, kctx, k)
	if err != nil {
		return nil, nil, err
	}
	if obj == nil {
		return nil, nil, runtime.ErrNotFound
	}
	return c, obj, nil
}

// Read observes the environment with six requests whatever its size: the
// namespace, then Deployments, Services, Ingresses and ConfigMaps listed by
// label, and every NetworkPolicy in the namespace (a policy added by hand
// changes what the pods may reach as much as one deleted).
func (r *Runtime) Read(ctx context.Context, ref runtime.Ref) (runtime.State, error) {
	c, nsObj, err := r.open(ctx, ref)
	if err != nil {
		return runtime.State{}, err
	}
	if nsObj.DeletionTimestamp != nil {
		return runtime.State{}, runtime.ErrNotFound
	}
	ns := nsObj.Name
	opts := metav1.ListOptions{LabelSelector: ownedSelector}
	fail := func(what string, err error) (runtime.State, error) {
		r := refusal.New(APIFailed, "Reading the environment's %s in namespace %s failed: %v", what, ns, err)
		r.Created = "Nothing was changed."
		return runtime.State{}, r
	}
	deps, err := c.AppsV1().Deployments(ns).List(ctx, opts)
	if err != nil {
		return fail("Deployments", err)
	}
	svcs, err := c.CoreV1().Services(ns).List(ctx, opts)
	if err != nil {
		return fail("Services", err)
	}
	ings, err := c.NetworkingV1().Ingresses(ns).List(ctx, opts)
	if err != nil {
		return fail("Ingresses", err)
	}
	nps, err := c.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fail("NetworkPolicies", err)
	}
	cms, err := c.CoreV1().ConfigMaps(ns).List(ctx, opts)
	if err != nil {
		return fail("ConfigMaps", err)
	}
	var d []string
	if rec, ok := recorded(nsObj); ok {
		d = drift(rec, observe(nps.Items, cms.Items, deps.Items))
	}
	return r.assemble(ref, nsObj, deps.Items, svcs.Items, ings.Items, d), nil
}

// assemble builds the State from what the cluster holds. A service is
// Running when its Deployment exists, is not being deleted and wants at least
// one replica, the egress gateway exists likewise, and, for a web service,
// its Service and Ingress exist. Replicas is the Deployment's desired count,
// so scaling by hand is drift.
func (r *Runtime) assemble(ref runtime.Ref, ns *corev1.Namespace, deps []appsv1.Deployment, svcs []corev1.Service, ings []networkingv1.Ingress, containmentDrift []string) runtime.State {
	st := runtime.State{Ref: ref, Namespace: ns.Name, URLs: map[string]string{}, Services: map[string]runtime.ServiceState{}, Source: ns.Annotations[AnnotationManifest]}
	if raw := ns.Annotations[AnnotationContainment]; raw != "" {
		var res probe.Result
		if json.Unmarshal([]byte(raw), &res) == nil {
			st.Containment = withDrift(res, containmentDrift)
		}
	}
	gatewayUp := false
	for i := range deps {
		d := &deps[i]
		switch d.Labels[LabelRole] {
		case RoleGateway:
			gatewayUp = d.Name == GatewayName && serviceState(d).Running
		case RoleService:
			if name := d.Labels[LabelSvc]; name != "" {
				st.Services[name] = serviceState(d)
			}
		}
	}
	hasSvc := map[string]bool{}
	for _, s := range svcs {
		if s.Labels[LabelRole] == RoleService {
			hasSvc[s.Labels[LabelSvc]] = true
		}
	}
	hasIng := map[string]bool{}
	for _, ing := range ings {
		name := ing.Labels[LabelSvc]
		if name == "" || len(ing.Spec.Rules) == 0 {
			continue
		}
		hasIng[name] = true
		host := ing.Spec.Rules[0].Host
		scheme := r.opts.URLScheme
		for _, t := range ing.Spec.TLS {
			if slices.Contains(t.Hosts, host) {
				scheme = "https"
			}
		}
		st.URLs[name] = scheme + "://" + host
	}
	for i := range deps {
		d := &deps[i]
		name := d.Labels[LabelSvc]
		s, ok := st.Services[name]
		if !ok || d.Labels[LabelRole] != RoleService {
			continue
		}
		if d.Spec.Template.Labels[LabelWeb] == "true" && (!hasSvc[name] || !hasIng[name]) {
			s.Running = false
		}
		if !gatewayUp {
			s.Running = false
		}
		st.Services[name] = s
	}
	return st
}

// Delete removes the namespace (only if the runtime created it) and waits
// until it is gone. First the Deployments and ReplicaSets go, orphaning
// their pods, and the pods are deleted with their own grace: no controller
// recreates a pod the namespace controller has just deleted (a terminating
// namespace refuses it, and the controllers retry), and the namespace is
// gone soon after the last pod (measured on the real node: destroy 11 s ->
// 6 s). A GET, three DELETE collections, one DELETE and one WATCH.
func (r *Runtime) Delete(ctx context.Context, ref runtime.Ref) error {
	c, nsObj, err := r.open(ctx, ref)
	if errors.Is(err, runtime.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := stopControllers(ctx, c, nsObj.Name); err != nil {
		// Only quicker, not needed: the namespace's deletion removes all
		// of it anyway (a user may delete namespaces without being allowed
		// to delete collections).
		tflog.Warn(ctx, "deleting the environment's workloads before its namespace failed; deleting the namespace only", map[string]any{
			"namespace": nsObj.Name, "error": err.Error(),
		})
	}
	if err := removeNamespace(ctx, c, nsObj.Name, nsObj.UID, nsObj.ResourceVersion); err != nil {
		kctx, _, _ := runtime.ParseKubernetesID(ref.ID)
		rf := refusal.New(APIFailed, "Deleting namespace %s on context %s did not finish: %v", nsObj.Name, kctx, err).
			WithNext("Run terraform destroy again, or look at what holds the namespace: kubectl --context %s get namespace %s -o yaml.", kctx, nsObj.Name)
		rf.Created = fmt.Sprintf("Namespace %s may still exist.", nsObj.Name)
		return rf
	}
	return nil
}

// stopControllers deletes the namespace's Deployments and ReplicaSets
// (orphaning their pods) and then the pods.
func stopControllers(ctx context.Context, c k8s.Interface, ns string) error {
	orphan := metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationOrphan)}
	all := metav1.ListOptions{}
	if err := c.AppsV1().Deployments(ns).DeleteCollection(ctx, orphan, all); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := c.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, orphan, all); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
