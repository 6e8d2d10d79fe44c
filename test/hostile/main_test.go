// Package hostile drives the built plugin against a real control plane
// (etcd, kube-apiserver, kube-controller-manager) filled with what tenants,
// operators and webhooks write: escape sequences in every text the cluster
// returns, messages and lists far larger than a screen, and servers that
// hang, answer garbage or cut a list mid-body. docs/reliability.md lists
// each input and the test that covers it.
package hostile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	plugintest.Main(m, plugintest.Setup{Name: "hostile"}, func(b plugintest.Bed) { cp, cluster, plugin = b.CP, b.Cluster, b.Plugin })
}

var (
	getOpts    = metav1.GetOptions{}
	updateOpts = metav1.UpdateOptions{}
)
