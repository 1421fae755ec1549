package kubernetes

import (
	"context"
	"encoding/json"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// reprobe runs the containment probe again when the objects it ran under
// were not as recorded before the update (a policy deleted, added or
// changed by hand, a widened egress catalogue) or the update itself changed
// them (a new catalogue, a web service's policy): the environment counts as
// contained again only once a probe, under the restored rules, says so. A
// namespace without a record (created before it existed) is probed too.
// It runs before the services are written (Update), and a probe that does not
// find the environment contained stops them.
func (u *updater) reprobe(ctx context.Context, r *Runtime, b *builder, ref runtime.Ref, nsObj *corev1.Namespace) error {
	if rec, ok := recorded(nsObj); ok && len(drift(rec, u.observed)) == 0 && len(drift(rec, u.written)) == 0 {
		return nil
	}
	c, ns := u.c, u.ns
	kctx, _, _ := ParseRef(ref)
	cr := &creation{r: r, c: c, kctx: kctx, b: b, objects: u.written}
	for _, d := range u.changed {
		if d.Name == GatewayName {
			u.step = "waiting for the egress gateway to run its restored configuration"
			if err := waitRollout(ctx, c, ns, []*appsv1.Deployment{d}, ""); err != nil {
				return err
			}
		}
	}
	t := probeTargets{gatewayIP: b.gatewayIP, clusterDNS: u.clusterDNS, publicName: publicNameFor(u.cfg)}
	u.step = "reading Service default/kubernetes (the API server's ClusterIP)"
	apiSvc, err := c.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return err
	}
	t.apiServerIP = apiSvc.Spec.ClusterIP
	u.step = "listing the other environments' egress gateways"
	if t.tenants, err = cr.tenantTargets(ctx); err != nil {
		return err
	}
	u.step = "removing an earlier containment probe Pod"
	if err := u.deleteProbePod(ctx); err != nil {
		return err
	}
	u.step = "running the containment probe again"
	res, err := cr.runProbe(ctx, t)
	if err != nil {
		_ = u.deleteProbePod(context.WithoutCancel(ctx))
		return err
	}
	if rf := res.Refusal(""); rf != nil {
		_ = u.deleteProbePod(context.WithoutCancel(ctx))
		rf.Created = "The environment still exists, but its containment is no longer proven, so its services were stopped (scaled to zero; the gateway keeps running): fix the network isolation and apply again (the services start once the probe finds the environment contained), or destroy the environment."
		if err := u.recordUnproven(context.WithoutCancel(ctx), res); err != nil {
			rf.Created += " Recording the probe's result on the namespace failed (" + err.Error() + "): the next refresh may still show the earlier verdict."
		}
		if failed := u.stopServices(context.WithoutCancel(ctx)); len(failed) > 0 {
			rf.Created = "The environment still exists and its containment is no longer proven; stopping its services failed for " + strings.Join(failed, "; ") + ": they may still run. Destroy the environment, or fix the network isolation and apply again."
		}
		return rf
	}
	u.step = "recording the containment result on the namespace"
	_, err = cr.recordContainment(ctx, res)
	return err
}

func (u *updater) deleteProbePod(ctx context.Context) error {
	err := u.c.CoreV1().Pods(u.ns).Delete(ctx, ProbePodName, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// recordUnproven writes a refused probe result on the namespace and drops
// the record of the objects it ran under: a refresh then reports the verdict
// (so the next plan updates the environment), and the next Update probes
// again whatever it finds, instead of taking the restored objects for proven
// ones.
func (u *updater) recordUnproven(ctx context.Context, res probe.Result) error {
	raw, err := json.Marshal(res)
	if err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		AnnotationContainment: string(raw), AnnotationContainmentObjects: nil,
	}}})
	_, err = u.c.CoreV1().Namespaces().Patch(ctx, u.ns, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
