package prometheus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/test/support/gomod"
)

// Tools are the paths of the pinned Prometheus server and promtool.
type Tools struct {
	Prometheus, Promtool string
}

// Install runs hack/install-prometheus.sh, which builds both binaries on
// first use (about 6 minutes cold on 2 cores) into .cache/tools and prints
// their paths. Its progress goes to this process's stderr.
func Install(ctx context.Context) (Tools, error) {
	root, err := RepoRoot()
	if err != nil {
		return Tools{}, err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "install-prometheus.sh"))
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return Tools{}, fmt.Errorf("installing Prometheus with hack/install-prometheus.sh: %w", err)
	}
	lines := strings.Fields(out.String())
	if len(lines) != 2 {
		return Tools{}, fmt.Errorf("hack/install-prometheus.sh printed %q, want two paths", out.String())
	}
	tools := Tools{Prometheus: lines[0], Promtool: lines[1]}
	for _, bin := range []string{tools.Prometheus, tools.Promtool} {
		if _, err := os.Stat(bin); err != nil {
			return Tools{}, fmt.Errorf("hack/install-prometheus.sh: %w", err)
		}
	}
	return tools, nil
}

// RepoRoot walks up from the working directory (a test's package folder)
// to the ns-doctor checkout.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "install-prometheus.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("hack/install-prometheus.sh not found above the working directory: run from the ns-doctor checkout")
		}
		dir = parent
	}
}

// OperatorVersion is the Prometheus Operator whose CRDs the tests install.
const OperatorVersion = "v0.85.0"

// OperatorCRDs are the CustomResourceDefinition manifests of the
// Prometheus Operator the deploy/monitoring objects need.
type OperatorCRDs struct {
	PrometheusRules, ServiceMonitors string
}

// DownloadOperatorCRDs gets the Prometheus Operator module at
// OperatorVersion through the Go module proxy (or the module cache) and
// returns its CRD manifests.
func DownloadOperatorCRDs(ctx context.Context) (OperatorCRDs, error) {
	dir, err := gomod.Dir(ctx, "github.com/prometheus-operator/prometheus-operator@"+OperatorVersion)
	if err != nil {
		return OperatorCRDs{}, err
	}
	dir = filepath.Join(dir, "example", "prometheus-operator-crd")
	crds := OperatorCRDs{
		PrometheusRules: filepath.Join(dir, "monitoring.coreos.com_prometheusrules.yaml"),
		ServiceMonitors: filepath.Join(dir, "monitoring.coreos.com_servicemonitors.yaml"),
	}
	for _, f := range []string{crds.PrometheusRules, crds.ServiceMonitors} {
		if _, err := os.Stat(f); err != nil {
			return OperatorCRDs{}, fmt.Errorf("prometheus-operator %s: %w", OperatorVersion, err)
		}
	}
	return crds, nil
}

// WriteRuleFile writes the rule groups of a PrometheusRule manifest (its
// spec) as a plain Prometheus rules file, dir/name, for Prometheus and
// promtool, and returns its path.
func WriteRuleFile(prometheusRule, dir, name string) (string, error) {
	data, err := os.ReadFile(prometheusRule)
	if err != nil {
		return "", err
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Groups []json.RawMessage `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return "", fmt.Errorf("%s: %w", prometheusRule, err)
	}
	if obj.APIVersion != "monitoring.coreos.com/v1" || obj.Kind != "PrometheusRule" || len(obj.Spec.Groups) == 0 {
		return "", fmt.Errorf("%s: want a monitoring.coreos.com/v1 PrometheusRule with spec.groups, got %s %s with %d groups",
			prometheusRule, obj.APIVersion, obj.Kind, len(obj.Spec.Groups))
	}
	rules, err := yaml.Marshal(map[string]any{"groups": obj.Spec.Groups})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, rules, 0o644); err != nil {
		return "", err
	}
	return path, nil
}
