// Package versions proves each behaviour ns-doctor follows by the server's
// version (internal/compat) against the real control planes on each side of
// the change: v1.36.3 and v1.37.2 (the default), both running the namespace
// controller, started once for the package. Each test works in namespaces
// of its own on both.
package versions

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// bed is one version's control plane.
type bed struct {
	minor   string
	cp      *controlplane.ControlPlane
	cluster *scenario.Cluster
}

var (
	plugin plugintest.Plugin
	// older is v1.36.3, newer the default v1.37.2.
	older, newer *bed
)

// encryptSecrets encrypts Secrets with one AES-CBC key.
const encryptSecrets = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: ["secrets"]
  providers:
  - aescbc:
      keys:
      - name: current
        secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
`

// both is each bed, older first.
func both() []*bed { return []*bed{older, newer} }

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ns-doctor-versions-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := plugintest.Build(dir, "", true); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	plugin = plugintest.Plugin{Dir: dir}
	// Secrets are encrypted on both, so one can be left unreadable (a lost
	// key); 1.36 runs KEP-3926's gate on, so its lists name such objects
	// as 1.37's do and only the version keeps the unsafe dry run away.
	//
	// Both run the minimal bed (namespace controller and garbage collector):
	// what differs between the versions here is the API server's and the
	// namespace controller's; test/oracle proves each version on its full
	// bed (make test-versions).
	opts := map[string]controlplane.Options{
		"1.36": {Version: "1.36", Minimal: true, EncryptionConfig: encryptSecrets, APIServerFeatureGates: "AllowUnsafeMalformedObjectDeletion=true"},
		"1.37": {Minimal: true, EncryptionConfig: encryptSecrets},
	}
	beds := map[string]*bed{}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for minor, o := range opts {
		wg.Go(func() {
			cp, err := controlplane.Start(context.Background(), o)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("starting the %s control plane: %w", minor, err))
				return
			}
			c, err := scenario.NewCluster(cp.Config)
			if err != nil {
				errs = append(errs, err)
			}
			beds[minor] = &bed{minor: minor, cp: cp, cluster: c}
		})
	}
	wg.Wait()
	for _, b := range beds {
		defer b.cp.Stop()
	}
	if len(errs) > 0 {
		fmt.Fprintln(os.Stderr, errs)
		return 1
	}
	older, newer = beds["1.36"], beds["1.37"]
	return m.Run()
}
