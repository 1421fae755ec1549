// Package runtime is what the preview environment resource talks to: one
// interface every runtime implements, and the registry of runtimes per edition.
//
// The resource never knows which runtime it drives. Each runtime proves
// containment with package probe before it starts anything of the
// application, and removes what it created when any step fails.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/placement"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
)

// Environment is one preview environment as the configuration declares it.
type Environment struct {
	Name      string // environment name, a DNS label (e.g. "pr-42")
	Manifest  *manifest.Manifest
	Source    string // the manifest text Manifest was read from, kept by the runtime (State.Source)
	Placement placement.Decision
	// Images overrides services' images by service name.
	Images         map[string]string
	WaitForRollout bool
}

// Ref identifies an environment that exists, without its manifest: what
// import and delete need.
type Ref struct {
	// ID is the resource ID and import ID: Key.LocalID on local,
	// Key.KubernetesID on kubernetes.
	ID string
}

// State is what a runtime observes about an environment that exists.
type State struct {
	Ref       Ref
	Namespace string            // where its objects live (kubernetes namespace, local state key)
	URLs      map[string]string // web service name → URL
	// Source is the manifest text the environment was created or last
	// updated with, as the runtime keeps it, so that an import records the
	// same manifest the configuration holds (an empty plan, not an update).
	Source string
	// Services is what runs, by service name; a service missing from the map
	// or not Running is drift the next plan shows.
	Services    map[string]ServiceState
	Containment probe.Result
}

// ServiceState is one service as observed.
type ServiceState struct {
	Image   string
	Command []string
	Env     map[string]string
	// Replicas is the desired replica count as it is on the runtime (drift if
	// someone scaled by hand).
	Replicas int
	Running  bool
}

// ErrNotFound is returned by Read when the environment no longer exists; the
// resource removes it from state.
var ErrNotFound = errors.New("environment not found")

// Runtime brings environments up and down.
type Runtime interface {
	// Check refuses at plan time whatever this runtime can tell from the
	// environment and local configuration alone, without creating anything
	// (for kubernetes: a kubeconfig context that does not exist).
	Check(env Environment) error
	// Create brings the environment up: isolation first, then the egress
	// gateway, then the containment probe, then the services. On any failure it
	// removes what it created and says so in the refusal.
	Create(ctx context.Context, env Environment) (State, error)
	// Read observes the environment; ErrNotFound when it is gone.
	Read(ctx context.Context, ref Ref) (State, error)
	// Update changes images, commands and env in place, and converges drift
	// back to DesiredServices: re-creates what was deleted, restores replica
	// counts, restarts what died.
	Update(ctx context.Context, env Environment, ref Ref) (State, error)
	// Delete removes everything the environment had and waits until it is gone.
	Delete(ctx context.Context, ref Ref) error
	// Planned is what is known of an environment before it is created, so
	// that the plan shows it: its Ref and Namespace always; URLs when they do
	// not depend on apply (nil: known only after apply).
	Planned(env Environment) State
}

// DesiredServices is what Read should observe when nothing has drifted: every
// service running, one replica, the image the configuration asks for (the
// kubernetes runtime runs images; the local runtime runs commands, so its
// Image is empty). The resource plans this value and Read records the observed
// one, so a service killed, deleted, scaled or re-imaged by hand shows as a
// diff, and Update converges back to it.
func DesiredServices(env Environment) map[string]ServiceState {
	out := make(map[string]ServiceState, len(env.Manifest.Services))
	for _, s := range env.Manifest.Services {
		st := ServiceState{Replicas: 1, Running: true}
		if env.Placement.Runtime != manifest.ProviderLocal {
			st.Image = s.Image
			if img, ok := env.Images[s.Name]; ok {
				st.Image = img
			}
		}
		out[s.Name] = st
	}
	return out
}

// Key is what an environment is, everywhere: the application (the manifest's
// name) and the environment name, kept as two parts. Joining them with a
// hyphen, as IDs and namespaces once did, maps app "shop" + env "pr-1" and
// app "shop-pr" + env "1" to one name, and one environment then adopted and
// destroyed the other. Every ID, namespace and state directory is derived
// from a Key and never split back by guessing.
type Key struct {
	App string // the manifest's name, a DNS label
	Env string // the environment's name, a DNS label
}

// KeyOf is the environment's key.
func KeyOf(env Environment) Key { return Key{App: env.Manifest.Name, Env: env.Name} }

// LocalID is the local runtime's resource and import ID: "<app>/<env>".
func (k Key) LocalID() string { return k.App + "/" + k.Env }

// KubernetesID is the kubernetes runtime's resource and import ID:
// "<kubeconfig_context>/<app>/<env>". The context may itself hold slashes
// (EKS contexts are ARNs); app and env never do, so the last two parts are
// always the key.
func (k Key) KubernetesID(kubeContext string) string { return kubeContext + "/" + k.LocalID() }

// String is LocalID, for messages.
func (k Key) String() string { return k.LocalID() }

// Valid reports whether both parts are DNS labels.
func (k Key) Valid() bool {
	return manifest.DNSLabel.MatchString(k.App) && manifest.DNSLabel.MatchString(k.Env)
}

// ParseLocalID reads "<app>/<env>".
func ParseLocalID(id string) (Key, error) {
	app, env, ok := strings.Cut(id, "/")
	k := Key{App: app, Env: env}
	if !ok || !k.Valid() {
		return Key{}, fmt.Errorf("%q is not <app>/<env> (two DNS labels, for example shop/pr-42)", id)
	}
	return k, nil
}

// ParseKubernetesID reads "<kubeconfig_context>/<app>/<env>".
func ParseKubernetesID(id string) (kubeContext string, k Key, err error) {
	j := strings.LastIndexByte(id, '/')
	i := -1
	if j > 0 {
		i = strings.LastIndexByte(id[:j], '/')
	}
	if i <= 0 {
		return "", Key{}, fmt.Errorf("%q is not <kubeconfig_context>/<app>/<env> (for example eu-prod/shop/pr-42)", id)
	}
	k, err = ParseLocalID(id[i+1:])
	if err != nil {
		return "", Key{}, fmt.Errorf("%q is not <kubeconfig_context>/<app>/<env> (for example eu-prod/shop/pr-42): the last two parts must be DNS labels", id)
	}
	return id[:i], k, nil
}
