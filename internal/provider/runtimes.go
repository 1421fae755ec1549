package provider

import (
	"sync"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime/local"
)

// runtimeFactory builds the runtime a placement names, from the provider's
// configuration. Production uses releaseRuntimes; tests hand in their own
// (for example to point the probe at addresses inside their own namespaces).
type runtimeFactory func(pd *providerData, kind string) (runtime.Runtime, error)

// runtimeCache builds each runtime once per provider configuration: a
// Kubernetes runtime holds its clients, which are worth reusing across the
// resources of one run.
type runtimeCache struct {
	build runtimeFactory
	mu    sync.Mutex
	built map[string]runtime.Runtime
}

func (pd *providerData) runtime(kind string) (runtime.Runtime, error) {
	c := pd.runtimes
	c.mu.Lock()
	defer c.mu.Unlock()
	if rt, ok := c.built[kind]; ok {
		return rt, nil
	}
	rt, err := c.build(pd, kind)
	if err != nil {
		return nil, err
	}
	c.built[kind] = rt
	return rt, nil
}

var runtimeUnavailable = refusal.Register("AF-RUN-001",
	"The runtime the manifest names cannot start environments in this build.",
	"Use a runtime this build can start, or a provider release that has it.")

// releaseRuntimes is the production wiring of runtimes.
func releaseRuntimes(pd *providerData, kind string) (runtime.Runtime, error) {
	switch kind {
	case manifest.ProviderLocal:
		return local.New(local.Options{}), nil
	case manifest.ProviderKubernetes:
		return kubernetes.New(pd.kubeconfig, nil, pd.k8s)
	}
	return nil, refusal.New(runtimeUnavailable, "runtime.provider %s cannot start environments in this build", kind)
}
