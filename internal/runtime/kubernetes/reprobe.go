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
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
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
	if err == nil {
		if rf := res.Refusal(""); rf != nil {
			err = rf
		}
	}
	if err != nil {
		_ = u.deleteProbePod(context.WithoutCancel(ctx))
		return u.unproven(context.WithoutCancel(ctx), err, res)
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

// unproven handles a re-probe that did not find the environment contained,
// or could not run: the services stop, and the namespace's record of what
// the last good probe ran under is dropped (with the refused result recorded
// when there is one), so that a refresh plans an update and the next Update
// probes again before it starts them. It returns the refusal to report.
func (u *updater) unproven(ctx context.Context, err error, res probe.Result) *refusal.Refusal {
	rf := u.refusal(err)
	rf.Created = "The environment still exists, but its containment is no longer proven, so its services were stopped (scaled to zero; the gateway keeps running): fix the network isolation and apply again (the services start once the probe finds the environment contained), or destroy the environment."
	if err := u.recordUnproven(ctx, res); err != nil {
		rf.Created += " Recording this on the namespace failed (" + err.Error() + "): the next apply may not probe again by itself; destroy the environment if in doubt."
	}
	if failed := u.stopServices(ctx); len(failed) > 0 {
		rf.Created = "The environment still exists and its containment is no longer proven; stopping its services failed for " + strings.Join(failed, "; ") + ": they may still run. Destroy the environment, or fix the network isolation and apply again."
	}
	return rf
}

// recordUnproven drops the record of the objects the last good probe ran
// under and, when the probe gave a verdict, records it: a refresh then
// reports it, and the next Update probes again whatever it finds, instead of
// taking the restored objects for proven ones.
func (u *updater) recordUnproven(ctx context.Context, res probe.Result) error {
	annotations := map[string]any{AnnotationContainmentObjects: nil}
	if res.Verdict != "" {
		raw, err := json.Marshal(res)
		if err != nil {
			return err
		}
		annotations[AnnotationContainment] = string(raw)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	_, err := u.c.CoreV1().Namespaces().Patch(ctx, u.ns, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
