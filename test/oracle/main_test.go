// Package oracle checks ns-doctor against the real namespace controller of
// the Kubernetes version the test bed runs: explain's conditions agree with
// the controller's, purge's plan predicts them, and purge --force does to a
// namespace what the controller does to its twin. The version comes from
// $NSDOCTOR_K8S (a minor, e.g. 1.33; empty: the default, 1.37) and the
// controller's feature gates from $NSDOCTOR_KCM_FEATURE_GATES; make
// test-versions runs the package on each.
package oracle

import (
	"strings"
	"testing"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

var (
	cp      *controlplane.ControlPlane
	cluster *scenario.Cluster
	plugin  plugintest.Plugin
	// ordered is the controller's deletion order: its version's default,
	// unless its gates turn OrderedNamespaceDeletion off.
	ordered bool
	// orderingFlag is what tells ns-doctor so: auto, unless the gate was
	// set otherwise than the version's default.
	orderingFlag string
)

func TestMain(m *testing.M) {
	opts := controlplane.FromEnv(controlplane.Options{})
	ordered, orderingFlag = true, "auto"
	if strings.Contains(opts.FeatureGates, "OrderedNamespaceDeletion=false") {
		ordered, orderingFlag = false, "off"
	}
	setup := plugintest.Setup{Name: "oracle", ControlPlane: opts}
	plugintest.Main(m, setup, func(b plugintest.Bed) { cp, cluster, plugin = b.CP, b.Cluster, b.Plugin })
}
