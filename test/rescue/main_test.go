// Package rescue runs rescue and protect through the real kubectl against
// a real control plane whose kube-controller-manager authenticates as in a
// kubeadm cluster (--use-service-account-credentials): the policies match
// the controllers' identities, so the test bed must run them as such.
// NSDOCTOR_KCM_CREDENTIALS=user runs them as system:kube-controller-manager
// instead, the other identity the hold matches.
package rescue

import (
	"os"
	"strings"
	"testing"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

var (
	// credentials is how kube-controller-manager authenticates
	// (controlplane.Options.ControllerCredentials).
	credentials = "serviceaccounts"
	cp          *controlplane.ControlPlane
	cluster     *scenario.Cluster
	plugin      plugintest.Plugin
	// ordered: the namespace controller deletes pods first (1.33+ by
	// default), which opens the window a rescue works in; unordered (its
	// gate off, as a 1.30-1.32 controller) it deletes everything at once.
	ordered = true
)

func TestMain(m *testing.M) {
	if c := os.Getenv("NSDOCTOR_KCM_CREDENTIALS"); c != "" {
		credentials = c
	}
	// The full bed: pods that run and go at the end of their grace
	// period (the window a rescue works in), the PV binder and the
	// protection controllers, the ServiceAccount controller a restored
	// namespace waits for, the workload controllers whose pods come back.
	opts := controlplane.FromEnv(controlplane.Options{ControllerCredentials: credentials})
	ordered = !strings.Contains(opts.FeatureGates, "OrderedNamespaceDeletion=false")
	setup := plugintest.Setup{Name: "rescue", ControlPlane: opts}
	plugintest.Main(m, setup, func(b plugintest.Bed) { cp, cluster, plugin = b.CP, b.Cluster, b.Plugin })
}
