//go:build linux

package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// appDir is services.<name>.dir on the host: relative to the Terraform
// working directory, symlinks resolved (the bind follows them, and the
// checks must judge what is bound).
func appDir(dir, workDir string) string {
	if dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(workDir, dir)
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return filepath.Clean(dir)
}

// checkDir refuses an application directory that is missing, or that would
// show a service the Terraform working directory (terraform.tfstate) or any
// environment's state.
func (r *Runtime) checkDir(dir, workDir string) error {
	if dir == "" {
		return nil
	}
	p := appDir(dir, workDir)
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return fmt.Errorf("does not exist (%s)", p)
	case !fi.IsDir():
		return fmt.Errorf("is not a directory (%s)", p)
	}
	for _, other := range []struct{ what, path string }{{"the Terraform working directory", workDir}, {"the local runtime's state", r.opts.StateBase}} {
		o := other.path
		if real, err := filepath.EvalSymlinks(o); err == nil {
			o = real
		}
		if within(o, p) {
			return fmt.Errorf("(%s) is or contains %s (%s); point it at the application's own directory", p, other.what, o)
		}
		if other.what != "the Terraform working directory" && within(p, o) {
			return fmt.Errorf("(%s) is inside %s (%s)", p, other.what, o)
		}
	}
	return nil
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// commandVisible checks that the service's program exists where its view
// will show it: in its application directory or a system directory.
func commandVisible(s serviceSpec) error {
	prog := s.Command[0]
	if !strings.Contains(prog, "/") {
		for _, d := range filepath.SplitList(os.Getenv("PATH")) {
			if visibleSystemPath(d) && executable(filepath.Join(d, prog)) == nil {
				return nil
			}
		}
		return errors.New("is not found in any PATH directory the service's view shows (only the system directories)")
	}
	if !filepath.IsAbs(prog) && s.Dir == "" {
		return errors.New("is a relative path, but the service has no dir to be relative to; add dir: to the service")
	}
	inView := s.program(true)
	switch {
	case within(inView, appRoot+"/"+s.Name):
		rel, _ := filepath.Rel(appRoot+"/"+s.Name, inView)
		return executable(filepath.Join(s.Dir, rel))
	case visibleSystemPath(filepath.Dir(inView)):
		return executable(inView)
	}
	return fmt.Errorf("is outside the service's view (%s): put the program in the service's dir", prog)
}

func visibleSystemPath(p string) bool {
	if !filepath.IsAbs(p) {
		return false
	}
	for _, d := range systemDirs {
		if within(filepath.Clean(p), d) {
			return true
		}
	}
	return false
}

func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("does not exist (%s)", path)
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return fmt.Errorf("is not executable (%s)", path)
	}
	return nil
}
