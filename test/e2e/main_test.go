// Package e2e runs the built plugin through the real kubectl against a
// real control plane (etcd, kube-apiserver, kube-controller-manager).
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/controlplane"
	"github.com/ns-doctor/ns-doctor/internal/scenario"
)

var (
	cp        *controlplane.ControlPlane
	cluster   *scenario.Cluster
	pluginDir string
)

const testVersion = "v0.0.0-e2e"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ns-doctor-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	if err := buildPlugin(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginDir = dir
	controlplane.TestMain(m, controlplane.Options{}, func(c *controlplane.ControlPlane) {
		cp = c
		var err error
		if cluster, err = scenario.NewCluster(c.Config); err != nil {
			panic(err)
		}
	})
}

// buildPlugin builds the binary the way a release does (version ldflags),
// under the name kubectl looks for.
func buildPlugin(dir string) error {
	ldflags := "-X github.com/ns-doctor/ns-doctor/internal/version.version=" + testVersion
	cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", filepath.Join(dir, "kubectl-ns_doctor"), "github.com/ns-doctor/ns-doctor/cmd/kubectl-ns_doctor")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the plugin: %v\n%s", err, out)
	}
	return nil
}

type result struct {
	stdout, stderr string
	code           int
}

// kubectl runs the real kubectl with the plugin on PATH.
func kubectl(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kubectlPath, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is not on PATH: %v", err)
	}
	cmd := exec.CommandContext(ctx, kubectlPath, args...)
	cmd.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig, "NO_COLOR=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	code := 0
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running kubectl %s: %v", strings.Join(args, " "), err)
	}
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

func uniqueName(t *testing.T) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	return strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
}
