package kubernetes

import (
	"context"
	"encoding/json"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// Update brings the environment's objects in line with env in place: images,
// commands, env and replicas of the Deployments, services added or removed,
// the egress catalogue, and whatever was deleted by hand (a missing
// Deployment, Service, Ingress, NetworkPolicy or the gateway is recreated).
//
// Containment comes first, as in Create: the gateway's Service, the
// NetworkPolicies, the catalogue and the gateway, then the probe again when
// any of them was not as recorded or changed, and only then the services.
// A probe that does not find the environment contained stops its services
// (every service Deployment scaled to zero) before the refusal: an
// environment whose containment is no longer proven runs nothing.
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
	err = u.containment(ctx, r, b)
	if err == nil {
		err = u.reprobe(ctx, r, b, ref, nsObj)
	}
	if err == nil {
		err = u.services(ctx, b)
	}
	if err != nil {
		rf := u.refusal(err)
		if rf.Created == "" {
			rf.Created = "The environment still exists, possibly partly updated; apply again."
		}
		return runtime.State{}, rf
	}
	if nsObj.Annotations[AnnotationManifest] != env.Source {
		u.step = "recording the manifest on the namespace"
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationManifest: env.Source}}})
		if _, err := c.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			rf := u.refusal(err)
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
	// the Deployments as listed before the update, by name
	deployments map[string]appsv1.Deployment
	// the containment objects as found before the update, and as written
	observed, written objectHashes
	clusterDNS        string
	cfg               egress.Config
}

// refusal is err as the refusal Update reports: a refusal as it is, any
// other error (an API request) as APIFailed naming the step it stopped at.
func (u *updater) refusal(err error) *refusal.Refusal {
	var rf *refusal.Refusal
	if errors.As(err, &rf) {
		return rf
	}
	return refusal.New(APIFailed, "Updating the environment failed while %s: %v", u.step, err).WithDetail("In namespace %s.", u.ns)
}

// containment restores the objects the probe runs under: the gateway's
// Service (its ClusterIP goes into every pod), every NetworkPolicy in the
// namespace, the catalogue and the gateway's Deployment.
func (u *updater) containment(ctx context.Context, r *Runtime, b *builder) error {
	c, ns := u.c, u.ns

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

	if err := u.policies(ctx, b); err != nil {
		return err
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
	deps, err := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: ownedSelector})
	if err != nil {
		return err
	}
	u.deployments = map[string]appsv1.Deployment{}
	for i, d := range deps.Items {
		u.deployments[d.Name] = d
		if d.Name == GatewayName {
			u.observed.addGateway(&deps.Items[i])
		}
	}
	gw, err := u.applyDeployment(ctx, b.gatewayDeployment(cfg, cm))
	if err != nil {
		return err
	}
	u.written.addGateway(gw)
	return nil
}

// policies writes the environment's NetworkPolicies and removes every other
// one in the namespace, not only ours: one added by hand widens what the
// pods may reach, and is removed like one of ours the manifest no longer
// wants.
func (u *updater) policies(ctx context.Context, b *builder) error {
	c, ns := u.c, u.ns
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
	return nil
}

// applyDeployment creates d or updates the one listed under its name, and
// counts it among the Deployments whose rollout Update waits for.
func (u *updater) applyDeployment(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	var got *appsv1.Deployment
	var err error
	if old, ok := u.deployments[d.Name]; ok {
		u.step = "updating Deployment " + d.Name
		old.Labels, old.Spec.Replicas, old.Spec.Template, old.Spec.ProgressDeadlineSeconds = d.Labels, d.Spec.Replicas, d.Spec.Template, d.Spec.ProgressDeadlineSeconds
		old.ResourceVersion = "" // the deployment controller writes status all the time
		got, err = u.c.AppsV1().Deployments(u.ns).Update(ctx, &old, metav1.UpdateOptions{})
	} else {
		u.step = "creating Deployment " + d.Name
		got, err = u.c.AppsV1().Deployments(u.ns).Create(ctx, d, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, err
	}
	u.changed = append(u.changed, got)
	return got, nil
}

// services writes the services' Deployments, removes those the manifest no
// longer has, then the web services' Services and Ingresses.
func (u *updater) services(ctx context.Context, b *builder) error {
	keep := map[string]bool{GatewayName: true}
	for _, s := range b.env.Manifest.Services {
		keep[s.Name] = true
		if _, err := u.applyDeployment(ctx, b.serviceDeployment(s)); err != nil {
			return err
		}
	}
	for name := range u.deployments {
		if !keep[name] {
			u.step = "deleting Deployment " + name
			if err := u.c.AppsV1().Deployments(u.ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return u.webObjects(ctx, b)
}

// stopServices scales every service Deployment to zero (after a probe that
// did not find the environment contained); the gateway keeps running, so
// that the next apply can probe again. It returns what it could not stop.
func (u *updater) stopServices(ctx context.Context) []string {
	var failed []string
	patch := []byte(`{"spec":{"replicas":0}}`)
	for name, d := range u.deployments {
		if d.Labels[LabelRole] != RoleService {
			continue
		}
		if _, err := u.c.AppsV1().Deployments(u.ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			failed = append(failed, name+": "+err.Error())
		}
	}
	return failed
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
