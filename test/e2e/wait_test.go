package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// A namespace the controller empties in seconds: --wait returns 0 as soon
// as it is gone, long before its timeout; an Active one is deleted first
// when asked, refused otherwise.
func TestWaitReturnsOnceGone(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "plain", nil))

	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", name, "--wait=2m")
	if r.Code != 2 || !strings.Contains(r.Stderr, "is Active") || !strings.Contains(r.Stderr, "--delete-namespace") {
		t.Fatalf("an Active namespace without --delete-namespace: exit %d, %s", r.Code, r.Stderr)
	}
	start := time.Now()
	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", name, "--wait=2m", "--delete-namespace")
	if r.Code != 0 || time.Since(start) > time.Minute {
		t.Fatalf("exit %d after %s\n%s\n%s", r.Code, time.Since(start), r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, name+": gone after") || r.Stdout != "" {
		t.Errorf("stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace still there: %v", err)
	}
}

// A namespace held by a finalizer: --wait times out, prints the report
// naming the finalizer (JSON: a list), and exits with the stuck code;
// without a terminal, stderr gets a line only when something changed.
func TestWaitTimesOutWithTheReport(t *testing.T) {
	name := heldNamespace(t)
	t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), name, "held") })
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", name, "--wait=7s", "--grace=0s")
	if r.Code != 3 || !strings.Contains(r.Stdout, string(diagnose.BlockerFinalizers)) || !strings.Contains(r.Stdout, "example.com/hold") {
		t.Fatalf("exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if !strings.Contains(lines[0], name+": stuck") || !strings.HasPrefix(lines[len(lines)-1], "error: still there after --wait=7s: "+name) || len(lines) > 3 {
		t.Errorf("stderr without a terminal, want a line per change and the error:\n%s", r.Stderr)
	}
	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", name, "--wait=3s", "--grace=0s", "-o", "json")
	var list printer.DiagnosisListDocument
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || r.Code != 3 || len(list.Items) != 1 || list.Items[0].Namespace.Name != name {
		t.Fatalf("-o json: exit %d, %v\n%s", r.Code, err, r.Stdout)
	}
}

// Released while explain waits, the namespace goes, and --wait returns 0
// when it goes (its watch sees it), long before --wait's 3 minutes. How
// soon exactly is not a test's business: under the race detector, on a
// loaded machine, a second was once 1.3 s.
func TestWaitReturnsWhenReleased(t *testing.T) {
	ctx := context.Background()
	name := heldNamespace(t)
	cmd := exec.Command("kubectl", "ns-doctor", "explain", name, "--wait=3m")
	cmd.Env = append(os.Environ(), "PATH="+plugin.Dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+cp.Kubeconfig)
	plugintest.Must(t, cmd.Start())
	done := make(chan time.Time, 1)
	go func() { _ = cmd.Wait(); done <- time.Now() }()
	time.Sleep(3 * time.Second)
	plugintest.Must(t, cluster.ReleaseConfigMap(ctx, name, "held"))
	_, err := cluster.Kube.CoreV1().Secrets(name).Patch(ctx, "creds", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	plugintest.Must(t, err)
	var gone time.Time
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			gone = time.Now()
			break
		}
	}
	if gone.IsZero() {
		t.Fatal("the controller never removed the namespace")
	}
	select {
	case ended := <-done:
		if lag := ended.Sub(gone); lag > 15*time.Second || cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("explain --wait ended %s after the namespace went, exit %d", lag, cmd.ProcessState.ExitCode())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("explain --wait did not end after the namespace went")
	}
}

// Ctrl-C while waiting ends explain at once with one line naming what is
// still there, exit 1, and no report (it would need the API server).
func TestWaitInterrupted(t *testing.T) {
	name := heldNamespace(t)
	t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), name, "held") })
	cmd := exec.Command("kubectl", "ns-doctor", "explain", name, "--wait=3m")
	cmd.Env = append(os.Environ(), "PATH="+plugin.Dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+cp.Kubeconfig)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	plugintest.Must(t, cmd.Start())
	time.Sleep(3 * time.Second)
	plugintest.Must(t, cmd.Process.Signal(syscall.SIGINT))
	start := time.Now()
	_ = cmd.Wait()
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	last := lines[len(lines)-1]
	if code := cmd.ProcessState.ExitCode(); code != 1 || time.Since(start) > 30*time.Second {
		t.Fatalf("exit %d, %s after SIGINT\n%s", code, time.Since(start), stderr.String())
	}
	if !strings.HasPrefix(last, "error: interrupted after ") || !strings.Contains(last, "still there: "+name+" ") ||
		strings.Contains(stderr.String(), "context canceled") || stdout.String() != "" {
		t.Errorf("stdout %q\nstderr:\n%s", stdout.String(), stderr.String())
	}
}

// On a terminal, --wait shows each namespace's line in place until it goes.
func TestWaitOnATerminal(t *testing.T) {
	name := heldNamespace(t)
	term := plugin.RunOnTerminal(t, cp.Kubeconfig, "ns-doctor", "explain", name, "--wait=2m", "--grace=0s")
	term.WaitFor(t, name+": stuck, 2 objects left")
	plugintest.Must(t, cluster.ReleaseConfigMap(context.Background(), name, "held"))
	_, err := cluster.Kube.CoreV1().Secrets(name).Patch(context.Background(), "creds", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	plugintest.Must(t, err)
	if code := term.ExitCode(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, term.Output())
	}
	term.WaitFor(t, name+": gone after")
}
