package plugintest

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// Bed is what a test package's tests share: one control plane, a client
// of it, and the plugin built for this run.
type Bed struct {
	CP      *controlplane.ControlPlane
	Cluster *scenario.Cluster
	Plugin  Plugin
}

// Setup is how a test package wants its bed.
type Setup struct {
	// Name names the plugin's temporary folder (ns-doctor-NAME-bin-*).
	Name string
	// LDFlags are the plugin's extra ldflags (e.g. a version).
	LDFlags string
	// Race builds the plugin with the race detector (cgo: gcc): the
	// packages whose tests run its concurrent paths (many namespaces at
	// once, the watch's workers) set it.
	Race bool
	// ControlPlane are the control plane's options.
	ControlPlane controlplane.Options
	// Prepare, if set, adds to the plugin's folder before the tests.
	Prepare func(dir string) error
}

// Main is a test package's TestMain: it builds the plugin into a folder of
// its own, starts one control plane for all the package's tests, hands
// both to use, runs the tests, removes the folder and exits with their
// code.
func Main(m *testing.M, s Setup, use func(Bed)) {
	os.Exit(run(m, s, use))
}

func run(m *testing.M, s Setup, use func(Bed)) int {
	dir, err := os.MkdirTemp("", "ns-doctor-"+s.Name+"-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := Build(dir, s.LDFlags, s.Race); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if s.Prepare != nil {
		if err := s.Prepare(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return controlplane.RunTests(m, s.ControlPlane, func(c *controlplane.ControlPlane) {
		cluster, err := scenario.NewCluster(c.Config)
		if err != nil {
			panic(err)
		}
		cluster.LostNode = c.LostNode()
		cluster.Settle = c.Full()
		use(Bed{CP: c, Cluster: cluster, Plugin: Plugin{Dir: dir}})
	})
}

// Quiet stops the named controllers of the bed's kube-controller-manager
// for one test (e.g. "namespace-controller": the test plays its part) and
// starts them again when the test ends, or when the returned function is
// called first.
func Quiet(t *testing.T, cp *controlplane.ControlPlane, names ...string) (restart func()) {
	t.Helper()
	restore, err := cp.QuietControllers(names...)
	Must(t, err)
	var once sync.Once
	restart = func() { once.Do(func() { Must(t, restore()) }) }
	t.Cleanup(restart)
	return restart
}
