// Package distribution checks what users install and set up, end to end:
// the krew manifest against goreleaser's snapshot archives, installed the
// way krew installs and run through the real kubectl; shell completion,
// through kubectl's plugin completion too; and the ClusterRoles in
// docs/rbac, each bound alone to a fresh user. The control plane runs
// without kube-controller-manager, so nothing but purge finishes deletions.
package distribution

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

var (
	cp      *controlplane.ControlPlane
	cluster *scenario.Cluster
	// plugin's folder holds kubectl-ns_doctor and the repository's
	// kubectl_complete-ns_doctor, for PATH.
	plugin plugintest.Plugin
	// repoRoot is the checkout: goreleaser, krew/ and docs/ live there.
	repoRoot string
)

func TestMain(m *testing.M) {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// go test runs in the package folder, test/distribution.
	repoRoot = filepath.Join(wd, "..", "..")
	setup := plugintest.Setup{Name: "dist", ControlPlane: controlplane.Options{WithoutControllerManager: true}, Prepare: addShim}
	plugintest.Main(m, setup, func(b plugintest.Bed) { cp, cluster, plugin = b.CP, b.Cluster, b.Plugin })
}

// addShim puts the completion shim as shipped, not as printed, beside the
// plugin: the file users get is tested.
func addShim(dir string) error {
	shim, err := os.ReadFile(filepath.Join(repoRoot, "kubectl_complete-ns_doctor"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "kubectl_complete-ns_doctor"), shim, 0o755)
}

// command runs name with args in the checkout, env added to this
// process's environment, and fails the test only if it could not run at all.
func command(t *testing.T, timeout time.Duration, env []string, name string, args ...string) plugintest.Result {
	t.Helper()
	return plugintest.Command(t, repoRoot, timeout, env, name, args...)
}

// pluginRun runs the built plugin directly, as kubectl would.
func pluginRun(t *testing.T, kubeconfig string, args ...string) plugintest.Result {
	t.Helper()
	return command(t, 3*time.Minute, []string{"KUBECONFIG=" + kubeconfig, "NO_COLOR="}, filepath.Join(plugin.Dir, "kubectl-ns_doctor"), args...)
}
