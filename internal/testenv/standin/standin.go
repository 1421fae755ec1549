// Package standin plays the kubelet's (and, where no controller runs, the
// deployment controller's) part against a test API server that has neither
// a kubelet nor a scheduler: it marks the Kubernetes runtime's containment
// probe pods finished with a chosen result, written exactly as the real
// probe writes it (AFPROBE lines in the container's termination message),
// marks the runtime's other pods running and ready, and, when no deployment
// controller acts on a Deployment, marks it available through the status
// subresource.
//
// It is test equipment: tests that rely on it say so in their names
// (…_KubeletStandIn_…), and the command internal/testenv/kubelet runs it
// against a cluster for reproducing terraform apply/plan/destroy by hand.
package standin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	kube "github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
)

// ProbeResult is what the stand-in makes a probe report.
type ProbeResult string

// The results.
const (
	// Contained: every escape attempt blocked, the gateway reached.
	Contained ProbeResult = "contained"
	// Escaped: the first public attempt connected, everything else as
	// Contained.
	Escaped ProbeResult = "escaped"
	// ControlFailed: everything blocked, the gateway included.
	ControlFailed ProbeResult = "control-failed"
	// Silent: the probe ends without a single line.
	Silent ProbeResult = "silent"
	// Pending: the probe pod is left pending, as with no node to run it.
	Pending ProbeResult = "pending"
)

// Results lists the valid results.
var Results = []ProbeResult{Contained, Escaped, ControlFailed, Silent, Pending}

// NeverReady in an image reference makes the stand-in leave the pod pending,
// as a node does with an image it cannot pull: a rollout that never finishes.
const NeverReady = "never-ready"

// HostIP is the node address the stand-in reports (TEST-NET-1, never real).
const HostIP = "192.0.2.10"

// Options tune the stand-in.
type Options struct {
	Probe ProbeResult
	// Interval between passes (default 100ms).
	Interval time.Duration
	// DeploymentGrace is how long a Deployment may go unobserved by a
	// deployment controller before the stand-in writes its status itself
	// (default 2s).
	DeploymentGrace time.Duration
	// NamespacePrefix limits the stand-in to namespaces whose name starts
	// with it (default "af-"), so that test binaries sharing a cluster each
	// answer only their own probes.
	NamespacePrefix string
	// Logf reports what the stand-in does (optional).
	Logf func(format string, args ...any)
}

// StandIn is one running stand-in.
type StandIn struct {
	c    k8s.Interface
	opts Options

	mu      sync.Mutex
	seen    map[string]time.Time // Deployment uid/generation → first seen unobserved
	nextIP  int
	probes  int
	started int
}

// New builds a stand-in for one cluster.
func New(c k8s.Interface, opts Options) (*StandIn, error) {
	if opts.Probe == "" {
		opts.Probe = Contained
	}
	valid := false
	for _, r := range Results {
		valid = valid || r == opts.Probe
	}
	if !valid {
		return nil, fmt.Errorf("probe result %q is not one of %v", opts.Probe, Results)
	}
	if opts.Interval == 0 {
		opts.Interval = 100 * time.Millisecond
	}
	if opts.DeploymentGrace == 0 {
		opts.DeploymentGrace = 2 * time.Second
	}
	if opts.NamespacePrefix == "" {
		opts.NamespacePrefix = "af-"
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return &StandIn{c: c, opts: opts, seen: map[string]time.Time{}, nextIP: 10}, nil
}

// SetProbe changes the result later probes report.
func (s *StandIn) SetProbe(r ProbeResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Probe = r
}

// Probes is how many probe pods the stand-in has finished.
func (s *StandIn) Probes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.probes
}

// Run makes passes until ctx is done. Errors of single passes are logged and
// retried (objects come and go under it).
func (s *StandIn) Run(ctx context.Context) {
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	for {
		if err := s.Pass(ctx); err != nil && ctx.Err() == nil {
			s.opts.Logf("pass: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

var selector = kube.LabelManagedBy + "=" + kube.ManagedBy

// Pass looks at every pod and Deployment of the runtime once.
func (s *StandIn) Pass(ctx context.Context) error {
	pods, err := s.c.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	var errs []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if !strings.HasPrefix(p.Namespace, s.opts.NamespacePrefix) || p.DeletionTimestamp != nil || (p.Status.Phase != "" && p.Status.Phase != corev1.PodPending) {
			continue
		}
		if p.Labels[kube.LabelProbe] == "true" {
			err = s.finishProbe(ctx, p)
		} else if neverReady(p) {
			continue
		} else {
			err = s.startPod(ctx, p)
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, err.Error())
		}
	}
	deps, err := s.c.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	for i := range deps.Items {
		if !strings.HasPrefix(deps.Items[i].Namespace, s.opts.NamespacePrefix) {
			continue
		}
		if err := s.deployment(ctx, &deps.Items[i]); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// Attempts is what a probe following plan reports under result r.
func Attempts(plan []probe.Attempt, r ProbeResult, hostIP string) []probe.Attempt {
	if r == Silent || r == Pending {
		return nil
	}
	out := make([]probe.Attempt, 0, len(plan))
	escaped := false
	for _, a := range plan {
		a.Target = strings.ReplaceAll(a.Target, kube.HostIPTarget, hostIP)
		a.Elapsed = 2 * time.Second
		switch {
		case a.Category == probe.Control && r == ControlFailed:
			a.Outcome, a.Detail, a.Elapsed = probe.Failed, "r1 timed out (kubelet stand-in)", 2*time.Second
		case a.Category == probe.Control:
			a.Outcome, a.Detail, a.Elapsed = probe.Reached, "r1 gateway answered (kubelet stand-in)", 3*time.Millisecond
		case r == Escaped && !escaped && a.Category == probe.Public:
			escaped = true
			a.Outcome, a.Detail, a.Elapsed = probe.Escape, "r1 connected (kubelet stand-in)", 40*time.Millisecond
		default:
			a.Outcome, a.Detail = probe.Blocked, "r1 timed out (kubelet stand-in)"
		}
		out = append(out, a)
	}
	return out
}

func (s *StandIn) podIP() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextIP++
	return fmt.Sprintf("10.244.%d.%d", s.nextIP/250, s.nextIP%250+1)
}

func (s *StandIn) finishProbe(ctx context.Context, p *corev1.Pod) error {
	s.mu.Lock()
	r := s.opts.Probe
	s.mu.Unlock()
	if r == Pending {
		return nil
	}
	plan, err := kube.ProbePlan(p)
	if err != nil {
		return err
	}
	var lines []string
	for _, a := range Attempts(plan, r, HostIP) {
		lines = append(lines, probe.Line(a))
	}
	msg := strings.Join(lines, "\n")
	now := metav1.Now()
	st := p.Status
	st.Phase = corev1.PodSucceeded
	st.HostIP, st.HostIPs = HostIP, []corev1.HostIP{{IP: HostIP}}
	ip := s.podIP()
	st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	st.StartTime = &now
	st.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: now},
	}
	st.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "standin://" + c.Image, ContainerID: "standin://" + string(p.UID),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", Message: msg, StartedAt: now, FinishedAt: now,
			}},
		})
	}
	p.Status = st
	if _, err := s.c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return err
	}
	s.mu.Lock()
	s.probes++
	s.mu.Unlock()
	s.opts.Logf("probe %s/%s finished: %s (%d attempts)", p.Namespace, p.Name, r, len(lines))
	return nil
}

func (s *StandIn) startPod(ctx context.Context, p *corev1.Pod) error {
	now := metav1.Now()
	st := p.Status
	st.Phase = corev1.PodRunning
	st.HostIP, st.HostIPs = HostIP, []corev1.HostIP{{IP: HostIP}}
	ip := s.podIP()
	st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	st.StartTime = &now
	st.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	st.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "standin://" + c.Image, ContainerID: "standin://" + string(p.UID) + "/" + c.Name,
			Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	p.Status = st
	if _, err := s.c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return err
	}
	s.mu.Lock()
	s.started++
	s.mu.Unlock()
	s.opts.Logf("pod %s/%s running and ready", p.Namespace, p.Name)
	return nil
}

// deployment writes an available status for a Deployment no deployment
// controller has observed within the grace period (an API server without
// kube-controller-manager).
func (s *StandIn) deployment(ctx context.Context, d *appsv1.Deployment) error {
	if d.DeletionTimestamp != nil || d.Status.ObservedGeneration >= d.Generation {
		return nil
	}
	key := fmt.Sprintf("%s/%d", d.UID, d.Generation)
	s.mu.Lock()
	first, ok := s.seen[key]
	if !ok {
		s.seen[key] = time.Now()
	}
	s.mu.Unlock()
	if !ok || time.Since(first) < s.opts.DeploymentGrace {
		return nil
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	now := metav1.Now()
	patch := fmt.Sprintf(`{"status":{"observedGeneration":%d,"replicas":%d,"updatedReplicas":%d,"readyReplicas":%d,"availableReplicas":%d,"conditions":[`+
		`{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"kubelet stand-in","lastUpdateTime":%q,"lastTransitionTime":%q},`+
		`{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","message":"kubelet stand-in","lastUpdateTime":%q,"lastTransitionTime":%q}]}}`,
		d.Generation, want, want, want, want, now.Format(time.RFC3339), now.Format(time.RFC3339), now.Format(time.RFC3339), now.Format(time.RFC3339))
	if _, err := s.c.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	s.opts.Logf("deployment %s/%s marked available (no deployment controller observed it)", d.Namespace, d.Name)
	return nil
}

func neverReady(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if strings.Contains(c.Image, NeverReady) {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
