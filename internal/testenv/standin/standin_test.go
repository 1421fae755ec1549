package standin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	kube "github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv/standin"
)

// TestStandIn_NoControllerManager runs the stand-in against an API server
// with no kube-controller-manager (one cluster, KCM=0): a probe pod finishes
// with the chosen result in its termination message, a pod starts ready, and
// a Deployment nobody observes is marked available through the status
// subresource.
func TestStandIn_NoControllerManager(t *testing.T) {
	t.Setenv("AF_TESTENV", "") // always a private testenv: this one has no controllers
	t.Setenv("KCM", "0")
	t.Setenv("CLUSTERS", "1")
	te, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer te.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := te.Client(t, testenv.EU)
	s, err := standin.New(c, standin.Options{Probe: standin.Escaped, DeploymentGrace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go s.Run(ctx)

	labels := map[string]string{kube.LabelManagedBy: kube.ManagedBy}
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "af-x-y", Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	plan, _ := json.Marshal([]probe.Attempt{
		{Category: probe.Public, Method: "tcp", Target: "1.1.1.1:443"},
		{Category: probe.Host, Method: "tcp", Target: kube.HostIPTarget + ":10250"},
		{Category: probe.Control, Method: "http", Target: "10.0.0.9:3128"},
	})
	probeLabels := map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelProbe: "true"}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "busybox"}}}
	if _, err := c.CoreV1().Pods("af-x-y").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: probeLabels, Annotations: map[string]string{kube.AnnotationProbePlan: string(plan)}},
		Spec:       spec,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("af-x-y").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: labels}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	if _, err := c.AppsV1().Deployments("af-x-y").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for {
		p, err1 := c.CoreV1().Pods("af-x-y").Get(ctx, "probe", metav1.GetOptions{})
		a, err2 := c.CoreV1().Pods("af-x-y").Get(ctx, "app", metav1.GetOptions{})
		d, err3 := c.AppsV1().Deployments("af-x-y").Get(ctx, "web", metav1.GetOptions{})
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatal(err1, err2, err3)
		}
		if p.Status.Phase == corev1.PodSucceeded && a.Status.Phase == corev1.PodRunning && d.Status.AvailableReplicas == 1 {
			msg := p.Status.ContainerStatuses[0].State.Terminated.Message
			got, err := probe.ReadLines(strings.NewReader(msg))
			if err != nil || len(got) != 3 {
				t.Fatalf("termination message %q: %v", msg, err)
			}
			if got[0].Outcome != probe.Escape || got[1].Outcome != probe.Blocked || got[1].Target != standin.HostIP+":10250" || got[2].Outcome != probe.Reached {
				t.Errorf("attempts %v", got)
			}
			if r := probe.Judge(got, time.Second); r.Verdict != probe.NotContained {
				t.Errorf("verdict %s", r.Verdict)
			}
			if d.Status.ObservedGeneration != d.Generation {
				t.Errorf("observedGeneration %d, generation %d", d.Status.ObservedGeneration, d.Generation)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not finished: probe %s, app %s, deployment %+v", p.Status.Phase, a.Status.Phase, d.Status)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
