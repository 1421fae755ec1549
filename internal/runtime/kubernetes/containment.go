package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
)

// AnnotationContainmentObjects is the namespace annotation that records what
// the containment probe ran under: a hash per NetworkPolicy, of the gateway's
// ConfigMap and of its Deployment, as the API server returned them when they
// were written. Read compares the objects it lists with it, so that a policy
// deleted, added or changed by hand, or a widened egress catalogue, is drift
// the next plan shows, and Update restores the objects and probes again.
const AnnotationContainmentObjects = "antifailure.dev/containment-objects"

// DriftedPrefix starts the containment verdict Read reports when the
// containment objects differ from what the probe ran under; the rest names
// every difference.
const DriftedPrefix = "drifted: "

// objectHashes maps "Kind/name" to the hash of what matters in the object.
type objectHashes map[string]string

func hashJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err) // API types always marshal
	}
	h := sha256.Sum256(raw)
	return hex.EncodeToString(h[:])
}

func (h objectHashes) addPolicy(np *networkingv1.NetworkPolicy) {
	h["NetworkPolicy/"+np.Name] = hashJSON(np.Spec)
}

func (h objectHashes) addConfigMap(cm *corev1.ConfigMap) {
	h["ConfigMap/"+cm.Name] = hashJSON(map[string]any{"data": cm.Data, "binaryData": cm.BinaryData})
}

func (h objectHashes) addGateway(d *appsv1.Deployment) {
	h["Deployment/"+d.Name] = hashJSON(map[string]any{"replicas": d.Spec.Replicas, "template": d.Spec.Template})
}

// observe hashes the containment objects among what a refresh listed: every
// NetworkPolicy in the namespace (ours or not: any policy changes what the
// pods may reach), the gateway's ConfigMap and its Deployment.
func observe(nps []networkingv1.NetworkPolicy, cms []corev1.ConfigMap, deps []appsv1.Deployment) objectHashes {
	h := objectHashes{}
	for i := range nps {
		if nps[i].DeletionTimestamp == nil {
			h.addPolicy(&nps[i])
		}
	}
	for i := range cms {
		if cms[i].Name == GatewayConfigMap && cms[i].DeletionTimestamp == nil {
			h.addConfigMap(&cms[i])
		}
	}
	for i := range deps {
		if deps[i].Name == GatewayName && deps[i].DeletionTimestamp == nil {
			h.addGateway(&deps[i])
		}
	}
	return h
}

// recorded reads the namespace's record; ok is false when there is none
// (an environment from before the record existed): then nothing can be
// compared, and nothing is claimed.
func recorded(ns *corev1.Namespace) (objectHashes, bool) {
	raw := ns.Annotations[AnnotationContainmentObjects]
	if raw == "" {
		return nil, false
	}
	var h objectHashes
	if json.Unmarshal([]byte(raw), &h) != nil {
		return nil, false
	}
	return h, true
}

// drift names every difference between the record and what was observed,
// in a stable order.
func drift(rec, got objectHashes) []string {
	var out []string
	for k, want := range rec {
		have, ok := got[k]
		switch {
		case !ok:
			out = append(out, strings.Replace(k, "/", " ", 1)+" deleted")
		case have != want:
			out = append(out, strings.Replace(k, "/", " ", 1)+" changed")
		}
	}
	for k := range got {
		if _, ok := rec[k]; !ok {
			out = append(out, strings.Replace(k, "/", " ", 1)+" added")
		}
	}
	slices.Sort(out)
	return out
}

// withDrift is the containment result as a refresh reports it: the recorded
// probe result, or, when the objects it ran under differ, a verdict that
// names the differences (the plan shows it, and an apply probes again).
func withDrift(res probe.Result, d []string) probe.Result {
	if len(d) == 0 {
		return res
	}
	res.Verdict = probe.Verdict(DriftedPrefix + strings.Join(d, ", "))
	return res
}

func (h objectHashes) annotation() string {
	raw, _ := json.Marshal(h)
	return string(raw)
}
