// Package distribution checks what users install and set up, end to end:
// the krew manifest against goreleaser's snapshot archives, installed the
// way krew installs and run through the real kubectl; shell completion,
// through kubectl's plugin completion too; and the ClusterRoles in
// docs/rbac, each bound alone to a fresh user. The control plane runs
// without kube-controller-manager, so nothing but purge finishes deletions.
package distribution

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

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

var (
	cp      *controlplane.ControlPlane
	cluster *scenario.Cluster
	// pluginDir holds kubectl-ns_doctor and the repository's
	// kubectl_complete-ns_doctor, for PATH.
	pluginDir string
	// repoRoot is the checkout: goreleaser, krew/ and docs/ live there.
	repoRoot string
)

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := controlplane.RunTests(m, controlplane.Options{WithoutControllerManager: true}, func(c *controlplane.ControlPlane) {
		cp = c
		var err error
		if cluster, err = scenario.NewCluster(c.Config); err != nil {
			panic(err)
		}
	})
	os.RemoveAll(pluginDir)
	os.Exit(code)
}

func setup() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	// go test runs in the package folder, test/distribution.
	repoRoot = filepath.Join(wd, "..", "..")
	if pluginDir, err = os.MkdirTemp("", "ns-doctor-dist-bin-"); err != nil {
		return err
	}
	if err := plugintest.Build(pluginDir, ""); err != nil {
		return err
	}
	// The shim as shipped, not as printed: the file users get is tested.
	shim, err := os.ReadFile(filepath.Join(repoRoot, "kubectl_complete-ns_doctor"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(pluginDir, "kubectl_complete-ns_doctor"), shim, 0o755)
}

type result struct {
	stdout, stderr string
	code           int
}

// command runs name with args in the checkout, env added to this
// process's environment, and fails the test only if it could not run at all.
func command(t *testing.T, timeout time.Duration, env []string, name string, args ...string) result {
	t.Helper()
	return commandIn(t, repoRoot, timeout, env, name, args...)
}

// commandIn is command run in dir.
func commandIn(t *testing.T, dir string, timeout time.Duration, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s %s: %v", name, strings.Join(args, " "), err)
	}
	return result{out.String(), errOut.String(), code}
}

// kubectl runs the real kubectl with the plugin and the shim on PATH.
func kubectl(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	r := plugintest.Kubectl(t, pluginDir, kubeconfig, args...)
	return result{r.Stdout, r.Stderr, r.Code}
}

// plugin runs the built plugin directly, as kubectl would.
func plugin(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	return command(t, 3*time.Minute, []string{"KUBECONFIG=" + kubeconfig, "NO_COLOR="}, filepath.Join(pluginDir, "kubectl-ns_doctor"), args...)
}

func uniqueName(t *testing.T) string { return plugintest.UniqueName(t) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
