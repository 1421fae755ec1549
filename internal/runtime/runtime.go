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

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/placement"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
)

// Environment is one preview environment as the configuration declares it.
type Environment struct {
	Name      string // environment name, a DNS label (e.g. "pr-42")
	Manifest  *manifest.Manifest
	Placement placement.Decision
	// Images overrides services' images by service name.
	Images         map[string]string
	WaitForRollout bool
}

// Ref identifies an environment that exists, without its manifest: what
// import and delete need.
type Ref struct {
	// ID is the resource ID and import ID, in a runtime-specific form
	// (kubernetes: "<kubeconfig_context>/<namespace>"; local: the environment
	// key "<app>-<env>").
	ID string
}

// State is what a runtime observes about an environment that exists.
type State struct {
	Ref       Ref
	Namespace string            // where its objects live (kubernetes namespace, local state key)
	URLs      map[string]string // web service name → URL
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
	// RefFor is the Ref an environment gets, known before it is created, so
	// that the plan can show the resource ID.
	RefFor(env Environment) Ref
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
