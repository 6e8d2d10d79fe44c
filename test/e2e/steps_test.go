package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// A fail-closed webhook whose Service lived in another namespace, itself
// being deleted: that namespace accepts no new content, so restoring the
// Service there is no step. explain says so and gives the steps that
// work; the bypass, as given, lets the namespace go.
func TestNoRestoreInATerminatingNamespace(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	hooks := name + "-hooks"
	// The webhook's namespace, terminating, held by an object of its own.
	plugintest.Must(t, cluster.CreateNamespace(ctx, hooks))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, hooks, "held", nil, "example.com/hold"))
	t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), hooks, "held") })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, hooks))
	waitCondition(t, hooks, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)

	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "settings", nil))
	plugintest.Must(t, cluster.FailClosedWebhook(ctx, name, name, hooks, "guard", configMaps))
	t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), name) })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)

	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	b := e.blocker(t, diagnose.BlockerWebhook, "service "+hooks+"/guard: not found; its namespace is being deleted, and accepts no new content: it cannot be restored there",
		"its service's namespace is being deleted and accepts no new content, so the service cannot come back there; for this namespace only, for the run: kubectl ns-doctor purge "+name+" --bypass-webhook="+name)
	for _, a := range b.Actions {
		if a.Kind == diagnose.ActionRestoreService || strings.HasPrefix(a.Step, "restore ") {
			t.Errorf("a step that cannot work: %+v", a)
		}
	}
	if !hasAction(b, diagnose.Action{Kind: diagnose.ActionDeleteWebhookConfiguration, Target: "validatingwebhookconfiguration/" + name}) {
		t.Errorf("next steps %+v", b.Actions)
	}

	// The step, as given, gets the namespace deleted.
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--bypass-webhook="+name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=60s")
	if r.Code != 0 {
		t.Errorf("purge --bypass-webhook: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// Pods held on lost nodes: one whose kubelet stopped reporting
// (Ready=Unknown since ten minutes), one whose Node object is gone.
// explain names each node and its state, and the force-delete first;
// that step, as given, lets the namespace go.
func TestPodsOnLostNodes(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	lost, gone := name+"-lost", name+"-gone"
	node, err := cluster.Kube.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: lost}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() { _ = cluster.Kube.CoreV1().Nodes().Delete(context.Background(), lost, metav1.DeleteOptions{}) })
	since := metav1.NewTime(time.Now().Add(-10 * time.Minute).Truncate(time.Second))
	node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown, Reason: "NodeStatusUnknown",
		Message: "Kubelet stopped posting node status.", LastTransitionTime: since, LastHeartbeatTime: since}}
	_, err = cluster.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	plugintest.Must(t, err)

	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	for pod, on := range map[string]string{"on-lost": lost, "on-gone": gone} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: name}, Spec: v1.PodSpec{NodeName: on, TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []v1.Container{{Name: "main", Image: "registry.invalid/none", Env: []v1.EnvVar{{Name: "TOKEN", Value: "never-printed"}}}}}}
		_, err := cluster.Kube.CoreV1().Pods(name).Create(ctx, p, metav1.CreateOptions{})
		plugintest.Must(t, err)
	}
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)
	pod, err := cluster.Kube.CoreV1().Pods(name).Get(ctx, "on-lost", metav1.GetOptions{})
	plugintest.Must(t, err)
	time.Sleep(time.Until(pod.DeletionTimestamp.Time) + time.Second)

	e := explain(t, cp.Kubeconfig, name)
	b := e.blocker(t, diagnose.BlockerPods, "pod/on-lost: grace period ended", "node "+gone+", "+lost+" will never confirm their end: kubectl ns-doctor purge "+name+" --force-delete-pods")
	evidence := strings.Join(b.Evidence, "\n")
	for _, want := range []string{"its node " + lost + " is NotReady since " + since.UTC().Format(time.RFC3339) + ": its kubelet does not report",
		"its node " + gone + " is gone"} {
		if !strings.Contains(evidence, want) {
			t.Errorf("evidence lacks %q:\n%s", want, evidence)
		}
	}
	if strings.Contains(e.human, "never-printed") {
		t.Error("a pod's env value reached the report")
	}

	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force-delete-pods", "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=60s")
	if r.Code != 0 {
		t.Errorf("purge --force-delete-pods: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// ruledOut are the steps of a report's blockers that its own evidence
// rules out: a Service restored, or what it selects made ready, where the
// evidence says it cannot be restored there.
func ruledOut(e explained) []string {
	var out []string
	for _, b := range e.report.Blockers {
		for _, line := range b.Evidence {
			svc, said, ok := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(line, "conversion "), "service "), ": ")
			if !ok || !strings.Contains(said, "it cannot be restored there") {
				continue
			}
			ns, _, _ := strings.Cut(svc, "/")
			for _, a := range b.Actions {
				if a.Kind == diagnose.ActionRestoreService && a.Target == svc || a.Kind == diagnose.ActionMakeBackendReady && a.Value == ns {
					out = append(out, fmt.Sprintf("%s: step %+v while the evidence says %q", b.Kind, a, line))
				}
			}
			if strings.Contains(b.NextStep, "restore service "+svc) || strings.Contains(b.NextStep, "restore the service "+svc) {
				out = append(out, fmt.Sprintf("%s: next step %q while the evidence says %q", b.Kind, b.NextStep, line))
			}
		}
	}
	return out
}

// A CRD whose conversion webhook's Service lived in the very namespace
// being deleted: the controller deleted the Service, and a terminating
// namespace accepts no new one, so restoring it is no step, whatever the
// evidence beside it said before. The step is the CRD's conversion
// strategy, and no step of the report is one its evidence rules out.
func TestNoStepTheEvidenceRulesOut(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("s%d.example.com", time.Now().UnixNano()%100000)
	crd, v1GVR, err := cluster.BrokenConversionCRD(ctx, group, "Conv", "convs", name, "converter")
	t.Cleanup(func() {
		_ = cluster.Dynamic.Resource(crdsGVR).Delete(context.Background(), crd, metav1.DeleteOptions{})
	})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	_, err = cluster.Kube.CoreV1().Services(name).Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "converter"},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Port: 443}}}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateCustomResource(ctx, v1GVR, "Conv", name, "old"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	// The pass that deletes the Service fails on the custom resource
	// while the Service is still there (its message then says what
	// dialling it met); the pass after says it is not found: that is the
	// state explain reads.
	waitConditionSaying(t, name, v1.NamespaceDeletionContentFailure, v1.ConditionTrue, `service "converter" not found`)

	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	b := e.blocker(t, diagnose.BlockerConversionWebhook, "conversion service "+name+"/converter: not found; its namespace is being deleted, and accepts no new content: it cannot be restored there",
		"its conversion service's namespace is being deleted and accepts no new content, so the service cannot come back there; set spec.conversion.strategy=None: kubectl patch crd "+crd)
	if len(b.Actions) != 1 || b.Actions[0].Kind != diagnose.ActionPatchCRDConversion {
		t.Errorf("steps %+v", b.Actions)
	}
	for _, c := range ruledOut(e) {
		t.Error(c)
	}
}

// The counter-example: the conversion Service's namespace is Active, so
// the Service can come back: restoring it is the first step, and the
// evidence says nothing against it.
func TestRestoreOfferedWhereTheServiceCanComeBack(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	home := name + "-conv"
	plugintest.Must(t, cluster.CreateNamespace(ctx, home))
	t.Cleanup(func() { _ = cluster.DeleteNamespace(context.Background(), home) })
	group := fmt.Sprintf("s%d.example.com", time.Now().UnixNano()%100000)
	crd, v1GVR, err := cluster.BrokenConversionCRD(ctx, group, "Conv", "convs", home, "converter")
	t.Cleanup(func() {
		_ = cluster.Dynamic.Resource(crdsGVR).Delete(context.Background(), crd, metav1.DeleteOptions{})
	})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, v1GVR, "Conv", name, "old"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)

	e := explain(t, cp.Kubeconfig, name)
	b := e.blocker(t, diagnose.BlockerConversionWebhook, "conversion service "+home+"/converter: not found", "restore service "+home+"/converter")
	if strings.Contains(strings.Join(b.Evidence, "\n"), "cannot be restored") || b.Actions[0].Kind != diagnose.ActionRestoreService {
		t.Errorf("blocker %+v", b)
	}
	if c := ruledOut(e); len(c) != 0 {
		t.Errorf("ruled out: %v", c)
	}
}
