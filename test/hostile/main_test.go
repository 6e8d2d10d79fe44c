// Package hostile drives the built plugin against a real control plane
// (etcd, kube-apiserver, kube-controller-manager) filled with what tenants,
// operators and webhooks write: escape sequences in every text the cluster
// returns, messages and lists far larger than a screen, and servers that
// hang, answer garbage or cut a list mid-body. docs/reliability.md lists
// each input and the test that covers it.
package hostile

import (
	"fmt"
	"os"
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
	dir, err := os.MkdirTemp("", "ns-doctor-hostile-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := plugintest.Build(dir, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Dir = dir
	code := controlplane.RunTests(m, controlplane.Options{}, func(c *controlplane.ControlPlane) {
		cp = c
		if cluster, err = scenario.NewCluster(c.Config); err != nil {
			panic(err)
		}
	})
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var (
	getOpts    = metav1.GetOptions{}
	updateOpts = metav1.UpdateOptions{}
)
