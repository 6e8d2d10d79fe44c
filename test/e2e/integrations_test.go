package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// k9sPlugin is the part of k9s' plugin schema the entries use
// (github.com/derailed/k9s internal/config/json/schemas/plugins.json).
type k9sPlugin struct {
	ShortCut    string   `json:"shortCut"`
	Description string   `json:"description"`
	Scopes      []string `json:"scopes"`
	Command     string   `json:"command"`
	Background  bool     `json:"background"`
	Dangerous   bool     `json:"dangerous"`
	Args        []string `json:"args"`
}

// The k9s entries docs/integrations.md offers run as k9s would run them
// (its variables filled, the command under a pager) against a stuck
// namespace, and say why it is stuck; neither may change the cluster.
func TestK9sPluginsRun(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "integrations", "k9s-plugins.yaml"))
	plugintest.Must(t, err)
	var file struct {
		Plugins map[string]k9sPlugin `json:"plugins"`
	}
	if err := yaml.UnmarshalStrict(raw, &file); err != nil {
		t.Fatalf("docs/integrations/k9s-plugins.yaml is not k9s' plugin format: %v", err)
	}
	if len(file.Plugins) != 2 {
		t.Fatalf("want the explain and the purge plan entries, got %d", len(file.Plugins))
	}

	name := heldByFinalizers(t, true, nil)
	pager := t.TempDir() // less is not on every machine: a pager that copies
	plugintest.Must(t, os.WriteFile(filepath.Join(pager, "less"), []byte("#!/bin/sh\nexec cat\n"), 0o755))
	env := []string{
		"PATH=" + pager + string(os.PathListSeparator) + plugin.Dir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"KUBECONFIG=" + cp.Kubeconfig, "NAME=" + name, "CONTEXT=admin",
	}
	for id, p := range file.Plugins {
		if p.ShortCut == "" || p.Description == "" || p.Command == "" || !slices.Contains(p.Scopes, "namespaces") || p.Background || p.Dangerous {
			t.Errorf("%s: %+v: want a shortcut, a description, a command, the namespaces scope, in the foreground, not dangerous", id, p)
			continue
		}
		r := plugintest.Command(t, "", 2*time.Minute, env, p.Command, p.Args...)
		out := r.Stdout
		if r.Code != 0 || !strings.Contains(out, name) || !strings.Contains(out, "example.com/a") {
			t.Errorf("%s: exit %d, output:\n%s\nstderr: %s", id, r.Code, out, r.Stderr)
		}
	}
	// The plan and the explanation left the namespace as it was.
	r := plugin.Kubectl(t, cp.Kubeconfig, "get", "configmaps", "-n", name, "-o", "name")
	if strings.Count(r.Stdout, "configmap/") != 2 {
		t.Errorf("the k9s entries changed the namespace: %q", r.Stdout)
	}
}
