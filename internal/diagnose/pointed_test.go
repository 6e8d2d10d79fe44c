package diagnose_test

import (
	"strings"
	"testing"

	. "github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/owners"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// A namespace's own metadata finalizer whose writer runs: the object its
// name points to decides the step. Gone, or no longer selecting the
// namespace, its controller will not remove it: purge's flag for the
// namespace's finalizers comes first, and nothing says to wait or read
// its log. Still selecting it (the counter-example), or not found by a
// name the finalizer may not embed, its controller should act: its log
// comes first, as for any running owner.
func TestNamespaceFinalizerPointedObject(t *testing.T) {
	const fin = "acme.test/tenant-team-a"
	pointed := func(p owners.Pointed) OwnerState {
		s := inferred(OwnerRunningReady, acmeOperator, false)
		p.Looked, p.Names = []string{"tenants.acme.test"}, []string{"tenant-team-a", "team-a"}
		s.Inferred.Pointed = &p
		return s
	}
	for _, tc := range []struct {
		name     string
		state    OwnerState
		released bool
		first    ActionKind
		words    string
	}{
		{"gone", pointed(owners.Pointed{State: owners.ObjectGone}), true, ActionPurge, "none is there: the object it was put there for is gone"},
		{"no longer selects", pointed(owners.Pointed{State: owners.ObjectPresent, Object: "tenants.acme.test/team-a", Selection: owners.NoLongerSelects, Field: "spec.namespaceSelector"}),
			true, ActionPurge, "which no longer selects this namespace (spec.namespaceSelector): its controller will not clean up here"},
		{"still selects", pointed(owners.Pointed{State: owners.ObjectPresent, Object: "tenants.acme.test/team-a", Selection: owners.Selects, Field: "spec.namespaceSelector"}),
			false, ActionOwnerLogs, "which still selects this namespace (spec.namespaceSelector): its controller should remove it"},
		{"not found, no kind named", pointed(owners.Pointed{State: owners.ObjectNotFound}), false, ActionOwnerLogs, "no object of tenants.acme.test is named as in its name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := observation()
			obs.Namespace.Finalizers = []string{fin}
			obs.Evidence.NamespaceOwners = map[string]OwnerState{fin: tc.state}
			var meta *Blocker
			for _, b := range Diagnose(obs).Blockers {
				if f, ok := b.Facts.(*NamespaceFinalizerFacts); ok && f.Token == "" {
					meta = &b
				}
			}
			if meta == nil {
				t.Fatal("no metadata finalizer blocker")
			}
			f := meta.Facts.(*NamespaceFinalizerFacts)
			w := printer.WordsOf(*meta)
			if (len(f.Released) == 1) != tc.released || meta.Actions[0].Kind != tc.first || !strings.Contains(strings.Join(w.Evidence, "\n"), tc.words) {
				t.Errorf("released %v, actions %+v, words %+v", f.Released, meta.Actions, w)
			}
			if tc.released && (meta.Actions[0].Flag != FlagRemoveNamespaceFinalizers || !strings.HasPrefix(w.NextStep, "waiting will not help: kubectl ns-doctor purge demo --remove-namespace-finalizers") ||
				!strings.Contains(w.Summary, "its writer runs but will not remove it: the object its name points to") || strings.Contains(w.NextStep, "logs")) {
				t.Errorf("released: summary %q, step %q", w.Summary, w.NextStep)
			}
			if !tc.released && (strings.Contains(w.Summary, "will not remove it") || !strings.Contains(w.NextStep, "kubectl logs -n acme-system deployment/acme-operator")) {
				t.Errorf("not released: summary %q, step %q", w.Summary, w.NextStep)
			}
		})
	}
}
