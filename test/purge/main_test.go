// Package purge_test drives `kubectl ns-doctor purge` against a control
// plane with NO namespace controller: purge alone must finish deletions.
package purge_test

import (
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
	setup := plugintest.Setup{Name: "purge", Race: true, ControlPlane: controlplane.Options{WithoutControllerManager: true}}
	plugintest.Main(m, setup, func(b plugintest.Bed) { cp, cluster, plugin = b.CP, b.Cluster, b.Plugin })
}
