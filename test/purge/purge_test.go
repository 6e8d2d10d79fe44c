package purge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// mixedNamespace holds built-in objects, custom resources, pods and objects
// with finalizers, and is then deleted (no controller will act on it).
func mixedNamespace(t *testing.T) (string, schema.GroupVersionResource) {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "example.com", "Widget", "widgets")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "plain", nil))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", map[string]string{"app": "x"}, "example.com/hold"))
	_, err = cluster.Kube.CoreV1().Secrets(name).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		StringData: map[string]string{"password": "pw"}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Widget", name, "w1", "example.com/cleanup"))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Widget", name, "w2"))
	// Its pods are never scheduled (a scheduler of that name runs
	// nowhere): a pod no node runs goes at once when deleted, and nothing
	// writes its status meanwhile, so a dry run's "nothing changed" is
	// ns-doctor's alone.
	unscheduled := v1.PodSpec{SchedulerName: "unscheduled.example.com", Containers: []v1.Container{{Name: "c", Image: "registry.invalid/none"}}}
	_, err = cluster.Kube.CoreV1().Pods(name).Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "held-pod", Finalizers: []string{"example.com/pod-hold"}},
		Spec:       unscheduled,
	}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	_, err = cluster.Kube.CoreV1().Pods(name).Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plain-pod"},
		Spec:       unscheduled,
	}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	return name, gvr
}

func TestForcePurgeWithoutControllerAndRestoreBackup(t *testing.T) {
	ctx := context.Background()
	name, _ := mixedNamespace(t)
	backupDir := filepath.Join(t.TempDir(), "backup")
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force", "--yes", "--remove-finalizers=example.com/*",
		"--backup-dir", backupDir, "--timeout=2m", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("purge: exit %d\nstderr:\n%s\nstdout:\n%s", r.Code, r.Stderr, r.Stdout)
	}
	var rep printer.PurgeDocument
	plugintest.Must(t, json.Unmarshal([]byte(r.Stdout), &rep))
	if rep.Outcome != purge.OutcomeGone || !rep.Finalize.Done {
		t.Fatalf("outcome %s, finalize %+v, message %q", rep.Outcome, rep.Finalize, rep.Message)
	}
	if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there after purge reported it gone: %v", err)
	}
	stripped := map[string]bool{}
	for _, s := range rep.RowsOf(purge.RowStrip) {
		if s.Status == purge.RowDone {
			stripped[s.Resource+"/"+s.Name] = true
		}
	}
	for _, want := range []string{"pods/held-pod", "configmaps/held", "widgets.example.com/w1"} {
		if !stripped[want] {
			t.Errorf("strip of %s not reported: %+v", want, rep.Rows)
		}
	}
	if !strings.Contains(r.Stderr, "pass 1:") {
		t.Errorf("no progress on stderr:\n%s", r.Stderr)
	}

	// Everything deleted or stripped is in the backup, and re-applies.
	saved, err := backup.Saved(backupDir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"configmaps.core.json/held", "configmaps.core.json/plain", "pods.core.json/held-pod", "pods.core.json/plain-pod",
		"secrets.core.json/creds", "widgets.example.com.json/w1", "widgets.example.com.json/w2"}
	if strings.Join(saved, " ") != strings.Join(want, " ") {
		t.Fatalf("backup holds %v, want %v", saved, want)
	}
	restored := plugintest.UniqueName(t) + "-restored"
	plugintest.Must(t, cluster.CreateNamespace(ctx, restored))
	a := plugin.Kubectl(t, cp.Kubeconfig, "apply", "-n", restored, "-f", filepath.Join(backupDir, "objects"))
	if a.Code != 0 {
		t.Fatalf("re-applying the backup: %s\n%s", a.Stdout, a.Stderr)
	}
	cm, err := cluster.Kube.CoreV1().ConfigMaps(restored).Get(ctx, "held", metav1.GetOptions{})
	if err != nil || cm.Data["secret-looking"] != "value-held" || len(cm.Finalizers) != 1 {
		t.Fatalf("restored configmap: %v %+v", err, cm)
	}
	sec, err := cluster.Kube.CoreV1().Secrets(restored).Get(ctx, "creds", metav1.GetOptions{})
	if err != nil || string(sec.Data["password"]) != "pw" {
		t.Fatalf("restored secret: %v", err)
	}
	if _, err := os.Stat(filepath.Join(backupDir, "namespace.yaml")); err != nil {
		t.Errorf("namespace not saved: %v", err)
	}
}

// resourceVersions records every object's resourceVersion in a namespace,
// and the namespace's own.
func resourceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	mc, err := metadata.NewForConfig(cp.Config)
	plugintest.Must(t, err)
	out := map[string]string{}
	n, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	plugintest.Must(t, err)
	out["namespace"] = n.ResourceVersion + fmt.Sprint(n.Spec.Finalizers)
	for _, gvr := range []schema.GroupVersionResource{configMaps, {Version: "v1", Resource: "secrets"}, {Version: "v1", Resource: "pods"},
		{Group: "example.com", Version: "v1", Resource: "widgets"}} {
		list, err := mc.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		plugintest.Must(t, err)
		for _, item := range list.Items {
			out[gvr.Resource+"/"+item.Name] = item.ResourceVersion
		}
	}
	return out
}

func TestDryRunsChangeNothing(t *testing.T) {
	name, _ := mixedNamespace(t)
	before := resourceVersions(t, name)
	want := 8
	if cluster.Settle {
		want++ // kube-root-ca.crt, which the root CA publisher made
	}
	if len(before) != want {
		t.Fatalf("fixture has %d objects: %v", len(before), before)
	}
	for _, mode := range []string{"client", "server"} {
		r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--dry-run="+mode, "--remove-all-finalizers", "--remove-namespace-finalizers", "-o", "json")
		if r.Code != 0 {
			t.Fatalf("--dry-run=%s: exit %d\n%s\n%s", mode, r.Code, r.Stderr, r.Stdout)
		}
		var rep printer.PurgeDocument
		plugintest.Must(t, json.Unmarshal([]byte(r.Stdout), &rep))
		if rep.Outcome != purge.OutcomePlanned || len(rep.ChangeDetails) != 0 || len(rep.ErrorDetails) != 0 {
			t.Errorf("--dry-run=%s: outcome %s, changes %v, errors %v", mode, rep.Outcome, rep.Changes, rep.Errors)
		}
		// Pods go first: the first pass reaches only the held pod, whose
		// strip lets the second reach the rest, as --force would; a third
		// finds nothing and finalizes.
		var stripped []string
		for _, s := range rep.RowsOf(purge.RowStrip) {
			stripped = append(stripped, s.Resource+"/"+s.Name)
		}
		want := []string{"pods/held-pod", "configmaps/held", "widgets.example.com/w1"}
		if strings.Join(stripped, " ") != strings.Join(want, " ") || !rep.Finalize.Would || rep.Passes != 3 || rep.Steps[0].Resource != "pods" {
			t.Errorf("--dry-run=%s: strips %v (want %v), passes %d, finalize %+v", mode, stripped, want, rep.Passes, rep.Finalize)
		}
		after := resourceVersions(t, name)
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("--dry-run=%s changed the cluster:\nbefore %v\nafter  %v", mode, before, after)
		}
	}
	h := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name)
	for _, s := range []string{"PLAN", "nothing was changed", "deletecollection", "pods", "Finalize:"} {
		if !strings.Contains(h.Stdout, s) {
			t.Errorf("human plan lacks %q:\n%s", s, h.Stdout)
		}
	}
}

func TestFailClosedWebhookIsReported(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
	plugintest.Must(t, cluster.FailClosedWebhook(ctx, name, name, "webhook-system", "guard", configMaps))
	t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), name) })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	before := resourceVersions(t, name)

	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--dry-run=server", "--remove-finalizers=example.com/hold", "-o", "json")
	var rep printer.PurgeDocument
	plugintest.Must(t, json.Unmarshal([]byte(r.Stdout), &rep))
	if !slices.ContainsFunc(rep.ErrorDetails, func(e printer.ErrorDetail) bool {
		return e.Kind == apierror.WebhookFailed && e.APIError.Webhook == "deny."+name+".example.com"
	}) {
		t.Errorf("server dry run does not report the webhook: %+v", rep.ErrorDetails)
	}
	if fmt.Sprint(resourceVersions(t, name)) != fmt.Sprint(before) {
		t.Fatal("server dry run changed the cluster")
	}

	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force", "--yes", "--remove-finalizers=example.com/hold",
		"--backup-dir", t.TempDir(), "--timeout=5m")
	if r.Code != 5 {
		t.Fatalf("force against the webhook: exit %d, want 5 (incomplete)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	// The webhook's backend is gone: waiting cannot help, the run stops at
	// once (not at --timeout) and names the flag that gets past it.
	if !strings.Contains(r.Stdout, "INCOMPLETE") || !strings.Contains(r.Stdout, "failed calling webhook") ||
		!strings.Contains(r.Stderr, "waiting will not help") || !strings.Contains(r.Stderr, "--bypass-webhook="+name) {
		t.Errorf("force run does not say what failed:\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

func TestPermissionsCheckedBeforeAnyChange(t *testing.T) {
	ctx := context.Background()
	name, _ := mixedNamespace(t)
	before := resourceVersions(t, name)
	user := "reader-" + name
	plugintest.Must(t, cluster.GrantClusterRole(ctx, user, []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}}))
	_, kubeconfig, err := cp.MintUser(user)
	plugintest.Must(t, err)

	r := plugin.Kubectl(t, kubeconfig, "ns-doctor", "purge", name, "--force", "--yes", "--remove-all-finalizers", "--backup-dir", t.TempDir(), "-o", "json")
	if r.Code != 1 || !strings.Contains(r.Stderr, "permission(s): deletecollection ") || !strings.Contains(r.Stderr, "more (the report lists all); nothing was changed") {
		t.Fatalf("exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var rep printer.PurgeDocument
	plugintest.Must(t, json.Unmarshal([]byte(r.Stdout), &rep))
	missing := strings.Join(rep.MissingPermissions, "\n")
	for _, want := range []string{"update namespaces/finalize", "deletecollection configmaps in namespace " + name,
		"deletecollection widgets.example.com in namespace " + name, "patch pods in namespace " + name} {
		if !strings.Contains(missing, want) {
			t.Errorf("missing permissions do not list %q:\n%s", want, missing)
		}
	}
	if strings.Contains(missing, "list configmaps") {
		t.Errorf("a granted permission is listed as missing:\n%s", missing)
	}
	if fmt.Sprint(resourceVersions(t, name)) != fmt.Sprint(before) {
		t.Fatal("purge changed the cluster before checking its permissions")
	}
}

func TestActiveNamespaceRefused(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force", "--yes")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--delete-namespace") {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force", "--yes", "--delete-namespace", "--backup-dir", t.TempDir(), "--timeout=1m")
	if r.Code != 0 {
		t.Fatalf("--delete-namespace: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there: %v", err)
	}
	_ = time.Second
}
