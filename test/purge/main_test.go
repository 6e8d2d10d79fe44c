// Package purge_test drives `kubectl ns-doctor purge` against a control
// plane with NO namespace controller: purge alone must finish deletions.
package purge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/controlplane"
	"github.com/ns-doctor/ns-doctor/internal/scenario"
)

var (
	cp        *controlplane.ControlPlane
	cluster   *scenario.Cluster
	pluginDir string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ns-doctor-purge-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-ns_doctor"), "github.com/ns-doctor/ns-doctor/cmd/kubectl-ns_doctor").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the plugin: %v\n%s", err, out)
		os.Exit(1)
	}
	pluginDir = dir
	code := 0
	func() {
		defer os.RemoveAll(dir)
		controlplane.TestMain(m, controlplane.Options{WithoutControllerManager: true}, func(c *controlplane.ControlPlane) {
			cp = c
			if cluster, err = scenario.NewCluster(c.Config); err != nil {
				panic(err)
			}
		})
	}()
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func kubectl(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return result{out.String(), errOut.String(), code}
}

func uniqueName(t *testing.T) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	return strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
