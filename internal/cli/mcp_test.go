package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/mcp"
)

func TestMCPUsageErrors(t *testing.T) {
	for args, want := range map[string]string{
		"mcp --allow-purge=maybe":                "invalid --allow-purge",
		"mcp --http=0.0.0.0:8765":                "refusing --http=0.0.0.0:8765",
		"mcp --http=:8765":                       "refusing --http=:8765",
		"mcp --http=10.1.2.3:80":                 "loopback",
		"mcp --http=localhost":                   "invalid --http",
		"mcp --grace=-1s":                        "--grace must not be negative",
		"mcp --timeout=0s":                       "--timeout must be positive",
		"mcp demo":                               "takes exactly 0 argument",
		"mcp --allow-purge without-confirmation": "--allow-purge takes its value after '=' (--allow-purge=without-confirmation",
		"mcp --all-contexts --contexts=a*":       "choose one",
		"mcp --ordered-deletion=sometimes":       "ordered-deletion",
		"mcp --bogus":                            "unknown flag: --bogus",
	} {
		c := stuckCluster()
		code, out, errOut := runFake(t, c, strings.Fields(args)...)
		if code != ExitUsage || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 || out != "" {
			t.Errorf("%s: exit %d, stderr %q, want %q on one line", args, code, errOut, want)
		}
		if len(c.Requests) != 0 {
			t.Errorf("%s: sent %v before refusing", args, c.Requests)
		}
	}
}

// The command serves MCP over its stdin and stdout; the client's
// disconnection ends it with exit 0, and stdout holds nothing but the
// protocol.
func TestMCPServesOverStdio(t *testing.T) {
	c := stuckCluster()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut bytes.Buffer
	flags := genericclioptions.NewConfigFlags(true)
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"mcp", "--allow-purge"}, genericiooptions.IOStreams{In: inR, Out: outW, ErrOut: &errOut}, flags, fakeFactory{flags, c})
		_ = outW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tool.Name] = true
	}
	if !names[mcp.ToolExplain] || !names[mcp.ToolPurge] || !names[mcp.ToolRescuePlan] || !names[mcp.ToolRescue] {
		t.Fatalf("tools: %v", names)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolExplain, Arguments: map[string]any{"namespace": "demo"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "stuck in Terminating") {
		t.Fatalf("explain: %v %+v", err, res)
	}
	_ = cs.Close()
	_ = inW.Close()
	select {
	case code := <-done:
		if code != ExitOK || !strings.Contains(errOut.String(), "serving over stdio") || !strings.Contains(errOut.String(), "each call confirmed by the person") {
			t.Fatalf("exit %d, stderr %q", code, errOut.String())
		}
	case <-ctx.Done():
		t.Fatal("the server did not end with its client")
	}
}

// Every flag of mcp is documented in docs/integrations.md and offered by
// the shell completion.
func TestEveryMCPFlagIsDocumentedAndCompleted(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "integrations.md"))
	if err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(true)
	root := newRootCommand(flags, flagsFactory{flags}, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	cmd, _, err := root.Find([]string{"mcp"})
	if err != nil {
		t.Fatal(err)
	}
	completed := completion(t, "mcp", "--")
	n := 0
	cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		n++
		if !strings.Contains(string(doc), "`--"+f.Name) {
			t.Errorf("--%s is not documented in docs/integrations.md", f.Name)
		}
		if !strings.Contains(completed, "--"+f.Name+"\t") && !strings.Contains(completed, "--"+f.Name+"\n") {
			t.Errorf("completion of 'mcp --' does not offer --%s", f.Name)
		}
	})
	if n < 8 {
		t.Fatalf("only %d mcp flags seen", n)
	}
	if got := completion(t, "mcp", "--allow-purge="); !strings.Contains(got, "without-confirmation") {
		t.Errorf("completion of --allow-purge's values: %q", got)
	}
}
