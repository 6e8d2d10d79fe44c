// Package mcp_test drives `kubectl ns-doctor mcp`, the built plugin as a
// subprocess, with MCP clients: the Go SDK's over stdio, and the MCP
// Inspector's CLI (npm, pinned by hack/install-inspector.sh) over stdio and
// streamable HTTP, against a real control plane with its namespace
// controller.
package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

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
	plugintest.Main(m, plugintest.Setup{Name: "mcp", Race: true}, func(b plugintest.Bed) { cp, cluster, plugin = b.CP, b.Cluster, b.Plugin })
}

// binary is the built plugin.
func binary() string { return filepath.Join(plugin.Dir, "kubectl-ns_doctor") }

// serve starts `kubectl-ns_doctor mcp args...` against kubeconfig and
// connects the Go SDK's client to it over stdio; answer, when set, is the
// person behind the client's elicitation. The session and the process end
// with the test; stderr is what the server said.
func serve(t *testing.T, kubeconfig string, answer func(*sdk.ElicitRequest) *sdk.ElicitResult, args ...string) (*sdk.ClientSession, *plugintest.LockedBuffer) {
	t.Helper()
	return serveAs(t, "", kubeconfig, answer, args...)
}

// serveAs is serve with a client that speaks protocol (empty: the SDK's
// latest): the clients people use today speak older ones, and get the
// elicitation as an elicitation/create request rather than in the result.
func serveAs(t *testing.T, protocol, kubeconfig string, answer func(*sdk.ElicitRequest) *sdk.ElicitResult, args ...string) (*sdk.ClientSession, *plugintest.LockedBuffer) {
	t.Helper()
	cmd := exec.Command(binary(), append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	stderr := &plugintest.LockedBuffer{}
	cmd.Stderr = stderr
	opts := &sdk.ClientOptions{}
	if answer != nil {
		opts.ElicitationHandler = func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) { return answer(req), nil }
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "ns-doctor-test", Version: "v0"}, opts).Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connecting to %s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr)
	}
	t.Cleanup(func() {
		_ = cs.Close() // waits for the server to exit
		if report, ok := plugintest.RaceReport(stderr.String()); ok {
			t.Errorf("the MCP server reported a data race:\n%s", report)
		}
	})
	return cs, stderr
}

// call calls a tool; out, when set and the call succeeded, receives its
// structured result.
func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any, out any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	if out != nil && !res.IsError {
		raw, err := json.Marshal(res.StructuredContent)
		plugintest.Must(t, err)
		plugintest.Must(t, json.Unmarshal(raw, out))
	}
	return res
}

// summary is a result's first text: ns-doctor's own words, or the error.
func summary(res *sdk.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); ok {
		return tc.Text
	}
	return ""
}

// settled waits until the namespace controller has written condition ct
// and then leaves the namespace alone for two seconds: a plan is bound to
// its resourceVersion.
func settled(t *testing.T, name string, ct v1.NamespaceConditionType) {
	t.Helper()
	ctx := context.Background()
	_, err := cluster.WaitForConditionStatus(ctx, name, time.Minute, ct, v1.ConditionTrue)
	plugintest.Must(t, err)
	last, since := "", time.Now()
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		ns, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if ns.ResourceVersion != last {
			last, since = ns.ResourceVersion, time.Now()
		}
		return time.Since(since) > 2*time.Second, nil
	})
	plugintest.Must(t, err)
}

// heldNamespace is a namespace stuck on a ConfigMap whose finalizers
// nobody removes: the orphaned-finalizer scenario.
func heldNamespace(t *testing.T, finalizers ...string) string {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, finalizers...))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	settled(t, name, v1.NamespaceFinalizersRemaining)
	return name
}

// inspector installs the pinned MCP Inspector (hack/install-inspector.sh)
// and returns its command.
func inspector(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	plugintest.Must(t, err)
	r := plugintest.Command(t, "", 10*time.Minute, nil, "bash", filepath.Join(root, "hack", "install-inspector.sh"))
	if r.Code != 0 {
		t.Fatalf("hack/install-inspector.sh: exit %d\n%s", r.Code, r.Stderr)
	}
	return strings.TrimSpace(r.Stdout)
}

// serveHTTP starts `kubectl-ns_doctor mcp --http=127.0.0.1:0 args...` and
// returns its URL, read from the line it prints on stderr.
func serveHTTP(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	p := plugintest.Start(t, binary(), kubeconfig, append([]string{"mcp", "--http=127.0.0.1:0"}, args...)...)
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	serving := regexp.MustCompile(`serving at (http://\S+)`)
	var url string
	plugintest.Poll(t, 30*time.Second, "the HTTP server saying where it serves", func() (bool, error) {
		if exited, code := p.Exited(); exited {
			return false, fmt.Errorf("it exited %d:\n%s", code, p.Stderr.String())
		}
		if m := serving.FindStringSubmatch(p.Stderr.String()); m != nil {
			url = m[1]
		}
		return url != "", nil
	})
	return url
}

// quoted is s as a Go string literal would show it, to find escapes.
func quoted(s string) string { return fmt.Sprintf("%q", s) }
