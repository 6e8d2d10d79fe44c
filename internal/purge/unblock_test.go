package purge

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

func webhookConfig(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	cfg := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "guard", Annotations: map[string]string{"team": "a"}},
		Webhooks: []admissionregv1.ValidatingWebhook{
			{Name: "a.guard", NamespaceSelector: &metav1.LabelSelector{}},
			{Name: "b.guard", NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"x"}}}}},
		},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func jsonOf(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	data, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The exclusion adds exactly one expression per webhook and an annotation;
// undoing it gives back the configuration as it was, and keeps another
// namespace's exclusion.
func TestExcludeAndIncludeNamespace(t *testing.T) {
	original := webhookConfig(t)
	cfg := original.DeepCopy()
	for range 2 { // twice: the second changes nothing
		if err := excludeNamespace(cfg, "demo"); err != nil {
			t.Fatal(err)
		}
	}
	for _, wh := range []string{"a.guard", "b.guard"} {
		if !strings.Contains(jsonOf(t, cfg), `{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["demo"]}`) {
			t.Fatalf("%s not excluded: %s", wh, jsonOf(t, cfg))
		}
	}
	if strings.Count(jsonOf(t, cfg), `"values":["demo"]`) != 2 {
		t.Errorf("excluded twice: %s", jsonOf(t, cfg))
	}
	if err := excludeNamespace(cfg, "other"); err != nil {
		t.Fatal(err)
	}
	if err := includeNamespace(cfg, "demo"); err != nil {
		t.Fatal(err)
	}
	if err := includeNamespace(cfg, "other"); err != nil {
		t.Fatal(err)
	}
	if got, want := jsonOf(t, cfg), jsonOf(t, original); got != want {
		t.Errorf("after undoing:\n%s\nwant:\n%s", got, want)
	}
	if err := includeNamespace(cfg, "demo"); !errors.Is(err, errUnchanged) {
		t.Errorf("undoing what is not there: %v", err)
	}
}

// Pods past their grace period are deleted with grace period 0, saved
// first; their node's state is reported, and a Ready node warned of.
func TestForceDeletePods(t *testing.T) {
	c := kubetest.New()
	c.AddNamespace("ns", time.Minute)
	for name, node := range map[string]string{"lost": "gone", "running": "alive", "young": "gone"} {
		pod := kubetest.Pod("ns", name, node, 30)
		deleted := metav1.NewTime(time.Now().Add(-time.Minute))
		if name == "young" {
			deleted = metav1.NewTime(time.Now().Add(time.Minute)) // grace ends in a minute
		}
		pod.SetDeletionTimestamp(&deleted)
		pod.SetDeletionGracePeriodSeconds(ptr.To(int64(30)))
		c.Add(kubetest.Pods, pod)
	}
	alive := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "alive"}, Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
	p := &Purger{Clients: c.Clients(alive), Opts: Options{DryRun: DryRunNone, BackupDir: t.TempDir(), Timeout: 2 * time.Second,
		Escalations: Asked{diagnose.FlagForceDeletePods: nil}}}
	r, err := p.Run(context.Background(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, f := range r.RowsOf(RowForcedPod) {
		states[f.Name] = string(forcedOf(f).NodeState) + "/" + string(f.Status)
	}
	if states["lost"] != "Missing/Done" || states["running"] != "Ready/Done" || states["young"] != "" {
		t.Fatalf("forced pods %v", states)
	}
	if !slices.ContainsFunc(r.Warnings, func(w Warning) bool { return w.Kind == WarnNodeReady && w.Name == "running" && w.Node == "alive" }) {
		t.Errorf("no warning for the Ready node: %v", r.Warnings)
	}
	if got := c.Names(kubetest.Pods, "ns"); len(got) != 1 || got[0] != "young" {
		t.Errorf("pods left %v, want the one still within its grace period", got)
	}
	if r.BackedUp < 2 {
		t.Errorf("backed up %d objects", r.BackedUp)
	}
}

// A plan lists the pods it would force-delete, with when, and the
// namespace finishing; a webhook predicted to refuse the DELETE shows.
func TestPlanForceDeletePods(t *testing.T) {
	c := kubetest.New()
	c.AddNamespace("ns", time.Minute)
	c.Add(kubetest.Pods, kubetest.Pod("ns", "p", "gone", 45))
	r, err := (&Purger{Clients: c.Clients(), Opts: Options{Escalations: Asked{diagnose.FlagForceDeletePods: nil}}}).Run(context.Background(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	if forced := r.RowsOf(RowForcedPod); len(forced) != 1 || forcedOf(forced[0]).AfterSeconds != 45 || forcedOf(forced[0]).NodeState != NodeMissing || !r.Finalize.Would {
		t.Fatalf("forced %+v, finalize %+v", forced, r.Finalize)
	}
	c.Fail = func(verb string, gvr schema.GroupVersionResource, ns, name string) error {
		if verb == "delete" && gvr == kubetest.Pods {
			return apierrors.NewInternalError(errors.New(`failed calling webhook "deny.pods"`))
		}
		return nil
	}
	r, _ = (&Purger{Clients: c.Clients(), Opts: Options{DryRun: DryRunServer, Escalations: Asked{diagnose.FlagForceDeletePods: nil}}}).Run(context.Background(), "ns")
	if forced := r.RowsOf(RowForcedPod); len(forced) != 1 || forced[0].Status != RowFailed || r.Finalize.Would {
		t.Fatalf("server dry run: forced %+v, finalize %+v", forced, r.Finalize)
	}
}
