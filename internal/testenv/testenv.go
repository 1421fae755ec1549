// Package testenv gives tests a real etcd + kube-apiserver (+
// kube-controller-manager) pair of clusters, started by scripts/testenv.sh
// from binaries built into ~/.cache/antifailure-testenv.
//
// Start joins a running testenv when AF_TESTENV names its env file (what
// `scripts/testenv.sh start` prints as ENV=…), and otherwise starts a private
// one under a temporary directory and stops it in Stop. It never builds: when
// the binaries are missing it fails, saying to run `scripts/testenv.sh build`.
// Tests that need the API server fail then; they never skip.
package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Contexts of the two clusters.
const (
	EU = "eu-prod"
	US = "us-prod"
)

// Env is a running testenv.
type Env struct {
	Kubeconfig string            // path of its kubeconfig (contexts eu-prod, us-prod, eu-prod-viewer)
	Vars       map[string]string // its env file
	run        string
	owned      bool
}

// Root is the repository root (the directory holding go.mod).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Start joins or starts a testenv (see the package documentation).
func Start() (*Env, error) {
	if f := os.Getenv("AF_TESTENV"); f != "" {
		vars, err := readEnvFile(f)
		if err != nil {
			return nil, fmt.Errorf("testenv: AF_TESTENV=%s: %w", f, err)
		}
		return &Env{Kubeconfig: vars["KUBECONFIG"], Vars: vars, run: vars["TESTENV_RUN"]}, nil
	}
	root, err := Root()
	if err != nil {
		return nil, err
	}
	run, err := os.MkdirTemp("", "af-testenv-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "testenv.sh"), "start")
	cmd.Env = append(os.Environ(), "TESTENV_RUN="+run, "TESTENV_NO_BUILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		_ = os.RemoveAll(run)
		return nil, fmt.Errorf("testenv: scripts/testenv.sh start failed (%w):\n%s\nThe tests need the real API server; build it once with scripts/testenv.sh build (cold: 7-20 min)", err, stderr.String())
	}
	var envFile string
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "ENV="); ok {
			envFile = v
		}
	}
	vars, err := readEnvFile(envFile)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w (script output %q)", err, out)
	}
	return &Env{Kubeconfig: vars["KUBECONFIG"], Vars: vars, run: run, owned: true}, nil
}

// Stop stops a testenv this process started; a joined one is left running.
func (e *Env) Stop() {
	if e == nil || !e.owned {
		return
	}
	root, err := Root()
	if err != nil {
		return
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "testenv.sh"), "stop")
	cmd.Env = append(os.Environ(), "TESTENV_RUN="+e.run)
	_ = cmd.Run()
	_ = os.RemoveAll(e.run)
}

// RESTConfig is the client configuration of one context.
func (e *Env) RESTConfig(kctx string) (*rest.Config, error) {
	raw, err := clientcmd.LoadFromFile(e.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, kctx, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}

// Client is a clientset for one context, for a test's own checks (not the
// code under test).
func (e *Env) Client(t testing.TB, kctx string) k8s.Interface {
	t.Helper()
	cfg, err := e.RESTConfig(kctx)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	c, err := k8s.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return c
}

// EnsureClusterDNS gives a test cluster the kube-dns Service real clusters
// have (in kube-system, ClusterIP 10.0.0.10 when free), so that the
// containment probe plans its cluster-resolver attempts. It returns the
// Service's ClusterIP.
func EnsureClusterDNS(ctx context.Context, c k8s.Interface) (string, error) {
	if svc, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{}); err == nil {
		return svc.Spec.ClusterIP, nil
	}
	for _, ip := range []string{"10.0.0.10", ""} {
		svc, err := c.CoreV1().Services("kube-system").Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Labels: map[string]string{"k8s-app": "kube-dns"}},
			Spec: corev1.ServiceSpec{
				Selector:  map[string]string{"k8s-app": "kube-dns"},
				ClusterIP: ip,
				Ports: []corev1.ServicePort{
					{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)},
					{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt32(53)},
				},
			},
		}, metav1.CreateOptions{})
		switch {
		case err == nil:
			return svc.Spec.ClusterIP, nil
		case apierrors.IsAlreadyExists(err):
			return EnsureClusterDNS(ctx, c)
		case apierrors.IsInvalid(err) && ip != "":
			continue // 10.0.0.10 is taken on a long-lived testenv: any address will do
		default:
			return "", err
		}
	}
	return "", nil
}

func readEnvFile(path string) (map[string]string, error) {
	if path == "" {
		return nil, errors.New("no env file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	if vars["KUBECONFIG"] == "" {
		return nil, fmt.Errorf("%s names no KUBECONFIG", path)
	}
	return vars, sc.Err()
}
