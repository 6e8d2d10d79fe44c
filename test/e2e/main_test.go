// Package e2e runs the built plugin through the real kubectl against a
// real control plane (etcd, kube-apiserver, kube-controller-manager).
//
// It runs on the minimal bed (controlplane.Options.Minimal): its tests
// build each holder's state by hand, writing an operator Deployment's
// status as its controller would (ready or not, acting or idle since the
// deletion) and keeping a claim's protection finalizer with no pod, which
// a deployment controller and the kubelets of the full bed would rewrite.
// What lives and dies on a real cluster (pods, nodes, the controllers
// around a namespace) is proven on the full bed in test/rescue, test/purge,
// test/watch, test/guard and test/oracle.
package e2e

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

const testVersion = "v0.0.0-e2e"

func TestMain(m *testing.M) {
	setup := plugintest.Setup{Name: "e2e", Race: true, LDFlags: "-X github.com/ns-doctor/ns-doctor/internal/version.version=" + testVersion,
		ControlPlane: controlplane.Options{Minimal: true}}
	plugintest.Main(m, setup, func(b plugintest.Bed) { cp, cluster, plugin = b.CP, b.Cluster, b.Plugin })
}
