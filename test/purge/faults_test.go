package purge_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// startPurge runs purge in the background and returns once its first pass
// is reported on stderr.
func startPurge(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"ns-doctor", "purge"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+plugin.Dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+cp.Kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	plugintest.Must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	firstPass := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if !once && strings.HasPrefix(sc.Text(), "pass 1:") {
				once = true
				close(firstPass)
			}
		}
	}()
	go func() { _ = cmd.Wait(); _ = pw.Close() }()
	select {
	case <-firstPass:
	case <-time.After(60 * time.Second):
		t.Fatalf("purge did not report its first pass:\n%s", stderr.String())
	}
	return cmd, &stdout, &stderr
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for cmd.ProcessState == nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if cmd.ProcessState == nil {
		t.Fatal("purge did not end")
	}
	return cmd.ProcessState.ExitCode()
}

func TestPurgeSurvivesAPIServerRestart(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	cmd, stdout, stderr := startPurge(t, name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=90s")

	// Down for longer than purge waits between passes (15/2+1 s).
	cp.StopAPIServer()
	time.Sleep(10 * time.Second)
	plugintest.Must(t, cp.StartAPIServer(ctx))
	// The finalizer's owner finishes its work after the restart.
	plugintest.Must(t, cluster.ReleaseConfigMap(ctx, name, "held"))

	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("purge across a restart: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr.String(), "the API server is unavailable") {
		t.Errorf("purge never met the stopped API server:\n%s", stderr)
	}
	if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there: %v", err)
	}
}

func TestInterruptLeavesBackupAndReport(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "plain", nil))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	dir := t.TempDir()
	cmd, stdout, stderr := startPurge(t, name, "--force", "--yes", "--backup-dir", dir, "--timeout=90s")
	plugintest.Must(t, cmd.Process.Signal(syscall.SIGINT))
	if code := exitCode(t, cmd); code != 5 {
		t.Fatalf("interrupted purge: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout.String(), "interrupted") || !strings.Contains(stdout.String(), "Backup: "+dir) {
		t.Errorf("report after interrupt:\n%s", stdout)
	}
	data, err := os.ReadFile(filepath.Join(dir, "namespace.yaml"))
	var obj map[string]any
	if err == nil {
		err = yaml.Unmarshal(data, &obj)
	}
	if err != nil || obj["kind"] == nil {
		t.Errorf("backup namespace.yaml: %v", errors.Join(err))
	}
	cms, err := backup.Objects(dir, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	if err != nil || len(cms) != 2 || cms[0].GetKind() != "ConfigMap" || cms[1].GetKind() != "ConfigMap" {
		t.Errorf("backup of the configmaps: %v, %d whole documents", err, len(cms))
	}
}

// A backup folder that cannot be created stops purge before its first
// change: nothing may be deleted that could not be saved.
func TestUnwritableBackupStopsBeforeAnyChange(t *testing.T) {
	name, _ := mixedNamespace(t)
	before := resourceVersions(t, name)
	// A folder under a regular file cannot be created, whoever runs the test.
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--force", "--yes", "--backup-dir", "/dev/null/backup")
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if r.Code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], "/dev/null/backup") {
		t.Fatalf("exit %d, stderr:\n%s", r.Code, r.Stderr)
	}
	if fmt.Sprint(resourceVersions(t, name)) != fmt.Sprint(before) {
		t.Fatal("purge changed the namespace without a backup")
	}
}
