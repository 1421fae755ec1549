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
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
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

// Update brings the environment's objects in line with env in place: images,
// commands, env and replicas of the Deployments, services added or removed,
// the egress catalogue, and whatever was deleted by hand (a missing
// Deployment, Service, Ingress, NetworkPolicy or the gateway is recreated).
func (r *Runtime) Update(ctx context.Context, env runtime.Environment, ref runtime.Ref) (runtime.State, error) {
	if err := r.Check(env); err != nil {
		return runtime.State{}, err
	}
	c, nsObj, err := r.open(ctx, ref)
	if err != nil {
		return runtime.State{}, err
	}
	ns := nsObj.Name
	b := &builder{opts: r.opts, env: env, namespace: ns}
	u := &updater{c: c, ns: ns, observed: objectHashes{}, written: objectHashes{}}
	err = u.run(ctx, r, b)
	if err == nil {
		err = u.reprobe(ctx, r, b, ref, nsObj)
	}
	if err != nil {
		var rf *refusal.Refusal
		if errors.As(err, &rf) {
			if rf.Created == "" {
				rf.Created = "The environment still exists, possibly partly updated; apply again."
			}
			return runtime.State{}, rf
		}
		rf = refusal.New(APIFailed, "Updating the environment failed while %s: %v", u.step, err).
			WithDetail("In namespace %s.", ns)
		rf.Created = "The environment still exists, possibly partly updated; apply again."
		return runtime.State{}, rf
	}
	if nsObj.Annotations[AnnotationManifest] != env.Source {
		u.step = "recording the manifest on the namespace"
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationManifest: env.Source}}})
		if _, err := c.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			rf := refusal.New(APIFailed, "Updating the environment failed while %s: %v", u.step, err).WithDetail("In namespace %s.", ns)
			rf.Created = "The environment still exists with the new configuration."
			return runtime.State{}, rf
		}
	}
	if env.WaitForRollout && len(u.changed) > 0 {
		if err := waitRollout(ctx, c, ns, u.changed, ""); err != nil {
			rf := refusal.All(err)[0]
			rf.Created = "The environment still exists with the new configuration; its rollout did not finish."
			return runtime.State{}, rf
		}
	}
	return r.Read(ctx, ref)
}

type updater struct {
	c       k8s.Interface
	ns      string
	step    string
	changed []*appsv1.Deployment
	// the containment objects as found before the update, and as written
	observed, written objectHashes
	clusterDNS        string
	cfg               egress.Config
}

func (u *updater) run(ctx context.Context, r *Runtime, b *builder) error {
	c, ns := u.c, u.ns
	opts := metav1.ListOptions{LabelSelector: ownedSelector}

	// The gateway first: its ClusterIP goes into every service pod.
	u.step = "reading Service " + GatewayName
	gwSvc, err := c.CoreV1().Services(ns).Get(ctx, GatewayName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		u.step = "creating Service " + GatewayName
		gwSvc, err = c.CoreV1().Services(ns).Create(ctx, b.gatewayService(), metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	b.gatewayIP = gwSvc.Spec.ClusterIP
	u.step = "reading the cluster resolver Service"
	clusterDNS, err := r.opts.clusterResolverIP(ctx, c)
	if err != nil {
		return err
	}
	cfg := b.egressConfig(clusterDNS)
	u.clusterDNS, u.cfg = clusterDNS, cfg

	// Every policy in the namespace, not only ours: one added by hand
	// widens what the pods may reach, and is removed like one of ours that
	// the manifest no longer wants.
	u.step = "listing NetworkPolicies"
	nps, err := c.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	have := map[string]networkingv1.NetworkPolicy{}
	for i, np := range nps.Items {
		have[np.Name] = np
		u.observed.addPolicy(&nps.Items[i])
	}
	want := map[string]bool{}
	for _, np := range b.networkPolicies() {
		want[np.Name] = true
		old, ok := have[np.Name]
		var got *networkingv1.NetworkPolicy
		if !ok {
			u.step = "creating NetworkPolicy " + np.Name
			got, err = c.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{})
		} else {
			u.step = "updating NetworkPolicy " + np.Name
			old.Labels, old.Spec = np.Labels, np.Spec
			old.ResourceVersion = "" // ours to set: no conflict with controllers writing status
			got, err = c.NetworkingV1().NetworkPolicies(ns).Update(ctx, &old, metav1.UpdateOptions{})
		}
		if err != nil {
			return err
		}
		u.written.addPolicy(got)
	}
	for name := range have {
		if !want[name] {
			u.step = "deleting NetworkPolicy " + name
			if err := c.NetworkingV1().NetworkPolicies(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}

	u.step = "reading ConfigMap " + GatewayConfigMap
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, GatewayConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		u.step = "creating ConfigMap " + GatewayConfigMap
		cm, err = c.CoreV1().ConfigMaps(ns).Create(ctx, b.configMap(cfg), metav1.CreateOptions{})
	case err == nil:
		u.observed.addConfigMap(cm)
		u.step = "updating ConfigMap " + GatewayConfigMap
		cm.Data, cm.BinaryData = b.configMap(cfg).Data, nil
		cm.ResourceVersion = ""
		cm, err = c.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	u.written.addConfigMap(cm)

	u.step = "listing Deployments"
	deps, err := c.AppsV1().Deployments(ns).List(ctx, opts)
	if err != nil {
		return err
	}
	haveDep := map[string]appsv1.Deployment{}
	for i, d := range deps.Items {
		haveDep[d.Name] = d
		if d.Name == GatewayName {
			u.observed.addGateway(&deps.Items[i])
		}
	}
	wantDep := []*appsv1.Deployment{b.gatewayDeployment(cfg, cm)}
	for _, s := range b.env.Manifest.Services {
		wantDep = append(wantDep, b.serviceDeployment(s))
	}
	keep := map[string]bool{}
	for _, d := range wantDep {
		keep[d.Name] = true
		var got *appsv1.Deployment
		if old, ok := haveDep[d.Name]; ok {
			u.step = "updating Deployment " + d.Name
			old.Labels, old.Spec.Replicas, old.Spec.Template, old.Spec.ProgressDeadlineSeconds = d.Labels, d.Spec.Replicas, d.Spec.Template, d.Spec.ProgressDeadlineSeconds
			old.ResourceVersion = "" // the deployment controller writes status all the time
			got, err = c.AppsV1().Deployments(ns).Update(ctx, &old, metav1.UpdateOptions{})
		} else {
			u.step = "creating Deployment " + d.Name
			got, err = c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		}
		if err != nil {
			return err
		}
		if got.Name == GatewayName {
			u.written.addGateway(got)
		}
		u.changed = append(u.changed, got)
	}
	for name := range haveDep {
		if !keep[name] {
			u.step = "deleting Deployment " + name
			if err := c.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return u.webObjects(ctx, b)
}

func (u *updater) webObjects(ctx context.Context, b *builder) error {
	c, ns := u.c, u.ns
	opts := metav1.ListOptions{LabelSelector: ownedSelector + "," + LabelRole + "=" + RoleService}
	var web []manifest.Service
	for _, s := range b.env.Manifest.Services {
		if s.Web {
			web = append(web, s)
		}
	}
	u.step = "listing Services"
	svcs, err := c.CoreV1().Services(ns).List(ctx, opts)
	if err != nil {
		return err
	}
	haveSvc := map[string]corev1.Service{}
	for _, s := range svcs.Items {
		haveSvc[s.Name] = s
	}
	u.step = "listing Ingresses"
	ings, err := c.NetworkingV1().Ingresses(ns).List(ctx, opts)
	if err != nil {
		return err
	}
	haveIng := map[string]networkingv1.Ingress{}
	for _, i := range ings.Items {
		haveIng[i.Name] = i
	}
	keep := map[string]bool{}
	for _, s := range web {
		keep[s.Name] = true
		want := b.webService(s)
		if old, ok := haveSvc[s.Name]; ok {
			u.step = "updating Service " + s.Name
			old.Labels, old.Spec.Ports, old.Spec.Selector = want.Labels, want.Spec.Ports, want.Spec.Selector
			old.ResourceVersion = ""
			_, err = c.CoreV1().Services(ns).Update(ctx, &old, metav1.UpdateOptions{})
		} else {
			u.step = "creating Service " + s.Name
			_, err = c.CoreV1().Services(ns).Create(ctx, want, metav1.CreateOptions{})
		}
		if err != nil {
			return err
		}
		wantIng := b.ingress(s)
		if old, ok := haveIng[s.Name]; ok {
			u.step = "updating Ingress " + s.Name
			old.Labels, old.Spec = wantIng.Labels, wantIng.Spec
			old.ResourceVersion = ""
			_, err = c.NetworkingV1().Ingresses(ns).Update(ctx, &old, metav1.UpdateOptions{})
		} else {
			u.step = "creating Ingress " + s.Name
			_, err = c.NetworkingV1().Ingresses(ns).Create(ctx, wantIng, metav1.CreateOptions{})
		}
		if err != nil {
			return err
		}
	}
	for name := range haveSvc {
		if !keep[name] {
			u.step = "deleting Service " + name
			if err := c.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	for name := range haveIng {
		if !keep[name] {
			u.step = "deleting Ingress " + name
			if err := c.NetworkingV1().Ingresses(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
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
