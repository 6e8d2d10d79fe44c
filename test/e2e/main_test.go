// Package e2e runs the built plugin through the real kubectl against a
// real control plane (etcd, kube-apiserver, kube-controller-manager).
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
	setup := plugintest.Setup{Name: "e2e", Race: true, LDFlags: "-X github.com/ns-doctor/ns-doctor/internal/version.version=" + testVersion}
	plugintest.Main(m, setup, func(b plugintest.Bed) { cp, cluster, plugin = b.CP, b.Cluster, b.Plugin })
}
