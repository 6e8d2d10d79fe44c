// Package e2e runs the built plugin through the real kubectl against a
// real control plane (etcd, kube-apiserver, kube-controller-manager).
package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

var (
	cp        *controlplane.ControlPlane
	cluster   *scenario.Cluster
	pluginDir string
)

const testVersion = "v0.0.0-e2e"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ns-doctor-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := plugintest.Build(dir, "-X github.com/ns-doctor/ns-doctor/internal/version.version="+testVersion); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginDir = dir
	code := controlplane.RunTests(m, controlplane.Options{}, func(c *controlplane.ControlPlane) {
		cp = c
		var err error
		if cluster, err = scenario.NewCluster(c.Config); err != nil {
			panic(err)
		}
	})
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// kubectl runs the real kubectl with the plugin on PATH.
func kubectl(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	r := plugintest.Kubectl(t, pluginDir, kubeconfig, args...)
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

func uniqueName(t *testing.T) string { return plugintest.UniqueName(t) }
