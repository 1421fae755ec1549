//go:build !linux

package local

import (
	"context"
	"testing"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// Off Linux the local runtime refuses at plan, and Create creates nothing.
func TestRefusesOffLinux(t *testing.T) {
	e := runtime.Environment{Name: "pr-1", Manifest: &manifest.Manifest{Name: "shop"}}
	r := New(Options{})
	for _, err := range []error{r.Check(e), func() error { _, err := r.Create(context.Background(), e); return err }()} {
		if all := refusal.All(err); len(all) == 0 || all[0].Code != NotLinux {
			t.Fatalf("got %v, want %s", err, NotLinux)
		}
	}
}
