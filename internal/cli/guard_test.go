package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/ns-doctor/ns-doctor/internal/guard"
)

func TestGuardFlagsValidate(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // empty: valid
		addr string
	}{
		{[]string{"--guard=warn", "--guard-addr=127.0.0.1:8443"}, "", "127.0.0.1:8443"},
		{[]string{"--guard=deny", "--guard-addr=localhost:0", "--guard-timeout=29s"}, "", "localhost:0"},
		{[]string{"--guard=warn", "--guard-service=ns-doctor/ns-doctor-guard"}, "", ":9443"},
		{[]string{"--guard=warn", "--guard-service=ns-doctor/ns-doctor-guard", "--guard-cert-dir=/c"}, "", ":9443"},
		{[]string{"--guard=warn", "--guard-service=ns-doctor"}, "--guard-service is NAMESPACE/NAME", ""},
		{[]string{"--guard=warn", "--guard-service=a/b/c"}, "--guard-service is NAMESPACE/NAME", ""},
		{[]string{"--guard=warn", "--guard-service=a/b", "--guard-cert-dir=/c", "--guard-secret=s"}, "exclude each other", ""},
		{[]string{"--guard=warn", "--guard-addr=127.0.0.1:1", "--guard-secret=s"}, "--guard-secret is for the guard in the cluster", ""},
		{[]string{"--guard=warn", "--guard-addr=:8443"}, "not a wildcard", ""},
		{[]string{"--guard=warn", "--guard-addr=[::]:8443"}, "not a wildcard", ""},
		{[]string{"--guard=warn", "--guard-addr=8443"}, "--guard needs --guard-addr=HOST:PORT", ""},
		{[]string{"--guard=warn", "--guard-addr=127.0.0.1:1", "--guard-timeout=0s"}, "--guard-timeout must be above 0", ""},
		{[]string{"--guard=Warn", "--guard-addr=127.0.0.1:1"}, "--guard must be warn or deny", ""},
		{[]string{"--guard-exempt-groups=a"}, "--guard-exempt-groups is the guard's", ""},
		{[]string{"--guard", "--guard-addr=127.0.0.1:8443"}, "", "127.0.0.1:8443"},
		{nil, "", ""},
	} {
		g := &guardFlags{}
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		g.addFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := g.validate(fs)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != ExitUsage):
			t.Errorf("%v: %v, want a usage error with %q", c.args, err, c.want)
		case c.want == "" && g.Addr != c.addr:
			t.Errorf("%v: address %q, want %q", c.args, g.Addr, c.addr)
		case len(c.args) > 0 && c.args[0] == "--guard" && g.Mode != string(guard.ModeWarn):
			t.Errorf("a bare --guard: mode %q, want warn", g.Mode)
		}
	}
}

// "--guard deny" reads as --guard (warn) and a stray "deny": the error says
// where the value goes instead of cobra's "unknown command".
func TestGuardModeAfterASpace(t *testing.T) {
	c := stuckCluster()
	code, out, errOut := runFake(t, c, "watch", "--guard", "deny", "--guard-addr=127.0.0.1:8443")
	if code != ExitUsage || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "--guard takes its value after '=' (--guard=deny") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if len(c.Requests) != 0 {
		t.Errorf("sent %v before refusing", c.Requests)
	}
}
