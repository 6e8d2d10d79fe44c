package mcp_test

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ns-doctor/ns-doctor/internal/fleet"
	"github.com/ns-doctor/ns-doctor/internal/mcp"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// With --all-contexts the server reads every cluster of the kubeconfig:
// list_stuck_namespaces gives one list, each item with its context, and
// a cluster that cannot be read has its row; the other tools name a
// cluster by its context, and one the server does not read is a tool
// error.
func TestFleetOfClusters(t *testing.T) {
	name := heldNamespace(t, "example.com/hold")
	cfg, err := clientcmd.LoadFromFile(cp.Kubeconfig)
	plugintest.Must(t, err)
	live := cfg.CurrentContext
	cfg.Clusters["gone"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.AuthInfos["someone"] = &clientcmdapi.AuthInfo{Token: "not-a-real-token"}
	cfg.Contexts["gone"] = &clientcmdapi.Context{Cluster: "gone", AuthInfo: "someone"}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	plugintest.Must(t, clientcmd.WriteToFile(*cfg, kubeconfig))

	cs, _ := serve(t, kubeconfig, nil, "--all-contexts", "--request-timeout=5s")
	var list mcp.DiagnosisListResult
	res := call(t, cs, mcp.ToolListStuck, map[string]any{"detail": "brief"}, &list)
	if res.IsError {
		t.Fatalf("list_stuck_namespaces: %s", summary(res))
	}
	reach := map[string]fleet.Reach{}
	for _, c := range list.Clusters {
		reach[c.Name] = c.Reach
	}
	if reach[live] != fleet.Reachable || reach["gone"] != fleet.Unreachable {
		t.Errorf("clusters %+v, want %s reachable and gone unreachable", list.Clusters, live)
	}
	found := false
	for _, item := range list.Items {
		found = found || item.Namespace.Name == name && item.Context == live
	}
	if !found {
		t.Errorf("%s is not listed with its context %s", name, live)
	}

	var d mcp.DiagnosisResult
	if res := call(t, cs, mcp.ToolExplain, map[string]any{"namespace": name, "context": live}, &d); res.IsError || d.Namespace.Name != name {
		t.Errorf("explain_namespace in context %s: %s", live, summary(res))
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"namespace": name}, "this server reads 2 clusters: name one in the context argument"},
		{map[string]any{"namespace": name, "context": "elsewhere"}, `context "elsewhere" is not one this server reads`},
		{map[string]any{"namespace": name, "context": "gone"}, "cannot reach the API server at https://127.0.0.1:1"},
	} {
		res := call(t, cs, mcp.ToolExplain, tc.args, nil)
		if s := summary(res); !res.IsError || !strings.Contains(s, tc.want) {
			t.Errorf("explain_namespace %v: %q, want an error with %q", tc.args, s, tc.want)
		}
	}
}
