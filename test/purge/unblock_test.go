package purge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

var validatingWebhooks = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}

// A pod on a lost node (its kubelet dead: NotReady, tainted unreachable by
// the node lifecycle controller) never finishes terminating; ordered, it
// holds back everything else. Without the escalation purge stops at
// --timeout having deleted nothing else; with it, the namespace goes and
// the backup holds the pod.
func TestForceDeletePodsOnALostNode(t *testing.T) {
	forceDeletePods(t, cluster.LostNode, purge.NodeNotReady)
}

// A pod whose node was deleted: the pod garbage collector would
// force-delete it 40 s after the node went, which is why a deleted node's
// pods rarely hold a namespace; quiet here so that purge meets it.
func TestForceDeletePodsOnADeletedNode(t *testing.T) {
	ctx := context.Background()
	node := strings.ToLower(plugintest.UniqueName(t))
	_, err := cp.StartNode(ctx, node)
	plugintest.Must(t, err)
	plugintest.Quiet(t, cp, "pod-garbage-collector-controller")
	plugintest.Must(t, cp.DeleteNode(ctx, node))
	forceDeletePods(t, node, purge.NodeMissing)
}

func forceDeletePods(t *testing.T, node string, state purge.NodeState) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-lost-node", Namespace: name}, Spec: v1.PodSpec{NodeName: node,
		TerminationGracePeriodSeconds: ptr.To(int64(1)), Containers: []v1.Container{{Name: "main", Image: "registry.invalid/app:v1"}}}}
	_, err := cluster.CreatePod(ctx, pod)
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "plain", nil))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))

	plan, r := purgeJSON(t, name, "--force-delete-pods")
	if forced := plan.RowsOf(purge.RowForcedPod); r.Code != 0 || len(forced) != 1 || forced[0].Extra.(purge.ForcedPod).Node != node || forced[0].Extra.(purge.ForcedPod).NodeState != state || !plan.Finalize.Would {
		t.Fatalf("plan: exit %d, forced pods %+v (want node %s %s), finalize %+v", r.Code, forced, node, state, plan.Finalize)
	}

	rep, r := purgeJSON(t, name, "--force", "--yes", "--timeout=10s", "--backup-dir", t.TempDir())
	if r.Code != 5 || rep.Outcome != purge.OutcomeRemaining || len(rep.RowsOf(purge.RowForcedPod)) != 0 {
		t.Fatalf("without the escalation: exit %d, outcome %s, rows %+v", r.Code, rep.Outcome, rep.Rows)
	}
	if _, err := cluster.Kube.CoreV1().ConfigMaps(name).Get(ctx, "plain", metav1.GetOptions{}); err != nil {
		t.Fatalf("pods go first: the configmap must still be there: %v", err)
	}

	dir := t.TempDir()
	rep, r = purgeJSON(t, name, "--force", "--yes", "--force-delete-pods", "--timeout=60s", "--backup-dir", dir)
	if forced := rep.RowsOf(purge.RowForcedPod); r.Code != 0 || rep.Outcome != purge.OutcomeGone || len(forced) != 1 || forced[0].Status != purge.RowDone {
		t.Fatalf("with --force-delete-pods: exit %d, outcome %s, forced %+v\n%s", r.Code, rep.Outcome, forced, r.Stderr)
	}
	pods, err := backup.Objects(dir, deletion.PodsGVR)
	if err != nil || len(pods) != 1 || pods[0].GetName() != "on-lost-node" {
		t.Fatalf("the pod is not in the backup: %v, %d pods", err, len(pods))
	}
	// Saved to re-apply: the scheduler places it anew (the restore table's
	// "pod" row), its spec otherwise whole.
	containers, _, _ := unstructured.NestedSlice(pods[0].Object, "spec", "containers")
	if _, bound, _ := unstructured.NestedString(pods[0].Object, "spec", "nodeName"); bound || len(containers) != 1 ||
		containers[0].(map[string]any)["image"] != "registry.invalid/app:v1" {
		t.Errorf("the pod's backup: %v", pods[0].Object["spec"])
	}
}

// webhookStuck is a namespace holding a terminating gizmo with a finalizer, behind a
// fail-closed webhook (its Service missing) that catches DELETE and UPDATE
// of gizmos in every namespace labelled like it; another labelled
// namespace holds a gizmo too. It returns the namespace, the other one,
// the configuration's name and the gizmos' resource.
func webhookStuck(t *testing.T, extra func(ns string)) (string, string, string, schema.GroupVersionResource) {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	other, cfg := name+"-other", name+"-guard"
	label := map[string]string{"guard-test": name}
	gvr, err := cluster.EnsureCRD(ctx, "bypass.example.com", "Gizmo", "gizmos")
	plugintest.Must(t, err)
	for _, ns := range []string{name, other} {
		plugintest.Must(t, cluster.CreateNamespaceWithLabels(ctx, ns, label))
		plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Gizmo", ns, "g1", "example.com/cleanup"))
	}
	// The gizmo was already being deleted, waiting for its operator, when
	// the webhook's backend went away.
	plugintest.Must(t, cluster.Dynamic.Resource(gvr).Namespace(name).Delete(ctx, "g1", metav1.DeleteOptions{}))
	if extra != nil {
		extra(name)
	}
	plugintest.Must(t, cluster.FailClosedWebhookSelecting(ctx, cfg, "webhook-system", "guard", &metav1.LabelSelector{MatchLabels: label}, gvr))
	t.Cleanup(func() {
		_ = cluster.DeleteWebhook(context.Background(), cfg)
		for _, ns := range []string{name, other} {
			_, _ = cluster.Dynamic.Resource(gvr).Namespace(ns).Patch(context.Background(), "g1", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			_ = cluster.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		}
	})
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	return name, other, cfg, gvr
}

// comparable is a configuration without what the API server rewrites on
// every change (resourceVersion, generation, managed fields).
func comparable(t *testing.T, obj map[string]any) string {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	for _, f := range []string{"resourceVersion", "generation", "managedFields", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	data, err := json.Marshal(u.Object)
	plugintest.Must(t, err)
	return string(data)
}

func liveConfig(t *testing.T, name string) map[string]any {
	t.Helper()
	cfg, err := cluster.Dynamic.Resource(validatingWebhooks).Get(context.Background(), name, metav1.GetOptions{})
	plugintest.Must(t, err)
	return cfg.Object
}

// The webhook refuses purge's DELETE and its finalizer-removal PATCH: both
// plans name it, --remove-finalizers alone fails on that object, and
// --bypass-webhook excludes only this namespace for the run: another
// namespace's gizmo stays protected, and the configuration is afterwards
// what it was.
func TestBypassWebhookForTheRunOnly(t *testing.T) {
	ctx := context.Background()
	// A held ConfigMap no escalation strips keeps the run going until
	// --timeout, so the bypass can be seen in place.
	name, other, cfg, gvr := webhookStuck(t, func(ns string) {
		plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "held", nil, "other.io/hold"))
	})
	original := comparable(t, liveConfig(t, cfg))
	webhook := "deny." + cfg + ".example.com"

	for _, mode := range []string{"client", "server"} {
		rep, r := purgeJSON(t, name, "--dry-run="+mode, "--remove-finalizers=example.com/*")
		errs := strings.Join(rep.Errors, "\n")
		if r.Code != 0 || !strings.Contains(errs, "deletecollection gizmos.bypass.example.com: ") || !strings.Contains(errs, "strip gizmos.bypass.example.com/g1: ") ||
			strings.Count(errs, webhook) < 2 {
			t.Errorf("--dry-run=%s does not name the webhook for the delete and the strip:\n%s", mode, errs)
		}
	}

	rep, r := purgeJSON(t, name, "--force", "--yes", "--remove-finalizers=example.com/*", "--timeout=8s", "--backup-dir", t.TempDir())
	failed := false
	for _, s := range rep.RowsOf(purge.RowStrip) {
		failed = failed || (s.Name == "g1" && s.Status == purge.RowFailed && s.Refusal != nil && s.Refusal.Webhook == webhook)
	}
	if r.Code != 5 || !failed {
		t.Fatalf("--remove-finalizers alone: exit %d, rows %+v", r.Code, rep.Rows)
	}

	dir := t.TempDir()
	cmd, stdout, stderr := startPurge(t, name, "--force", "--yes", "--remove-finalizers=example.com/*", "--bypass-webhook="+cfg, "--timeout=20s", "--backup-dir", dir, "-o", "json")
	waitBypassed(t, cfg, name, true)
	err := cluster.Dynamic.Resource(gvr).Namespace(other).Delete(ctx, "g1", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), webhook) {
		t.Errorf("another namespace's gizmo is not protected during the run: %v", err)
	}
	if code := exitCode(t, cmd); code != 5 {
		t.Fatalf("exit %d, want 5 (the held ConfigMap stays)\n%s\n%s", code, stdout, stderr)
	}
	if _, err := cluster.Dynamic.Resource(gvr).Namespace(name).Get(ctx, "g1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the bypass did not let purge delete the gizmo: %v", err)
	}
	if got := comparable(t, liveConfig(t, cfg)); got != original {
		t.Errorf("configuration after the run:\n%s\nbefore:\n%s", got, original)
	}
	saved, err := os.ReadFile(filepath.Join(dir, "cluster", "validatingwebhookconfigurations.admissionregistration.k8s.io_"+cfg+".yaml"))
	plugintest.Must(t, err)
	var savedObj map[string]any
	plugintest.Must(t, yaml.Unmarshal(saved, &savedObj))
	if got := comparable(t, savedObj); got != original {
		t.Errorf("saved copy:\n%s\nlive before:\n%s", got, original)
	}

	var bypassed printer.PurgeDocument
	plugintest.Must(t, json.Unmarshal(stdout.Bytes(), &bypassed))
	if rows := bypassed.RowsOf(purge.RowBypass); len(rows) != 1 || rows[0].Status != purge.RowDone || rows[0].Extra.(purge.Bypass).Catches[0] != "DELETE gizmos.bypass.example.com" {
		t.Errorf("bypassed %+v", rows)
	}

	// What is left the webhook does not catch: the bypass is refused as
	// pointless, and the run finishes without it.
	plugintest.Must(t, cluster.ReleaseConfigMap(ctx, name, "held"))
	rep, r = purgeJSON(t, name, "--force", "--yes", "--timeout=60s", "--backup-dir", t.TempDir())
	if r.Code != 0 || rep.Outcome != purge.OutcomeGone {
		t.Fatalf("exit %d, outcome %s\n%s", r.Code, rep.Outcome, r.Stderr)
	}
}

// Interrupted, purge restores the configuration; killed, the next run
// restores it before anything else.
func TestBypassSurvivesInterruptAndKill(t *testing.T) {
	ctx := context.Background()
	name, _, cfg, _ := webhookStuck(t, func(ns string) {
		plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "held", nil, "other.io/hold"))
	})
	original := comparable(t, liveConfig(t, cfg))
	// No strip: the gizmo the webhook guards stays for every run (a strip
	// would end it within milliseconds of the first pass, before the
	// signal, and leave the next run's bypass nothing to catch).
	args := []string{name, "--force", "--yes", "--bypass-webhook=" + cfg, "--timeout=60s", "--backup-dir", t.TempDir()}

	cmd, stdout, stderr := startPurge(t, args...)
	waitBypassed(t, cfg, name, true)
	plugintest.Must(t, cmd.Process.Signal(syscall.SIGINT))
	if code := exitCode(t, cmd); code != 5 || comparable(t, liveConfig(t, cfg)) != original {
		t.Fatalf("SIGINT: exit %d, configuration restored: %v\n%s\n%s", code, comparable(t, liveConfig(t, cfg)) == original, stdout, stderr)
	}

	cmd, _, _ = startPurge(t, args...)
	waitBypassed(t, cfg, name, true)
	plugintest.Must(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = exitCode(t, cmd)
	if comparable(t, liveConfig(t, cfg)) == original {
		t.Fatal("a killed run restored the configuration: the test did not kill it in time")
	}
	rep, r := purgeJSON(t, name, "--force", "--yes", "--timeout=5s", "--backup-dir", t.TempDir())
	leftover := false
	for _, b := range rep.RowsOf(purge.RowBypass) {
		leftover = leftover || (b.Name == cfg && b.Why == purge.BypassLeftover)
	}
	if !leftover || comparable(t, liveConfig(t, cfg)) != original {
		t.Fatalf("the next run did not restore the leftover first: exit %d, rows %+v\n%s", r.Code, rep.Rows, r.Stderr)
	}
}

// A configuration that does not exist, or that catches nothing purge
// sends in the namespace, is a usage error before anything is sent.
func TestBypassBadInput(t *testing.T) {
	ctx := context.Background()
	name, _, _, _ := webhookStuck(t, nil)
	unrelated := name + "-unrelated"
	plugintest.Must(t, cluster.FailClosedWebhook(ctx, unrelated, "some-other-namespace", "webhook-system", "guard", configMaps))
	t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), unrelated) })
	for cfg, want := range map[string]string{
		"no-such-webhook-config": "no validating or mutating webhook configuration of that name",
		unrelated:                fmt.Sprintf("catches nothing purge sends in namespace %s", name),
	} {
		before := resourceVersionsOf(t, name)
		r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force", "--yes", "--bypass-webhook="+cfg, "--backup-dir", t.TempDir())
		if r.Code != 2 || !strings.Contains(r.Stderr, want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("--bypass-webhook=%s: exit %d, stderr %q", cfg, r.Code, r.Stderr)
		}
		if !reflect.DeepEqual(resourceVersionsOf(t, name), before) {
			t.Errorf("--bypass-webhook=%s changed the namespace", cfg)
		}
	}
}

// waitBypassed waits until the configuration does (or no longer does)
// exclude the namespace.
func waitBypassed(t *testing.T, cfg, ns string, want bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		obj := liveConfig(t, cfg)
		_, has := (&unstructured.Unstructured{Object: obj}).GetAnnotations()["bypass.ns-doctor.dev/"+ns]
		return has == want, nil
	})
	if err != nil {
		t.Fatalf("configuration %s never excluded namespace %s", cfg, ns)
	}
}

// resourceVersionsOf is the namespace's and its gizmos' resourceVersions.
func resourceVersionsOf(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	n, err := cluster.Kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	plugintest.Must(t, err)
	out["namespace"] = n.ResourceVersion
	list, err := cluster.Dynamic.Resource(schema.GroupVersionResource{Group: "bypass.example.com", Version: "v1", Resource: "gizmos"}).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, item := range list.Items {
		out[item.GetName()] = item.GetResourceVersion()
	}
	return out
}
