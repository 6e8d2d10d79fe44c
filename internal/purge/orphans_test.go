package purge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

// leftovers holds what namespace "old", finalized by hand, left in storage.
func leftovers() *kubetest.Cluster {
	c := kubetest.New()
	c.Serve(widgetsGVR, "Widget", kubetest.AllVerbs)
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "old", "plain"))
	c.Add(widgetsGVR, kubetest.Object("Widget", "old", "w1", "example.com/cleanup"))
	return c
}

// A plan over a former namespace plays the pass with nothing sent, and
// says a namespace is needed for the strips.
func TestOrphansPlan(t *testing.T) {
	c := leftovers()
	r, err := purgerIn(c, "old", Options{Orphans: true, Escalations: Asked{diagnose.FlagRemoveFinalizers: {"example.com/*"}}}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w := writes(c); len(w) != 0 {
		t.Fatalf("a plan sent writes: %v", w)
	}
	if !r.Orphans || r.Outcome != OutcomePlanned || !r.Finalize.Would || len(r.RowsOf(RowStrip)) != 1 {
		t.Errorf("orphans %v, outcome %s, finalize %+v, rows %+v", r.Orphans, r.Outcome, r.Finalize, r.Rows)
	}
	if !hasWarning(r, WarnRevivalNeeded) {
		t.Errorf("warnings %+v", r.Warnings)
	}
}

// Without strips, a force run only deletes: no namespace is created, and
// none is finalized.
func TestOrphansForceWithoutStrips(t *testing.T) {
	c := leftovers()
	r, err := purgerIn(c, "old", Options{Orphans: true, DryRun: DryRunNone, BackupDir: t.TempDir(), Timeout: 3 * time.Second}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes(c) {
		if strings.Contains(w, "namespaces") {
			t.Errorf("a request to a namespace: %s", w)
		}
	}
	if r.Outcome != OutcomeRemaining || r.BackedUp != 2 || c.Get(kubetest.ConfigMaps, "old", "plain") != nil {
		t.Errorf("outcome %s, saved %d; the widget waits for its finalizer, the rest goes", r.Outcome, r.BackedUp)
	}
}

func TestOrphansOfALiveNamespaceAreRefused(t *testing.T) {
	c := stuck()
	if _, err := purger(c, Options{Orphans: true}).Run(context.Background()); !errors.Is(err, ErrNamespaceExists) {
		t.Errorf("err %v, want ErrNamespaceExists", err)
	}
}

// A namespace is re-created only for finalizers the flags strip: with
// none of them left, the run deletes what it can and creates nothing.
func TestOrphansRevivalOnlyForMatchingFinalizers(t *testing.T) {
	c := leftovers()
	opts := Options{Orphans: true, DryRun: DryRunNone, BackupDir: t.TempDir(), Timeout: 2 * time.Second,
		Escalations: Asked{diagnose.FlagRemoveFinalizers: {"other.io/*"}}}
	r, err := purgerIn(c, "old", opts).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes(c) {
		if strings.Contains(w, "namespaces") {
			t.Errorf("a namespace request for finalizers no flag strips: %s", w)
		}
	}
	if r.Outcome != OutcomeRemaining {
		t.Errorf("outcome %s", r.Outcome)
	}
}
