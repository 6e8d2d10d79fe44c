// Package purge_test drives `kubectl ns-doctor purge` against a control
// plane with NO namespace controller: purge alone must finish deletions.
package purge_test

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

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ns-doctor-purge-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := plugintest.Build(dir, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Dir = dir
	code := controlplane.RunTests(m, controlplane.Options{WithoutControllerManager: true}, func(c *controlplane.ControlPlane) {
		cp = c
		if cluster, err = scenario.NewCluster(c.Config); err != nil {
			panic(err)
		}
	})
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
