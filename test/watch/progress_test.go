package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestWatchTellsProgressFromStuck: content held by a finalizer past
// --grace, whose owner (the test) releases an object every second, is
// going: the watch says so with the rate and the time left, and exports
// no blocker; once the owner stops, the next diagnoses say stuck.
func TestWatchTellsProgressFromStuck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	must(t, cluster.CreateNamespace(ctx, ns))
	const n = 12
	for i := range n {
		must(t, cluster.CreateConfigMap(ctx, ns, fmt.Sprintf("held-%02d", i), nil, "example.com/slow-owner"))
	}
	must(t, cluster.DeleteNamespace(ctx, ns))
	t.Cleanup(func() {
		for i := range n {
			_ = cluster.ReleaseConfigMap(context.Background(), ns, fmt.Sprintf("held-%02d", i))
		}
	})
	w := startWatch(t, cp.Kubeconfig, "--after=0s", "--resync=2s", "--grace=0s", "-o", "json")
	label := fmt.Sprintf(`namespace=%q`, ns)
	poll(t, time.Minute, "the first diagnosis (stuck: nothing to compare with yet)", func() (bool, error) {
		return len(w.series(t, "nsdoctor_namespace_blocker", label)) > 0, nil
	})

	// The owner at work: one object a second, 8 of the 12.
	for i := range 8 {
		must(t, cluster.ReleaseConfigMap(ctx, ns, fmt.Sprintf("held-%02d", i)))
		time.Sleep(time.Second)
	}
	going := progressLines(t, w.Stdout.String(), ns)
	if len(going) == 0 {
		t.Fatalf("no diagnosis said the content is going:\n%s", tail(w.Stdout.String(), 10))
	}
	p := going[len(going)-1]
	if p.Went < 1 || p.LeftSeconds <= 0 || p.Objects < 4 || p.Subject != "example.com/slow-owner" {
		t.Errorf("progress %+v: want objects gone, a time left at that rate, the finalizer", p)
	}

	// The owner stops: stuck again within a few resyncs.
	poll(t, time.Minute, "stuck again once nothing goes", func() (bool, error) {
		return len(w.series(t, "nsdoctor_namespace_blocker", label, `kind="FinalizersRemaining"`)) > 0 &&
			strings.HasSuffix(w.series(t, "nsdoctor_namespace_stuck", label)[0], " 1"), nil
	})
}

type progress struct {
	Kind         string `json:"kind"`
	Subject      string `json:"subject"`
	Objects      int    `json:"objects"`
	Went         int    `json:"went"`
	GoingSeconds int64  `json:"goingSeconds"`
	LeftSeconds  int64  `json:"leftSeconds"`
}

// progressLines are the FinalizersProgressing entries of ns's Terminating
// diagnoses among the JSON lines.
func progressLines(t *testing.T, out, ns string) []progress {
	t.Helper()
	var found []progress
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		var doc struct {
			Namespace struct{ Name string }  `json:"namespace"`
			Verdict   struct{ State string } `json:"verdict"`
			Blockers  []json.RawMessage      `json:"blockers"`
			Progress  []progress             `json:"progress"`
		}
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			t.Fatalf("a JSON line: %v", err)
		}
		if doc.Namespace.Name != ns || doc.Verdict.State != "Terminating" {
			continue
		}
		if len(doc.Blockers) > 0 {
			t.Errorf("a Terminating diagnosis with blockers: %s", sc.Text())
		}
		for _, p := range doc.Progress {
			if p.Kind == "FinalizersProgressing" {
				found = append(found, p)
			}
		}
	}
	return found
}
