package hostile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// timed runs the plugin and logs how long it took.
func timed(t *testing.T, kubeconfig string, args ...string) (plugintest.Result, time.Duration) {
	t.Helper()
	start := time.Now()
	r := plugin.Direct(t, kubeconfig, args...)
	took := time.Since(start)
	t.Logf("%s: exit %d after %s; %s", strings.Join(args, " "), r.Code, took.Round(100*time.Millisecond), lastLine(r.Stderr))
	if bad := terminalBytes(r.Stdout + r.Stderr); len(bad) > 0 {
		t.Errorf("%v reached the terminal", bad)
	}
	return r, took
}

// lastLine is the last line of a command's stderr: its one error line.
func lastLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	return lines[len(lines)-1]
}

// heldNamespace is a deleted namespace holding n configmaps, each kept by
// a finalizer, and a custom resource of api's kept the same way.
func heldNamespace(t *testing.T, api *scenario.AggregatedAPI, n int) string {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	for i := range n {
		plugintest.Must(t, cluster.CreateConfigMap(ctx, name, fmt.Sprintf("cm-%d", i), nil, "example.com/keep"))
	}
	if api != nil {
		plugintest.Must(t, api.Create(ctx, name, "w1", "example.com/keep"))
	}
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	return name
}

// consistentBackup checks what a forced run left against its backup:
// every configmap it changed (deleted, or stripped of its finalizer) has
// its copy, and every file of the backup reads whole.
func consistentBackup(t *testing.T, namespace, dir string, n int) {
	t.Helper()
	saved, err := backup.Objects(dir, configMaps)
	if errors.Is(err, fs.ErrNotExist) {
		// Nothing of the type saved: then nothing of it may have changed.
		saved, err = nil, nil
	}
	if err != nil {
		t.Fatalf("the backup does not read whole: %v", err)
	}
	inBackup := map[string]bool{}
	for _, o := range saved {
		inBackup[o.GetName()] = true
	}
	for i := range n {
		cm, err := cluster.Kube.CoreV1().ConfigMaps(namespace).Get(context.Background(), fmt.Sprintf("cm-%d", i), metav1.GetOptions{})
		changed := err != nil || len(cm.Finalizers) == 0
		if changed && !inBackup[fmt.Sprintf("cm-%d", i)] {
			t.Errorf("cm-%d was changed (%v) but is not in the backup", i, err)
		}
	}
}

// An aggregated API that accepts connections and never answers: explain
// ends within a few --request-timeout and names it; a forced purge
// neither finalizes nor strips what it cannot see, ends with one error
// line, and leaves a backup of all it changed.
func TestHangingAPIEndsWithinTheRequestTimeout(t *testing.T) {
	api := plugintest.AggregatedAPI(t, cluster)
	name := heldNamespace(t, api, 3)
	api.Hang()

	r, took := timed(t, cp.Kubeconfig, "explain", name, "--request-timeout=5s")
	if took > time.Minute || !strings.Contains(r.Stdout, api.APIService) {
		t.Errorf("explain after %s, exit %d; want it within a minute, naming apiservice %s:\n%s\n%s", took, r.Code, api.APIService, r.Stdout, r.Stderr)
	}
	dir := t.TempDir()
	r, took = timed(t, cp.Kubeconfig, "purge", name, "--force", "--yes", "--remove-finalizers=example.com/keep", "--request-timeout=5s", "--timeout=1m", "--backup-dir", dir)
	if r.Code == 0 || took > 2*time.Minute || !strings.HasPrefix(lastLine(r.Stderr), "error: ") || !strings.Contains(lastLine(r.Stderr), api.APIService) {
		t.Errorf("purge after %s, exit %d; want a failure within its --timeout, ending with one error line naming apiservice %s:\n%s\n%s", took, r.Code, api.APIService, r.Stdout, r.Stderr)
	}
	if stored := api.Stored(name)["w1"]; stored == nil || len(stored.GetFinalizers()) != 1 {
		t.Errorf("the object behind the hanging API was changed: %v", stored)
	}
	if _, err := cluster.Kube.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{}); err != nil {
		t.Errorf("the namespace was finalized while an API could not be seen: %v", err)
	}
	consistentBackup(t, name, dir, 3)
}

// An aggregated API whose discovery answers garbage: explain names it at
// once, also with -v=8's request log; purge will not finalize past it.
func TestGarbageDiscoveryIsNamed(t *testing.T) {
	api := plugintest.AggregatedAPI(t, cluster)
	name := heldNamespace(t, api, 0)
	plugintest.Must(t, api.Garbage(context.Background()))

	r, _ := timed(t, cp.Kubeconfig, "explain", name, "--request-timeout=5s")
	if r.Code != 3 || !strings.Contains(r.Stdout, api.GVR.GroupVersion().String()) {
		t.Errorf("explain: exit %d, want 3 (stuck) naming %s:\n%s\n%s", r.Code, api.GVR.GroupVersion(), r.Stdout, r.Stderr)
	}
	// timed fails the test on any terminal byte in what -v=8 logs.
	r, _ = timed(t, cp.Kubeconfig, "explain", name, "--request-timeout=5s", "-v=8")
	if r.Code != 3 || !strings.Contains(r.Stderr, `"Response Body"`) {
		t.Errorf("explain -v=8: exit %d, want 3 and client-go's request log on stderr", r.Code)
	}
	r, _ = timed(t, cp.Kubeconfig, "purge", name, "--force", "--yes", "--request-timeout=5s", "--timeout=1m", "--backup-dir", t.TempDir())
	if r.Code == 0 || !strings.HasPrefix(lastLine(r.Stderr), "error: ") || !strings.Contains(lastLine(r.Stderr), api.GVR.GroupVersion().String()) {
		t.Errorf("purge: exit %d; want one error line naming %s:\n%s", r.Code, api.GVR.GroupVersion(), r.Stderr)
	}
}

// A connection closed half-way through a list's body: explain reports
// that list as failed; a forced purge strips nothing it could not list
// whole, ends with one error line, and its backup holds all it changed.
func TestListCutMidBodyChangesNothingUnseen(t *testing.T) {
	proxy, err := scenario.StartCuttingProxy(cp.Config, t.TempDir())
	plugintest.Must(t, err)
	t.Cleanup(proxy.Close)
	const n = 40
	name := heldNamespace(t, nil, n)
	proxy.CutLists(name, "configmaps")

	r, _ := timed(t, proxy.Kubeconfig, "explain", name, "--request-timeout=10s")
	if proxy.Cuts.Load() == 0 || !strings.Contains(r.Stdout, "configmaps") {
		t.Errorf("explain through the proxy (%d lists cut): exit %d\n%s\n%s", proxy.Cuts.Load(), r.Code, r.Stdout, r.Stderr)
	}
	dir := t.TempDir()
	r, took := timed(t, proxy.Kubeconfig, "purge", name, "--force", "--yes", "--remove-finalizers=example.com/keep", "--request-timeout=10s", "--timeout=1m", "--backup-dir", dir)
	if r.Code == 0 || took > 2*time.Minute || !strings.HasPrefix(lastLine(r.Stderr), "error: ") || !strings.Contains(lastLine(r.Stderr), "configmaps") {
		t.Errorf("purge after %s, exit %d; want a failure, ending with one error line naming configmaps:\n%s\n%s", took, r.Code, r.Stdout, r.Stderr)
	}
	consistentBackup(t, name, dir, n)
}
