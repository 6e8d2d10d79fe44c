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
	cp      *controlplane.ControlPlane
	cluster *scenario.Cluster
	plugin  plugintest.Plugin
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
	plugin.Dir = dir
	code := controlplane.RunTests(m, controlplane.Options{}, func(c *controlplane.ControlPlane) {
		cp = c
		var err error
		if cluster, err = scenario.NewCluster(c.Config); err != nil {
			panic(err)
		}
	})
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
