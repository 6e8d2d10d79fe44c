package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// Every flag ConfigFlags registers (the deprecated --username and
// --password too) has one decision in connectionFlags, and it holds: an
// applied flag reaches the context's own ConfigFlags with the value given,
// a refused one is a one-line usage error naming it.
func TestEveryConnectionFlagIsAppliedOrRefused(t *testing.T) {
	decided := map[string]connectionFlag{}
	for _, c := range connectionFlags {
		if _, dup := decided[c.name]; dup {
			t.Errorf("--%s is twice in connectionFlags", c.name)
		}
		decided[c.name] = c
	}
	all := pflag.NewFlagSet("all", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(true).WithDeprecatedPasswordFlag().AddFlags(all)
	seen := map[string]bool{}
	all.VisitAll(func(fl *pflag.Flag) {
		seen[fl.Name] = true
		c, ok := decided[fl.Name]
		if !ok {
			t.Errorf("--%s has no decision in connectionFlags: apply it to every context of a fleet, or refuse it", fl.Name)
			return
		}
		value := map[string]string{"string": "x-" + fl.Name, "bool": "true", "stringArray": "k=v"}[fl.Value.Type()]
		if value == "" {
			t.Errorf("--%s is a %s flag, which this test does not know how to set", fl.Name, fl.Value.Type())
			return
		}
		in := genericclioptions.NewConfigFlags(true).WithDeprecatedPasswordFlag()
		fs := pflag.NewFlagSet("in", pflag.ContinueOnError)
		in.AddFlags(fs)
		if err := fs.Set(fl.Name, value); err != nil {
			t.Fatal(err)
		}
		fleet := fleetFlags{all: true}
		err := fleet.validate(in)
		out := contextFlags(in, "east")
		if c.refused != "" {
			if exitCode(err) != ExitUsage || !strings.Contains(fmt.Sprint(err), "--"+fl.Name+" ") || strings.Contains(fmt.Sprint(err), "\n") {
				t.Errorf("--%s is refused, yet validate gives %v (exit %d), not one line naming it", fl.Name, err, exitCode(err))
			}
			if fl.Name != "context" && given(c.field(out)) {
				t.Errorf("--%s is refused, yet the context's flags carry it", fl.Name)
			}
			return
		}
		if err != nil {
			t.Errorf("--%s applies to every context, yet validate refuses it: %v", fl.Name, err)
		}
		// The context's ConfigFlags, registered, show the value they hold.
		outFlags := pflag.NewFlagSet("out", pflag.ContinueOnError)
		out.AddFlags(outFlags)
		if got := outFlags.Lookup(fl.Name); got == nil || got.Value.String() != fs.Lookup(fl.Name).Value.String() {
			t.Errorf("--%s=%s is not applied to the context: its flags hold %v", fl.Name, value, got)
		}
	})
	for name := range decided {
		if !seen[name] {
			t.Errorf("connectionFlags decides --%s, which ConfigFlags does not register", name)
		}
	}
	if len(seen) < 20 {
		t.Fatalf("only %d connection flags seen", len(seen))
	}
}

// fleetFactory serves each context of a fleet from its own fake cluster,
// and keeps the connection flags the command made for each.
type fleetFactory struct {
	fakeFactory
	clusters map[string]*kubetest.Cluster

	mu  sync.Mutex
	got map[string]*genericclioptions.ConfigFlags
}

func (f *fleetFactory) ClientsFor(flags *genericclioptions.ConfigFlags) (*kube.Clients, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := *flags.Context
	f.got[name] = flags
	c, ok := f.clusters[name]
	if !ok {
		return nil, fmt.Errorf("context %q: no such fake cluster", name)
	}
	return c.Clients(), nil
}

// newFleet is a kubeconfig with contexts east and west (servers that are
// never dialled: the factory serves fakes), each with a stuck namespace.
func newFleet(t *testing.T) (*fleetFactory, string) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	for _, name := range []string{"east", "west"} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + name + ".example.invalid:6443"}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "token-" + name}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	cfg.CurrentContext = "east"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	f := &fleetFactory{clusters: map[string]*kubetest.Cluster{"east": stuckCluster(), "west": stuckCluster()}, got: map[string]*genericclioptions.ConfigFlags{}}
	return f, kubeconfig
}

// runFleet runs ns-doctor in-process with f as its factory.
func runFleet(t *testing.T, f *fleetFactory, args ...string) (int, string, string) {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(true)
	f.fakeFactory = fakeFactory{ConfigFlags: flags}
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, flags, f)
	return code, out.String(), errOut.String()
}

// checkContexts: each context got clients built from flags that name it,
// reach its own server, and carry the user's impersonation and timeout.
func checkContexts(t *testing.T, f *fleetFactory, user string, groups []string, timeout time.Duration) {
	t.Helper()
	for _, name := range []string{"east", "west"} {
		flags := f.got[name]
		if flags == nil {
			t.Errorf("no clients asked for context %s", name)
			continue
		}
		cfg, err := flags.ToRESTConfig()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cfg.Host != "https://"+name+".example.invalid:6443" || cfg.Impersonate.UserName != user || !slices.Equal(cfg.Impersonate.Groups, groups) ||
			cfg.Timeout != timeout || cfg.BearerToken != "token-"+name {
			t.Errorf("%s: host %s, impersonating %q %v, timeout %s, its own token %v", name, cfg.Host, cfg.Impersonate.UserName, cfg.Impersonate.Groups, cfg.Timeout, cfg.BearerToken == "token-"+name)
		}
	}
}

func TestFleetExplainAppliesTheFlagsToEachContext(t *testing.T) {
	f, kubeconfig := newFleet(t)
	code, out, errOut := runFleet(t, f, "explain", "--all-contexts", "--kubeconfig", kubeconfig, "--request-timeout=7s", "--as=alice", "--as-group=team", "-o", "json")
	var list printer.DiagnosisListDocument
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != ExitStuck || len(list.Items) != 2 || len(list.Clusters) != 2 {
		t.Fatalf("exit %d, %v, stderr %q\n%s", code, err, errOut, out)
	}
	if list.Items[0].Context != "east" || list.Items[1].Context != "west" {
		t.Errorf("items from %s and %s, want east and west", list.Items[0].Context, list.Items[1].Context)
	}
	checkContexts(t, f, "alice", []string{"team"}, 7*time.Second)
}

func TestFleetPurgeAppliesTheFlagsToEachContext(t *testing.T) {
	f, kubeconfig := newFleet(t)
	code, out, errOut := runFleet(t, f, "purge", "--contexts=*", "--all-terminating", "--kubeconfig", kubeconfig, "--as=bob", "-o", "json")
	var list printer.PurgeListDocument
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != ExitOK || len(list.Items) != 2 {
		t.Fatalf("exit %d, %v, stderr %q\n%s", code, err, errOut, out)
	}
	// No --request-timeout: each context's requests still time out.
	checkContexts(t, f, "bob", nil, 30*time.Second)
}

// Each refused flag, with explain's and purge's fleet: exit 2, one line
// naming it, before any context's clients are built.
func TestFleetRefusesFlagsOfOneCluster(t *testing.T) {
	registered := pflag.NewFlagSet("root", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(true).AddFlags(registered)
	n := 0
	for _, c := range connectionFlags {
		if c.refused == "" || registered.Lookup(c.name) == nil {
			continue
		}
		n++
		for _, cmd := range [][]string{{"explain", "--all-contexts"}, {"purge", "--contexts=e*", "--all-terminating"}} {
			f, kubeconfig := newFleet(t)
			args := append(cmd, "--kubeconfig", kubeconfig, "--"+c.name+"=x")
			code, _, errOut := runFleet(t, f, args...)
			if code != ExitUsage || !strings.HasPrefix(errOut, "error: --"+c.name+" with --all-contexts or --contexts: ") || strings.Count(errOut, "\n") != 1 {
				t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
			}
			if len(f.got) > 0 || len(f.clusters["east"].Requests) > 0 {
				t.Errorf("%v: clients built (%d) or requests sent (%v) before refusing", args, len(f.got), f.clusters["east"].Requests)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d refused flags tried", n)
	}
}

// docs/usage.md names each connection flag ns-doctor registers on the line
// of its decision.
func TestFleetConnectionFlagsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "usage.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "### Many clusters")
	if start < 0 {
		t.Fatal("docs/usage.md has no section Many clusters")
	}
	section = section[start:]
	if end := strings.Index(section[1:], "\n#"); end > 0 {
		section = section[:end+1]
	}
	// A bullet, joined over its wrapped lines.
	bullet := func(prefix string) string {
		i := strings.Index(section, "- "+prefix)
		if i < 0 {
			t.Fatalf("docs/usage.md's Many clusters has no bullet %q", prefix)
		}
		b := section[i:]
		if j := strings.Index(b, "\n- "); j > 0 {
			b = b[:j]
		}
		return b
	}
	applied, refused := bullet("Connection flags applied to every context"), bullet("Connection flags refused")
	registered := pflag.NewFlagSet("root", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(true).AddFlags(registered)
	for _, c := range connectionFlags {
		if registered.Lookup(c.name) == nil {
			continue
		}
		line, what := applied, "applied"
		if c.refused != "" {
			line, what = refused, "refused"
		}
		if !strings.Contains(line, "`--"+c.name+"`") {
			t.Errorf("docs/usage.md does not list --%s among the connection flags %s", c.name, what)
		}
	}
}
