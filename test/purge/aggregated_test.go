package purge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

func startAggregated(t *testing.T) *scenario.AggregatedAPI {
	return plugintest.AggregatedAPI(t, cluster)
}

func purgeJSON(t *testing.T, args ...string) (printer.PurgeDocument, plugintest.Result) {
	t.Helper()
	r := plugin.Kubectl(t, cp.Kubeconfig, append(append([]string{"ns-doctor", "purge"}, args...), "-o", "json")...)
	var rep printer.PurgeDocument
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("purge -o json: %v\nstdout:\n%s\nstderr:\n%s", err, r.Stdout, r.Stderr)
	}
	return rep, r
}

// An aggregated API whose backend answers 503 in the namespace (it went
// down after discovery): purge reports that resource, still deletes the
// rest, does not finalize, and a re-run once the API is back finishes.
func TestUnavailableAggregatedResourceReportedWhileRestProceeds(t *testing.T) {
	ctx := context.Background()
	agg := startAggregated(t)
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "plain", nil))
	plugintest.Must(t, agg.Create(ctx, name, "g1"))
	plugintest.Must(t, agg.Create(ctx, name, "g2"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	agg.Fail(name, "gadget backend is down")

	dir := t.TempDir()
	rep, r := purgeJSON(t, name, "--force", "--yes", "--backup-dir", filepath.Join(dir, "1"), "--timeout=8s")
	if r.Code != 5 || rep.Outcome != purge.OutcomeRemaining || rep.Finalize.Would {
		t.Fatalf("purge with a 503 resource: exit %d, outcome %s, finalize %+v\n%s", r.Code, rep.Outcome, rep.Finalize, r.Stderr)
	}
	// With --yes no prompt named the cluster: the first line on stderr does.
	if first, _, _ := strings.Cut(r.Stderr, "\n"); first != `purge --force --yes: writing to context "admin", cluster "ns-doctor-test" (1 namespace(s))` {
		t.Errorf("stderr does not start with where purge writes: %q", first)
	}
	gadgets := deletion.ResourceName(agg.GVR)
	if !strings.Contains(strings.Join(rep.Errors, "\n"), "gadget backend is down") {
		t.Errorf("the 503 is not reported: errors %q", rep.Errors)
	}
	if !stepFailed(rep, gadgets) || !stepSucceeded(rep, "configmaps") {
		t.Errorf("steps: want gadgets failed and configmaps deleted: %+v", rep.Steps)
	}
	if _, err := cluster.Kube.CoreV1().ConfigMaps(name).Get(ctx, "plain", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the rest did not proceed: configmap plain: %v", err)
	}
	if n := len(agg.Stored(name)); n != 2 {
		t.Errorf("the backend holds %d gadgets, want 2 untouched", n)
	}

	agg.Recover(name)
	rep, r = purgeJSON(t, name, "--force", "--yes", "--backup-dir", filepath.Join(dir, "2"), "--timeout=60s")
	if r.Code != 0 || rep.Outcome != purge.OutcomeGone {
		t.Fatalf("re-run after recovery: exit %d, outcome %s: %s\n%s", r.Code, rep.Outcome, rep.Message, r.Stderr)
	}
	if left := agg.Stored(name); len(left) != 0 {
		t.Errorf("gadgets left in the backend: %v", left)
	}
	saved, err := backup.Saved(filepath.Join(dir, "2"))
	for _, g := range []string{"g1", "g2"} {
		if !slices.Contains(saved, backup.FileName(agg.GVR)+"/"+g) {
			t.Errorf("gadget %s not backed up before deletion: %v (%v)", g, saved, err)
		}
	}
}

// operator runs act every 100 ms until the test ends, like a controller
// that is still alive while its namespace is purged.
func operator(t *testing.T, act func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			act(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// A controller that re-creates what purge deletes (its aggregated API
// admits creates in a terminating namespace, as NamespaceLifecycle would
// not): purge reports the object and stops after a few passes instead of
// deleting it until --timeout.
func TestRecreatedContentReportedNotChased(t *testing.T) {
	ctx := context.Background()
	agg := startAggregated(t)
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
	plugintest.Must(t, agg.Create(ctx, name, "g1"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	operator(t, func(ctx context.Context) {
		_, err := cluster.Dynamic.Resource(agg.GVR).Namespace(name).Get(ctx, "g1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_ = agg.Create(ctx, name, "g1")
		}
	})

	start := time.Now()
	rep, r := purgeJSON(t, name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=3m")
	if r.Code != 5 || rep.Outcome != purge.OutcomeRemaining || !strings.Contains(rep.Message, "kept coming back") {
		t.Fatalf("exit %d, outcome %s, message %q\n%s", r.Code, rep.Outcome, rep.Message, r.Stderr)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Minute {
		t.Errorf("purge chased the object for %s", elapsed)
	}
	gadgets := deletion.ResourceName(agg.GVR)
	if len(rep.Recreated) != 1 || rep.Recreated[0].Resource != gadgets || rep.Recreated[0].Name != "g1" || rep.Recreated[0].Times < 3 {
		t.Errorf("recreated: %+v", rep.Recreated)
	}
	if !hasWarning(rep, purge.WarnRecreated, gadgets, "g1") {
		t.Errorf("warnings: %q", rep.Warnings)
	}
}

// A controller that puts back the finalizer purge removed (its aggregated
// API allows adding finalizers to an object being deleted, as the API
// server would not): purge removes it once, then reports the object and
// leaves it alone.
func TestFinalizerPutBackIsNotFought(t *testing.T) {
	ctx := context.Background()
	agg := startAggregated(t)
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, agg.Create(ctx, name, "g1", "example.com/operator", "other.example.org/keep"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	operator(t, func(ctx context.Context) {
		obj, err := cluster.Dynamic.Resource(agg.GVR).Namespace(name).Get(ctx, "g1", metav1.GetOptions{})
		if err == nil && !slices.Contains(obj.GetFinalizers(), "example.com/operator") {
			patch := fmt.Sprintf(`{"metadata":{"finalizers":["example.com/operator",%q]}}`, "other.example.org/keep")
			_, _ = cluster.Dynamic.Resource(agg.GVR).Namespace(name).Patch(ctx, "g1", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		}
	})

	rep, r := purgeJSON(t, name, "--force", "--yes", "--remove-finalizers=example.com/*", "--backup-dir", t.TempDir(), "--timeout=20s")
	if r.Code != 5 || rep.Outcome != purge.OutcomeRemaining {
		t.Fatalf("exit %d, outcome %s, message %q\n%s", r.Code, rep.Outcome, rep.Message, r.Stderr)
	}
	results := map[string]int{}
	for _, s := range rep.RowsOf(purge.RowStrip) {
		results[string(s.Status)+s.Why]++
	}
	if results[string(purge.RowDone)] != 1 || results[string(purge.RowSkipped)+purge.StripLeftAlone] != 1 {
		t.Errorf("strips %+v: want the finalizer removed once, then left alone", rep.RowsOf(purge.RowStrip))
	}
	if !slices.ContainsFunc(rep.WarningDetails, func(w printer.WarningDetail) bool {
		return w.Kind == purge.WarnPutBack && slices.Contains(w.Finalizers, "example.com/operator")
	}) {
		t.Errorf("warnings: %q", rep.Warnings)
	}
	if fins := agg.Stored(name)["g1"].GetFinalizers(); !slices.Contains(fins, "example.com/operator") {
		t.Errorf("g1 finalizers %v: the controller's finalizer should be back", fins)
	}
}

func stepFailed(rep printer.PurgeDocument, resource string) bool {
	for _, s := range rep.Steps {
		if s.Resource == resource && s.Status == purge.StepFailed {
			return true
		}
	}
	return false
}

func stepSucceeded(rep printer.PurgeDocument, resource string) bool {
	for _, s := range rep.Steps {
		if s.Resource == resource && s.Verb == "deletecollection" && s.Status != purge.StepFailed {
			return true
		}
	}
	return false
}
