package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// TestClientLogsAreEscaped: what client-go logs (here an error as an
// informer reports a failed list, quoting the server on two lines)
// reaches stderr once, escaped, on one line; nothing goes to the
// process's own stderr besides.
func TestClientLogsAreEscaped(t *testing.T) {
	var errOut bytes.Buffer
	routeClientLogs(escapedLines{&errOut})
	t.Cleanup(func() { routeClientLogs(io.Discard) })
	utilruntime.HandleError(errors.New("failed to list *v1.Namespace: the server says \x1b]0;owned\x07 \x1b[2J\nforged line"))
	klog.Flush()
	got := errOut.String()
	if strings.ContainsAny(got, "\x1b\x07") || strings.Count(got, "\n") != 1 {
		t.Fatalf("klog's entry reached stderr raw or more than once: %q", got)
	}
	if !strings.Contains(got, `failed to list *v1.Namespace: the server says ^[]0;owned\x07 ^[[2J\n`) {
		t.Fatalf("klog's entry is not the escaped entry: %q", got)
	}
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, want := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "one_output": "true", "stderrthreshold": "3"} {
		if v := fs.Lookup(name).Value.String(); v != want {
			t.Errorf("klog's %s is %s, want %s (an entry would reach the process's stderr raw)", name, v, want)
		}
	}
}
