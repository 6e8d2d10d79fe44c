// Package monitoring checks what deploy/ installs in a cluster for
// `kubectl ns-doctor watch`: the alert rules with promtool (their syntax,
// and unit tests of when they fire and what they say), every manifest
// against a real kube-apiserver (with the Prometheus Operator's CRDs, a
// server dry run of deploy/ and its subfolders, then a real apply and what
// the ServiceAccount may do), and that the ClusterRoles hold the rules of
// docs/rbac. The control plane runs without kube-controller-manager:
// nothing here needs a pod to run. test/support/prometheus proves the
// same alert rule against a real Prometheus server.
package monitoring

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/prometheus"
)

var (
	cp *controlplane.ControlPlane
	// repoRoot is the checkout: deploy/ and docs/ live there.
	repoRoot string
)

func TestMain(m *testing.M) {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// go test runs in the package folder, test/monitoring.
	repoRoot = filepath.Join(wd, "..", "..")
	controlplane.TestMain(m, controlplane.Options{WithoutControllerManager: true}, func(c *controlplane.ControlPlane) { cp = c })
}

var (
	installOnce sync.Once
	tools       prometheus.Tools
	installErr  error
)

// promtool installs the pinned Prometheus tools once per run (about 6
// minutes cold; `make test` installs them first) and returns promtool.
func promtool(t *testing.T) string {
	t.Helper()
	installOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		start := time.Now()
		tools, installErr = prometheus.Install(ctx)
		t.Logf("hack/install-prometheus.sh: %s", time.Since(start).Round(time.Second))
	})
	if installErr != nil {
		t.Fatalf("promtool is needed to check the alert rules: %v", installErr)
	}
	return tools.Promtool
}

// kubectl runs the real kubectl as cluster-admin in the checkout, with a
// discovery cache of the test's own (CRDs come and go between runs).
func kubectl(t *testing.T, args ...string) plugintest.Result {
	t.Helper()
	env := []string{"KUBECONFIG=" + cp.Kubeconfig, "KUBECACHEDIR=" + filepath.Join(cp.Dir, "kubectl-cache")}
	return plugintest.Command(t, repoRoot, 3*time.Minute, env, "kubectl", args...)
}

// mustKubectl runs kubectl and fails the test unless it exits 0 without a
// warning on stderr (deprecations, Pod Security, unknown fields).
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	r := kubectl(t, args...)
	if r.Code != 0 {
		t.Fatalf("kubectl %s: exit %d\n%s%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stderr, "Warning") {
		t.Errorf("kubectl %s warned:\n%s", strings.Join(args, " "), r.Stderr)
	}
	return r.Stdout
}

// waitEstablished waits up to a minute for each CRD's Established
// condition. Not `kubectl wait --for=condition=Established`: it fails at
// once on a CRD created a moment before, whose status has no conditions
// yet (".status.conditions accessor error: <nil> is of the type <nil>").
func waitEstablished(t *testing.T, crds ...string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, crd := range crds {
		for {
			r := kubectl(t, "get", "crd", crd, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
			if r.Code == 0 && strings.TrimSpace(r.Stdout) == "True" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s not Established after a minute: exit %d\n%s%s", crd, r.Code, r.Stdout, r.Stderr)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
