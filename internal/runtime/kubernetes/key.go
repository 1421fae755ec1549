package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// OtherPair refuses an environment whose namespace is labelled for another
// application/environment pair: the runtime never adopts, imports or deletes
// it.
var OtherPair = refusal.Register("AF-K8S-010",
	"The namespace belongs to another application/environment pair.",
	"Leave it alone: it is another environment's. Check the ID's <app>/<env> (the namespace's labels name its owner).")

// AnnotationManifest holds the manifest text the environment was created or
// last updated with, so that an import records the configuration's manifest.
const AnnotationManifest = "antifailure.dev/manifest"

// hashLen is the length of the suffix of hashed namespace names: 10 base32
// characters, 50 bits of SHA-256 of "<app>/<env>".
const hashLen = 10

var (
	hashSuffix = regexp.MustCompile(`-[a-z2-7]{10}$`)
	nsHash     = base32.StdEncoding.WithPadding(base32.NoPadding)
)

// NamespaceFor is the namespace of the environment with key k, unique per
// pair. The plain name af-<app>-<env> is used when only this pair can have
// produced it: the app holds no hyphen (so the first hyphen after "af-"
// splits it), the name fits 63 characters, and it does not end the way
// hashed names end. Otherwise it is af-<app>-<env> cut to fit, then a hyphen
// and a 10-character hash of "<app>/<env>": shop/pr-1 is af-shop-pr-1,
// shop-pr/1 is af-shop-pr-1-<hash>. The namespace's labels name the pair
// too, and every access checks them.
func NamespaceFor(k runtime.Key) string {
	plain := legacyNamespace(k)
	if !strings.Contains(k.App, "-") && len(plain) <= 63 && !hashSuffix.MatchString(plain) {
		return plain
	}
	sum := sha256.Sum256([]byte(k.LocalID()))
	h := strings.ToLower(nsHash.EncodeToString(sum[:]))[:hashLen]
	head := plain
	if max := 63 - 1 - hashLen; len(head) > max {
		head = strings.TrimRight(head[:max], "-")
	}
	return head + "-" + h
}

// legacyNamespace is the name earlier releases gave every environment,
// af-<app>-<env>. An environment created then may still live there; it is
// found only when its labels name this very pair.
func legacyNamespace(k runtime.Key) string { return "af-" + k.App + "-" + k.Env }

// ParseRef reads an ID (or import ID), <kubeconfig_context>/<app>/<env>.
func ParseRef(ref runtime.Ref) (kubeContext string, k runtime.Key, err error) {
	kubeContext, k, err = runtime.ParseKubernetesID(ref.ID)
	if err != nil {
		return "", runtime.Key{}, refusal.New(BadImportID, "%v", err).OnAttribute("id")
	}
	return kubeContext, k, nil
}

// keyOf is the pair a namespace's labels name.
func keyOf(ns *corev1.Namespace) runtime.Key {
	return runtime.Key{App: ns.Labels[LabelApp], Env: ns.Labels[LabelEnv]}
}

// findNamespace GETs the environment's namespace: the one NamespaceFor
// names, or, when that does not exist, the legacy name if it is labelled
// for this pair. nil, nil when neither is there. A namespace under the
// pair's own name that is not this pair's is refused (NotOurs, OtherPair).
func findNamespace(ctx context.Context, c k8s.Interface, kctx string, k runtime.Key) (*corev1.Namespace, error) {
	name := NamespaceFor(k)
	obj, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return obj, checkOwner(obj, kctx, k)
	}
	if !apierrors.IsNotFound(err) {
		return nil, refusal.New(APIFailed, "Reading namespace %s on context %s failed: %v", name, kctx, err)
	}
	legacy := legacyNamespace(k)
	if legacy == name || len(legacy) > 63 {
		return nil, nil
	}
	obj, err = c.CoreV1().Namespaces().Get(ctx, legacy, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, refusal.New(APIFailed, "Reading namespace %s on context %s failed: %v", legacy, kctx, err)
	case !ours(obj) || keyOf(obj) != k:
		// Another pair's (or nobody's) namespace that merely has the old
		// name: not this environment.
		return nil, nil
	}
	return obj, nil
}

// checkOwner refuses a namespace that is not an environment of pair k.
func checkOwner(obj *corev1.Namespace, kctx string, k runtime.Key) error {
	if !ours(obj) {
		return refusal.New(NotOurs, "Namespace %s on context %s is not an Antifailure preview environment", obj.Name, kctx).
			WithDetail("It lacks the label %s=%s that the kubernetes runtime puts on the namespaces it creates; the runtime never adopts, changes or deletes another namespace.", LabelManagedBy, ManagedBy).
			OnAttribute("id")
	}
	if owner := keyOf(obj); owner != k {
		return refusal.New(OtherPair, "Namespace %s on context %s belongs to app %q environment %q, not to %s", obj.Name, kctx, owner.App, owner.Env, k).
			WithDetail("Its labels %s and %s name its owner. The runtime never adopts, imports or deletes another pair's environment; it was left as it is.", LabelApp, LabelEnv).
			OnAttribute("id")
	}
	return nil
}
