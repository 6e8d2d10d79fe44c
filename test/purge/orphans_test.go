package purge_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// A namespace finalized by hand with content in it leaves that content in
// storage: explain --orphans finds exactly it (not a live namespace's),
// purge --orphans removes it (saved first), a namespace re-created with
// the same name then starts empty, and one re-created before that is told
// its content is older than itself.
func TestOrphansOfAForcedFinalize(t *testing.T) {
	ctx := context.Background()
	former, live, revived := plugintest.UniqueName(t), plugintest.UniqueName(t)+"-live", plugintest.UniqueName(t)+"-again"
	gvr, err := cluster.EnsureCRD(ctx, "orphans.example.com", "Widget", "widgets")
	plugintest.Must(t, err)
	for _, ns := range []string{former, live, revived} {
		plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
		plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "plain", nil))
	}
	plugintest.Must(t, cluster.CreateConfigMap(ctx, former, "held", nil, "example.com/keep"))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Widget", former, "w1", "orphans.example.com/cleanup"))
	plugintest.Must(t, cluster.ForceFinalize(ctx, former))
	plugintest.Must(t, cluster.ForceFinalize(ctx, revived))
	time.Sleep(1100 * time.Millisecond) // creation times count whole seconds
	plugintest.Must(t, cluster.CreateNamespace(ctx, revived))

	// Every namespace: the former one's leftovers (what the test made, and
	// what controllers made in it: kube-root-ca.crt and the default
	// ServiceAccount), none of the live one's.
	made := 0
	if cluster.Settle {
		made = 1
	}
	want := 3 + 2*made
	all := explainOrphans(t, 3)
	got := map[string]diagnose.FormerNamespace{}
	for _, f := range all.Namespaces {
		got[f.Name] = f
	}
	if f := got[former]; f.Objects != want || !hasContent(f, "", "configmaps", 2+made) || !hasContent(f, "orphans.example.com", "widgets", 1) {
		t.Errorf("leftovers of %s: %+v", former, f)
	}
	for _, ns := range []string{live, revived} {
		if _, ok := got[ns]; ok {
			t.Errorf("%s exists, yet is listed as a former namespace", ns)
		}
	}
	if one := explainOrphans(t, 3, former); len(one.Namespaces) != 1 || one.Namespaces[0].Objects != want {
		t.Errorf("explain --orphans %s: %+v", former, one.Namespaces)
	}
	if r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "--orphans", live); r.Code != 2 || !strings.Contains(r.Stderr, "exists") {
		t.Errorf("explain --orphans of a live namespace: exit %d\n%s", r.Code, r.Stderr)
	}

	// The re-created namespace is told where its old content comes from.
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", revived, "-o", "json")
	var report printer.DiagnosisDocument
	if err := json.Unmarshal([]byte(r.Stdout), &report); err != nil {
		t.Fatalf("explain %s: %v\n%s\n%s", revived, err, r.Stdout, r.Stderr)
	}
	if len(report.Notes) != 1 || report.Notes[0].Kind != diagnose.NoteOlderContent || !strings.Contains(strings.Join(report.Notes[0].Evidence, " "), "configmaps/plain") {
		t.Errorf("notes of %s: %+v", revived, report.Notes)
	}

	// The plan changes nothing; --force removes the leftovers, saved first.
	plan := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", "--orphans", former, "--remove-finalizers=example.com/*,orphans.example.com/*")
	if plan.Code != 0 || !strings.Contains(plan.Stdout, "PLAN") || !strings.Contains(plan.Stdout, "Leftovers: none would remain") {
		t.Fatalf("plan: exit %d\n%s\n%s", plan.Code, plan.Stdout, plan.Stderr)
	}
	if n := explainOrphans(t, 3, former); len(n.Namespaces) != 1 {
		t.Fatalf("the plan changed something: %+v", n.Namespaces)
	}
	dir := t.TempDir()
	done := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", "--orphans", former, "--force", "--yes",
		"--remove-finalizers=example.com/*,orphans.example.com/*", "--backup-dir", dir, "--timeout=1m", "-o", "json")
	var rep printer.PurgeDocument
	if err := json.Unmarshal([]byte(done.Stdout), &rep); err != nil || done.Code != 0 || rep.Outcome != purge.OutcomeGone || !rep.Orphans {
		t.Fatalf("purge --orphans: exit %d, %v\n%s\n%s", done.Code, err, done.Stdout, done.Stderr)
	}
	if rep.BackedUp != want {
		t.Errorf("%d objects saved, want %d", rep.BackedUp, want)
	}
	// 1.37 admits the PATCH of an object whose namespace is gone: no
	// namespace is re-created for it (test/versions proves 1.36's way).
	if len(rep.RowsOf(purge.RowStrip)) != 2 || hasChange(rep, purge.ChangeCreatedNamespace) {
		t.Errorf("rows %+v, changes %q: the finalizers are removed in place", rep.Rows, rep.Changes)
	}
	if left := explainOrphans(t, 0, former); len(left.Namespaces) != 0 {
		t.Errorf("leftovers after purge --orphans: %+v", left.Namespaces)
	}
	if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, former, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("purge --orphans created the namespace, or failed to read it: %v", err)
	}
	// Re-applying the backup starts from a plain namespace.
	data, err := os.ReadFile(filepath.Join(dir, "namespace.yaml"))
	plugintest.Must(t, err)
	var saved map[string]any
	plugintest.Must(t, yaml.Unmarshal(data, &saved))
	spec, _ := saved["spec"].(map[string]any)
	if meta, _ := saved["metadata"].(map[string]any); meta["name"] != former || meta["deletionTimestamp"] != nil || spec["finalizers"] != nil {
		t.Errorf("namespace.yaml is not a plain namespace:\n%s", data)
	}
	// A namespace of that name now starts empty.
	plugintest.Must(t, cluster.CreateNamespace(ctx, former))
	cms, err := cluster.Kube.CoreV1().ConfigMaps(former).List(ctx, metav1.ListOptions{})
	plugintest.Must(t, err)
	for _, cm := range cms.Items {
		if cm.Name == "plain" || cm.Name == "held" {
			t.Errorf("configmap %s came back with the new namespace", cm.Name)
		}
	}
}

// Leftovers without finalizers go without a namespace: only deletions,
// which the API server accepts in a namespace that does not exist.
func TestPurgeOrphansWithoutFinalizersCreatesNoNamespace(t *testing.T) {
	ctx := context.Background()
	former := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, former))
	for _, name := range []string{"a", "b"} {
		plugintest.Must(t, cluster.CreateConfigMap(ctx, former, name, nil))
	}
	plugintest.Must(t, cluster.ForceFinalize(ctx, former))
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", "--orphans", former, "--force", "--yes", "--backup-dir", t.TempDir(), "-o", "json")
	var rep printer.PurgeDocument
	// The two made here, and kube-root-ca.crt and default on a bed whose
	// controllers made them.
	want := 2
	if cluster.Settle {
		want = 4
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 || rep.Outcome != purge.OutcomeGone || rep.BackedUp != want {
		t.Fatalf("exit %d, %v, %d saved (want %d)\n%s\n%s", r.Code, err, rep.BackedUp, want, r.Stdout, r.Stderr)
	}
	if hasChange(rep, purge.ChangeCreatedNamespace) {
		t.Errorf("a namespace was created without need: %q", rep.Changes)
	}
	if left := explainOrphans(t, 0, former); len(left.Namespaces) != 0 {
		t.Errorf("leftovers: %+v", left.Namespaces)
	}
}

func TestPurgeOrphansRefusesALiveNamespace(t *testing.T) {
	ns := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(context.Background(), ns))
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", "--orphans", ns, "--force", "--yes")
	if r.Code != 2 || !strings.Contains(r.Stderr, "purge it without --orphans") {
		t.Errorf("exit %d\n%s", r.Code, r.Stderr)
	}
}

func explainOrphans(t *testing.T, wantCode int, only ...string) printer.OrphansDocument {
	t.Helper()
	args := append([]string{"ns-doctor", "explain", "--orphans", "-o", "json"}, only...)
	r := plugin.Kubectl(t, cp.Kubeconfig, args...)
	var out printer.OrphansDocument
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || r.Code != wantCode || out.Kind != printer.OrphansKind {
		t.Fatalf("explain --orphans %v: exit %d (want %d), %v\n%s\n%s", only, r.Code, wantCode, err, r.Stdout, r.Stderr)
	}
	return out
}

func hasContent(f diagnose.FormerNamespace, group, resource string, count int) bool {
	for _, c := range f.Content {
		if c.Group == group && c.Resource == resource {
			return c.Count == count
		}
	}
	return false
}

// hasChange tells whether the report made a change of that kind.
func hasChange(rep printer.PurgeDocument, kind purge.ChangeKind) bool {
	return slices.ContainsFunc(rep.ChangeDetails, func(c printer.ChangeDetail) bool { return c.Kind == kind })
}

// hasWarning tells whether the report warned of that kind about the object.
func hasWarning(rep printer.PurgeDocument, kind purge.WarningKind, resource, name string) bool {
	return slices.ContainsFunc(rep.WarningDetails, func(w printer.WarningDetail) bool {
		return w.Kind == kind && w.Resource == resource && w.Name == name
	})
}
