package guard

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestGuardWarns: in warn mode, the real kube-apiserver asks the guard
// over TLS at each `kubectl delete namespace`, and kubectl prints one
// "Warning: ns-doctor: ..." line per predicted blocker, naming it and what
// to do first: a finalizer whose owner is not running, a finalizer whose
// owner ns-doctor does not know, a fail-closed webhook whose backend is
// down, pods on a node that is gone, an unavailable APIService. A
// namespace that will go cleanly gets none. Every deletion goes on (warn
// allows); the guard counts its answers and times its predictions.
func TestGuardWarns(t *testing.T) {
	ctx := context.Background()
	base := plugintest.UniqueName(t)
	clean, fin, unknown, hook, pods, api := base+"-clean", base+"-fin", base+"-unknown", base+"-hook", base+"-pods", base+"-api"
	must(t, cluster.CreateNamespace(ctx, clean))
	must(t, cluster.CreateConfigMap(ctx, clean, "plain", nil))
	heldNamespace(t, fin, ownerless)
	unknownFinalizer := "example.com/gone-" + base[len(base)-5:]
	heldNamespace(t, unknown, unknownFinalizer)
	// A fail-closed webhook with no backend, catching what the namespace
	// controller sends for the ConfigMaps of hook.
	must(t, cluster.CreateNamespace(ctx, hook))
	must(t, cluster.CreateConfigMap(ctx, hook, "caught", nil))
	webhook := "fail-closed-" + base[len(base)-5:]
	must(t, cluster.FailClosedWebhook(ctx, webhook, hook, "default", "missing-"+base[len(base)-5:], configMaps))
	t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), webhook) })
	// A pod on a node that is gone, already past its grace period.
	must(t, cluster.CreateNamespace(ctx, pods))
	must(t, cluster.CreateBoundPod(ctx, pods, "on-lost-node", 1))
	must(t, cluster.Kube.CoreV1().Pods(pods).Delete(ctx, "on-lost-node", metav1.DeleteOptions{}))
	t.Cleanup(func() {
		_ = cluster.Kube.CoreV1().Pods(pods).Delete(context.Background(), "on-lost-node", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	must(t, cluster.CreateNamespace(ctx, api))

	g := startGuard(t, cp.Kubeconfig, "--guard=warn")
	// Every prediction below but those after the APIService appears (a
	// change that makes the kept reads stale) reads the content from the
	// guard's informers: their words are the ones read afresh gave.
	g.waitWarm(t)
	fromInformers := g.metric(t, "nsdoctor_guard_prediction_duration_seconds_count", `reads="informers"`)
	before := apiserverMetric(t, "apiserver_admission_webhook_admission_duration_seconds_count", `name="guard.ns-doctor.io"`)

	r, took := deleteNamespace(t, cp.Kubeconfig, clean)
	if r.Code != 0 || len(guardWarnings(r.Stderr)) > 0 || strings.Contains(r.Stderr, "Warning") {
		t.Errorf("a namespace that goes cleanly: exit %d, stderr %q; want no warning", r.Code, r.Stderr)
	}
	t.Logf("kubectl delete namespace %s (%s):\n%s%s", clean, took.Round(time.Millisecond), r.Stdout, r.Stderr)
	gone(t, clean, time.Minute)

	time.Sleep(1500 * time.Millisecond) // the pod's grace period ends
	for _, c := range []struct {
		ns   string
		want []string
	}{
		{fin, []string{"would stick (FinalizersRemaining): 1 configmaps (held) wait for " + ownerless + "; its owner External Secrets Operator is not running (no deployment external-secrets/external-secrets): start it first"}},
		{unknown, []string{"would stick (FinalizersRemaining): 1 configmaps (held) wait for " + unknownFinalizer + "; its owner is not one ns-doctor knows, nor one the cluster names: make sure it runs"}},
		{hook, []string{"would stick (BlockingWebhook): webhook deny." + webhook + ".example.com fails closed and its service default/missing-", "kubectl delete validatingwebhookconfiguration " + webhook}},
		{pods, []string{"would stick (PodsNotTerminating): 1 pod(s) (on-lost-node) already outlived their grace period", "kubectl get pods -n " + pods + " -o wide"}},
	} {
		r, took := deleteNamespace(t, cp.Kubeconfig, c.ns)
		t.Logf("kubectl delete namespace %s (%s):\n%s%s", c.ns, took.Round(time.Millisecond), r.Stdout, r.Stderr)
		checkWarned(t, r, c.ns, c.want...)
	}
	if n := g.metric(t, "nsdoctor_guard_prediction_duration_seconds_count", `reads="informers"`) - fromInformers; n < 5 {
		t.Errorf("%v of the 5 predictions so far read from the guard's informers, want all", n)
	}

	// An unavailable APIService holds every namespace's deletion: it is
	// there only for this one.
	group := "guard-" + base[len(base)-5:] + ".example.com"
	apiservice, err := cluster.BrokenAPIService(ctx, group, "v1", "default", "missing-"+base[len(base)-5:])
	must(t, err)
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), apiservice) })
	r, took = deleteNamespace(t, cp.Kubeconfig, api)
	t.Logf("kubectl delete namespace %s (%s):\n%s%s", api, took.Round(time.Millisecond), r.Stdout, r.Stderr)
	checkWarned(t, r, api, fmt.Sprintf("would stick (APIServiceUnavailable): API %s/v1 is down (apiservice %s, service default/missing-%s: not found)", group, apiservice, base[len(base)-5:]),
		"kubectl delete apiservice "+apiservice)
	must(t, cluster.DeleteAPIService(ctx, apiservice))

	// Every answer counted, every prediction timed; kube-apiserver called
	// the guard for each (its own histogram of the webhook).
	warned := g.metric(t, "nsdoctor_guard_admissions_total", `mode="warn"`, `resource="namespaces"`, `outcome="warned"`)
	allowed := g.metric(t, "nsdoctor_guard_admissions_total", `mode="warn"`, `resource="namespaces"`, `outcome="allowed"`)
	failed := g.metric(t, "nsdoctor_guard_admissions_total", `outcome="failed_open"`)
	predictions := g.metric(t, "nsdoctor_guard_prediction_duration_seconds_count")
	if warned != 5 || allowed < 2 || failed != 0 || predictions != warned+allowed {
		t.Errorf("nsdoctor_guard_admissions_total: warned %v allowed %v failed_open %v, predictions timed %v; want 5 warned, the clean one and the probes allowed, none failed, each timed", warned, allowed, failed, predictions)
	}
	if called := apiserverMetric(t, "apiserver_admission_webhook_admission_duration_seconds_count", `name="guard.ns-doctor.io"`) - before; called < 6 {
		t.Errorf("kube-apiserver called the guard %v times for 6 deletions", called)
	}
	// The rest of the watch: healthy, its work queue's metrics exported.
	if code, body := g.get(t, "/healthz"); code != 200 || body != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if g.metric(t, "workqueue_adds_total", `name="namespaces"`) == 0 {
		t.Error("no workqueue_adds_total{name=\"namespaces\"}: the work queue's metrics are not on the watch's registry")
	}
	for _, line := range []string{"guard (warn): DELETE namespace " + fin + " by admin: warned", "guard (warn): DELETE namespace " + clean + " by admin: allowed"} {
		if !strings.Contains(g.Stderr.String(), line) {
			t.Errorf("the guard's log lacks %q", line)
		}
	}
}

// checkWarned: kubectl deleted the namespace (warn allows it) and printed
// the guard's warnings, each with the words wanted.
func checkWarned(t *testing.T, r plugintest.Result, ns string, want ...string) {
	t.Helper()
	warnings := guardWarnings(r.Stderr)
	if r.Code != 0 || !strings.Contains(r.Stdout, fmt.Sprintf("namespace %q deleted", ns)) {
		t.Errorf("kubectl delete namespace %s: exit %d\n%s%s", ns, r.Code, r.Stdout, r.Stderr)
	}
	all := strings.Join(warnings, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("kubectl delete namespace %s: no warning with %q in\n%s", ns, w, r.Stderr)
		}
	}
	for _, w := range warnings {
		if !strings.HasPrefix(w, "Warning: ns-doctor: namespace "+ns+" would stick (") && !strings.HasPrefix(w, "Warning: ns-doctor: allowed in deny mode anyway: ") {
			t.Errorf("warning %q does not name the namespace and the blocker", w)
		}
	}
}
