//go:build linux

package local

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// helperEnv selects what a re-executed provider binary does. The local
// runtime re-executes the binary it runs in (os.Executable) as its
// supervisor, its namespace helper, the exec shim and the probe.
const helperEnv = "AF_LOCAL_HELPER"

// Helper modes.
const (
	modeSupervisor = "supervisor"
	modeNamespace  = "namespace"
	modeExec       = "exec"
	modeProbe      = "probe"
	modeCheck      = "check"
)

// MaybeRunHelper runs the local runtime's helper process when this process
// was started as one, and then exits; otherwise it returns false at once and
// does nothing. Call it first thing in main (and in the TestMain of any
// package whose tests create local environments):
//
//	func main() {
//		if local.MaybeRunHelper() {
//			return
//		}
//		...
//	}
func MaybeRunHelper() bool {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return false
	}
	var code int
	switch mode {
	case modeSupervisor:
		code = runSupervisor()
	case modeNamespace:
		code = runNamespaceHelper()
	case modeExec:
		code = runExecShim()
	case modeProbe:
		code = runProbeProcess()
	case modeCheck:
		code = 0 // the clone itself was the check
	default:
		fmt.Fprintf(os.Stderr, "%s=%q is not a helper mode\n", helperEnv, mode)
		code = 2
	}
	os.Exit(code)
	return true
}

// minimalEnv is the part of this process's environment a helper, the probe
// and a service inherit: enough to find programs and behave like the user's
// shell, never credentials (no AF_LICENSE, cloud or Terraform variables).
func minimalEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR", "XDG_STATE_HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if _, ok := os.LookupEnv("PATH"); !ok {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	return env
}

func notifySIGCHLD(c chan os.Signal) { signal.Notify(c, syscall.SIGCHLD) }
