//go:build !linux

package local

import (
	"context"
	goruntime "runtime"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// Runtime is the local runtime off Linux: its sandbox is Linux namespaces,
// so on this OS it refuses everything, at plan (Check) first.
type Runtime struct{ opts Options }

// New makes the refusing local runtime.
func New(opts Options) *Runtime { return &Runtime{opts: opts} }

var _ runtime.Runtime = (*Runtime)(nil)

// MaybeRunHelper does nothing off Linux: there are no helper processes.
func MaybeRunHelper() bool { return false }

func notLinux() error {
	return refusal.New(NotLinux, "runtime.provider local needs Linux; Terraform runs on %s here", goruntime.GOOS)
}

// Check refuses: no environment can be contained on this OS.
func (r *Runtime) Check(runtime.Environment) error { return notLinux() }

// Create refuses, creating nothing.
func (r *Runtime) Create(context.Context, runtime.Environment) (runtime.State, error) {
	return runtime.State{}, notLinux()
}

// Read finds nothing: no local environment can exist on this OS.
func (r *Runtime) Read(context.Context, runtime.Ref) (runtime.State, error) {
	return runtime.State{}, runtime.ErrNotFound
}

// Update refuses, changing nothing.
func (r *Runtime) Update(context.Context, runtime.Environment, runtime.Ref) (runtime.State, error) {
	return runtime.State{}, notLinux()
}

// Delete has nothing to remove.
func (r *Runtime) Delete(context.Context, runtime.Ref) error { return nil }

// Planned names the environment as the Linux runtime would.
func (r *Runtime) Planned(env runtime.Environment) runtime.State {
	id := runtime.KeyOf(env).LocalID()
	return runtime.State{Ref: runtime.Ref{ID: id}, Namespace: id}
}
