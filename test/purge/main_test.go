// Package purge_test drives `kubectl ns-doctor purge` against the full bed
// (every default controller, a scheduler, nodes) with its namespace
// controller quiet: purge alone must finish deletions, while the garbage
// collector, the protection controllers, the node lifecycle controller
// and the kubelets do their part as on a real cluster.
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
	// The namespace controller would finish what each test leaves for
	// purge to do: quiet for the whole package.
	setup := plugintest.Setup{Name: "purge", Race: true, ControlPlane: controlplane.Options{Quiet: []string{"namespace-controller"}}}
	plugintest.Main(m, setup, func(b plugintest.Bed) { cp, cluster, plugin = b.CP, b.Cluster, b.Plugin })
}
