package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"k8s.io/klog/v2"

	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// client-go logs through klog: -v's requests and their bodies, and the
// errors it handles in the background (an informer's failed list, a
// discovery group that failed). They quote the API server, so they get the
// escaping every cluster text gets, each entry on one line of stderr.

// routeClientLogs sends each klog entry once, at its own severity only,
// to w: none straight to the process's stderr, where klog would write
// errors raw besides.
func routeClientLogs(w io.Writer) {
	fs := flag.NewFlagSet("klog-output", flag.ContinueOnError)
	klog.InitFlags(fs)
	for _, kv := range [][2]string{{"logtostderr", "false"}, {"alsologtostderr", "false"}, {"one_output", "true"}, {"stderrthreshold", "FATAL"}} {
		_ = fs.Set(kv[0], kv[1])
	}
	klog.SetOutput(w)
}

// escapedLines writes each klog entry (one Write each, klog serializes
// them) as one escaped line.
type escapedLines struct{ w io.Writer }

func (l escapedLines) Write(p []byte) (int, error) {
	_, err := fmt.Fprintln(l.w, printer.Escape(strings.TrimSuffix(string(p), "\n")))
	return len(p), err
}
