//go:build linux

package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// TestCollidingPairs is issue 9's collision with real namespaces: app shop
// + env pr-1 and app shop-pr + env 1 were both "shop-pr-1", one state
// directory. Now they run side by side, each in its own directory, and
// deleting one leaves the other serving.
func TestCollidingPairs(t *testing.T) {
	r := testRuntime(t, Options{})
	ctx := context.Background()
	a := env(testManifest(t, "from-shop"), "pr-1")
	other := testManifest(t, "from-shop-pr")
	other.Name = "shop-pr"
	b := env(other, "1")
	sa, err := r.Create(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Delete(context.Background(), sa.Ref) })
	sb, err := r.Create(ctx, b)
	if err != nil {
		t.Fatalf("the second pair could not start beside the first: %v", err)
	}
	t.Cleanup(func() { _ = r.Delete(context.Background(), sb.Ref) })
	if sa.Ref.ID != "shop/pr-1" || sb.Ref.ID != "shop-pr/1" {
		t.Fatalf("IDs %s and %s", sa.Ref.ID, sb.Ref.ID)
	}
	da, db := r.StateDir(runtime.KeyOf(a)), r.StateDir(runtime.KeyOf(b))
	if da == db || strings.HasPrefix(db, da+"/") || strings.HasPrefix(da, db+"/") {
		t.Fatalf("state directories %s and %s overlap", da, db)
	}
	for st, want := range map[string]string{sa.URLs["web"]: "from-shop", sb.URLs["web"]: "from-shop-pr"} {
		if code, body := get(t, st+"/"); code != 200 || !strings.Contains(string(body), `"greeting":"`+want+`"`) {
			t.Fatalf("GET %s: %d %s, want greeting %s", st, code, body, want)
		}
	}
	if err := r.Delete(ctx, sb.Ref); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, sa.URLs["web"]+"/"); code != 200 || !strings.Contains(string(body), `"greeting":"from-shop"`) {
		t.Fatalf("deleting shop-pr/1 touched shop/pr-1: %d %s", code, body)
	}
	if got, err := r.Read(ctx, sa.Ref); err != nil || !got.Services["web"].Running {
		t.Fatalf("Read shop/pr-1 after deleting shop-pr/1: %+v %v", got, err)
	}
	if _, err := r.Read(ctx, sb.Ref); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Read of the deleted pair = %v", err)
	}
}

// TestStateDirectoryOwnership: a directory is only ever its own pair's. A
// directory of earlier releases (<base>/<app>-<env>, a name two pairs
// share) is found by the pair its state.json names and by no other; a
// pair's own directory naming another pair is refused for read, delete and
// create and left as it is. No processes: the files decide.
func TestStateDirectoryOwnership(t *testing.T) {
	base := t.TempDir()
	r := New(Options{StateBase: base})
	ctx := context.Background()
	write := func(dir, app, envName string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := writeJSON(filepath.Join(dir, fileState), stateFile{Key: app + "-" + envName, App: app, Env: envName}); err != nil {
			t.Fatal(err)
		}
	}
	code := func(err error) refusal.Code {
		if rs := refusal.All(err); len(rs) > 0 {
			return rs[0].Code
		}
		return ""
	}

	legacy := filepath.Join(base, "shop-old-1")
	write(legacy, "shop", "old-1")
	if got, err := r.Read(ctx, runtime.Ref{ID: "shop/old-1"}); err != nil || got.Ref.ID != "shop/old-1" || got.Namespace != "shop/old-1" {
		t.Errorf("the earlier release's directory of shop/old-1: %+v %v", got, err)
	}
	if _, err := r.Read(ctx, runtime.Ref{ID: "shop-old/1"}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("shop-old/1 read shop/old-1's directory: %v", err)
	}
	if err := r.Delete(ctx, runtime.Ref{ID: "shop-old/1"}); err != nil {
		t.Errorf("Delete shop-old/1: %v", err)
	}
	if _, err := os.Stat(filepath.Join(legacy, fileState)); err != nil {
		t.Fatalf("deleting shop-old/1 removed shop/old-1's directory: %v", err)
	}
	if _, err := r.create(ctx, envSpec{Key: "shop/old-1", App: "shop", Env: "old-1"}); code(err) != AlreadyRunning {
		t.Errorf("create of shop/old-1 beside its earlier directory = %v, want %s", err, AlreadyRunning)
	}
	if err := r.Delete(ctx, runtime.Ref{ID: "shop/old-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(legacy); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Delete shop/old-1 left %s: %v", legacy, err)
	}

	forged := r.StateDir(runtime.Key{App: "shop", Env: "pr-3"})
	write(forged, "shop-pr", "3")
	for what, err := range map[string]error{
		"Read":   func() error { _, err := r.Read(ctx, runtime.Ref{ID: "shop/pr-3"}); return err }(),
		"Delete": r.Delete(ctx, runtime.Ref{ID: "shop/pr-3"}),
		"create": func() error { _, err := r.create(ctx, envSpec{Key: "shop/pr-3", App: "shop", Env: "pr-3"}); return err }(),
	} {
		if code(err) != OtherPair {
			t.Errorf("%s of a directory naming another pair = %v, want %s", what, err, OtherPair)
		}
	}
	if _, err := os.Stat(filepath.Join(forged, fileState)); err != nil {
		t.Fatalf("the other pair's files were touched: %v", err)
	}
	for _, bad := range []string{"shop-pr-3", "shop/Pr-3", "../x/y", "shop/pr-3/x"} {
		if _, err := r.Read(ctx, runtime.Ref{ID: bad}); code(err) != BadID {
			t.Errorf("Read(%q) = %v, want %s", bad, err, BadID)
		}
	}
}
