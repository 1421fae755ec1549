// Command kubelet is the kubelet stand-in for the test API server started by
// scripts/testenv.sh, which runs no kubelet and no scheduler. It watches one
// cluster and plays the node's part for what the Kubernetes runtime creates:
// containment probe pods finish with the chosen result (AFPROBE lines in the
// termination message, as the real probe writes them), other pods become
// running and ready, and Deployments no controller observes are marked
// available.
//
//	source "$(scripts/testenv.sh env | sed -n 's/^export KUBECONFIG=//p')"  # or: eval "$(scripts/testenv.sh env)"
//	go run ./internal/testenv/kubelet --context eu-prod --probe-result contained
//
// --probe-result: contained (default), escaped (the first public attempt
// connects: apply refuses with AF-RUN-043), control-failed (AF-RUN-044),
// silent (AF-RUN-045), pending (the probe never runs: AF-K8S-006 after the
// probe timeout).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/antifailure/terraform-provider-antifailure/internal/testenv/standin"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default $KUBECONFIG)")
	kctx := flag.String("context", "", "kubeconfig context of the cluster to stand in for (required)")
	result := flag.String("probe-result", string(standin.Contained), fmt.Sprintf("what containment probes report: %v", standin.Results))
	interval := flag.Duration("interval", 200*time.Millisecond, "time between passes")
	prefix := flag.String("namespace-prefix", "af-", "only namespaces whose name starts with this")
	flag.Parse()
	if *kctx == "" || *kubeconfig == "" {
		flag.Usage()
		log.Fatal("kubelet stand-in: --context and --kubeconfig (or KUBECONFIG) are required; it never guesses a cluster")
	}
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(*kubeconfig)}
	raw, err := rules.Load()
	if err != nil {
		log.Fatalf("kubelet stand-in: %v", err)
	}
	if _, ok := raw.Contexts[*kctx]; !ok {
		log.Fatalf("kubelet stand-in: context %q is not in %s", *kctx, *kubeconfig)
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, *kctx, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		log.Fatalf("kubelet stand-in: %v", err)
	}
	c, err := k8s.NewForConfig(cfg)
	if err != nil {
		log.Fatalf("kubelet stand-in: %v", err)
	}
	s, err := standin.New(c, standin.Options{
		Probe:           standin.ProbeResult(*result),
		Interval:        *interval,
		NamespacePrefix: *prefix,
		Logf:            func(f string, a ...any) { log.Printf(f, a...) },
	})
	if err != nil {
		log.Fatalf("kubelet stand-in: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Printf("kubelet stand-in on context %s (%s): probes report %q; Ctrl-C to stop", *kctx, cfg.Host, *result)
	s.Run(ctx)
}
