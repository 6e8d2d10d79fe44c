package diagnose_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	. "github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
	"github.com/ns-doctor/ns-doctor/internal/owners"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// The finalizer of an operator the catalogue does not know, and one the
// catalogue knows without naming a workload to look for.
const (
	cnpgFinalizer      = "cnpg.io/cleanup"
	crossplaneManaged  = "finalizer.managedresource.crossplane.io"
	crossplaneProvider = "deployment crossplane-system/provider-aws-s3"
)

var (
	cnpgManager = owners.Subject{Kind: "ServiceAccount", Namespace: "cnpg-system", Name: "cnpg-manager"}
	cnpgGrant   = &owners.Grant{Subject: cnpgManager, Verb: "update",
		Role: owners.Ref{Kind: "ClusterRole", Name: "cnpg-manager"}, Binding: owners.Ref{Kind: "ClusterRoleBinding", Name: "cnpg-manager"}}
	cnpgDeployment = &owners.Workload{Kind: "Deployment", Namespace: "cnpg-system", Name: "cnpg-controller-manager", ServiceAccount: "cnpg-manager", Ready: 1, Want: 1}
	s3Provider     = &owners.Workload{Kind: "Deployment", Namespace: "crossplane-system", Name: "provider-aws-s3", ServiceAccount: "provider-aws-s3", Ready: 1, Want: 1}
	other          = owners.Subject{Kind: "ServiceAccount", Namespace: "other-system", Name: "other"}
)

// certainOf is the inference that names the operator that set the
// finalizer and may remove it, with its workload.
func certainOf(w *owners.Workload, identity owners.Subject) owners.Inference {
	manager := identity.Name
	if w != nil {
		manager = w.Name
	}
	return owners.Inference{Confidence: owners.Certain, RBACRead: true, WorkloadsRead: true,
		SetBy: []owners.Manager{{Name: manager, Operation: "Update"}}, Identity: &identity, Grant: cnpgGrant, Workload: w}
}

// likelyOf rests on RBAC alone: the one identity that may remove it.
func likelyOf(w *owners.Workload, identity owners.Subject) owners.Inference {
	return owners.Inference{Confidence: owners.Likely, RBACRead: true, WorkloadsRead: true, Identity: &identity, Grant: cnpgGrant, Workload: w,
		Candidates: []owners.Subject{identity}, CandidateCount: 1}
}

// tied is two equally specific candidates: no one owner.
var tied = owners.Inference{Confidence: owners.None, RBACRead: true, WorkloadsRead: true,
	Candidates: []owners.Subject{cnpgManager, other}, CandidateCount: 2}

// catalogueOf is the catalogue's own finding for a finalizer, as
// inspect's check of its workloads gives it.
func catalogueOf(t *testing.T, finalizer string, state OwnerRunning) OwnerState {
	t.Helper()
	e := finalizers.Lookup(finalizer)
	if e == nil {
		return OwnerState{State: OwnerUnknown}
	}
	if len(e.Detect.Workloads) > 0 || e.Detect.Builtin {
		t.Fatalf("%s: the catalogue names a workload; the test needs one that names none", finalizer)
	}
	return OwnerState{State: state, Owner: e.Owner}
}

// Who decides an owner's state: a certain inference always; a likely one
// where the catalogue has no finding of its own (it does not know the
// finalizer, or names no workload and the inference found the running
// one); an inference that names nobody never.
func TestWithInference(t *testing.T) {
	elsewhere := OwnerState{State: OwnerNotFound, Owner: "Acme", Looked: []WorkloadRef{{Kind: "Deployment", Namespace: "acme", Name: "acme-controller"}}}
	unreadable := OwnerState{State: OwnerUnknown, Owner: "Acme", Found: &WorkloadState{WorkloadRef: WorkloadRef{Kind: "Deployment", Namespace: "acme", Name: "acme-controller"}}, Error: "forbidden"}
	for _, tc := range []struct {
		name     string
		state    OwnerState
		in       owners.Inference
		want     OwnerRunning
		source   OwnerSource
		owner    string // the inferred owner named
		workload string // the owner's workload, for its log or its check
	}{
		{"not catalogued, certain", catalogueOf(t, cnpgFinalizer, OwnerUnknown), certainOf(cnpgDeployment, cnpgManager),
			OwnerRunningReady, SourceInferred, "deployment cnpg-system/cnpg-controller-manager", "cnpg-controller-manager"},
		{"not catalogued, likely", catalogueOf(t, cnpgFinalizer, OwnerUnknown), likelyOf(cnpgDeployment, cnpgManager),
			OwnerRunningReady, SourceInferred, "deployment cnpg-system/cnpg-controller-manager", "cnpg-controller-manager"},
		{"not catalogued, certain, no workload runs as it", catalogueOf(t, cnpgFinalizer, OwnerUnknown), certainOf(nil, cnpgManager),
			OwnerNotFound, SourceInferred, "serviceaccount cnpg-system/cnpg-manager", ""},
		{"not catalogued, two candidates tied", catalogueOf(t, cnpgFinalizer, OwnerUnknown), tied, OwnerUnknown, "", "", ""},
		{"catalogued without workloads, likely with its running deployment", catalogueOf(t, crossplaneManaged, OwnerNotChecked), likelyOf(s3Provider, owners.Subject{Kind: "ServiceAccount", Namespace: "crossplane-system", Name: "provider-aws-s3"}),
			OwnerRunningReady, SourceInferred, crossplaneProvider, "provider-aws-s3"},
		{"catalogued without workloads, likely without a workload", catalogueOf(t, crossplaneManaged, OwnerNotChecked), likelyOf(nil, cnpgManager),
			OwnerNotChecked, SourceCatalogue, "serviceaccount cnpg-system/cnpg-manager", ""},
		{"catalogued without workloads, nobody named", catalogueOf(t, crossplaneManaged, OwnerNotChecked), tied, OwnerNotChecked, SourceCatalogue, "", ""},
		{"catalogued, its workload not found, likely elsewhere", elsewhere, likelyOf(s3Provider, cnpgManager), OwnerNotFound, SourceCatalogue, crossplaneProvider, "provider-aws-s3"},
		{"catalogued, its workload not found, certain elsewhere", elsewhere, certainOf(s3Provider, cnpgManager), OwnerRunningReady, SourceInferred, crossplaneProvider, "provider-aws-s3"},
		{"catalogued, its workload unreadable, certain", unreadable, certainOf(s3Provider, cnpgManager), OwnerRunningReady, SourceInferred, crossplaneProvider, "provider-aws-s3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := WithInference(tc.state, tc.in)
			workload := ""
			if w := got.Workload(); w != nil {
				workload = w.Name
			}
			if got.State != tc.want || got.Source() != tc.source || got.InferredOwner() != tc.owner || workload != tc.workload {
				t.Errorf("state %s, source %q, inferred owner %q, workload %q; want %s, %q, %q, %q",
					got.State, got.Source(), got.InferredOwner(), workload, tc.want, tc.source, tc.owner, tc.workload)
			}
			if got.Source() == SourceInferred && got.CatalogueState() != tc.state.State {
				t.Errorf("the catalogue's own finding %s is lost (want %s)", got.CatalogueState(), tc.state.State)
			}
		})
	}
}

// The table says what the evidence says: an owner the inference names is
// the OWNER, marked inferred with its confidence, and the workload it
// found running is RUNNING; where the evidence names nobody (nothing, or
// two candidates alike), the table keeps "unknown owner" and claims no
// one; a catalogued finalizer keeps the catalogue's owner.
func TestTableCarriesTheInference(t *testing.T) {
	for _, tc := range []struct {
		name      string
		finalizer string
		state     OwnerState
		owner     string
		source    OwnerSource
		running   OwnerRunning
		row       []string // in the finalizer's table row
		absent    []string // nowhere in the human view
		evidence  string   // in the line under the table
	}{
		{name: "the contradiction: not catalogued, certain", finalizer: cnpgFinalizer,
			state: WithInference(catalogueOf(t, cnpgFinalizer, OwnerUnknown), certainOf(cnpgDeployment, cnpgManager)),
			owner: "deployment cnpg-system/cnpg-controller-manager", source: SourceInferred, running: OwnerRunningReady,
			row:      []string{"deployment cnpg-system/cnpg-controller-manager (inferred, certain)", "Running 1/1"},
			absent:   []string{"unknown owner"},
			evidence: "not in ns-doctor's catalogue; certain owner: set by field manager \"cnpg-controller-manager\""},
		{name: "nothing points at an owner", finalizer: cnpgFinalizer,
			state:  WithInference(catalogueOf(t, cnpgFinalizer, OwnerUnknown), owners.Inference{Confidence: owners.None, RBACRead: true, WorkloadsRead: true}),
			source: "", running: OwnerUnknown,
			row:      []string{"unknown owner", "Unknown"},
			absent:   []string{"(inferred", "Running", "cnpg-system"},
			evidence: "unknown owner: not in ns-doctor's catalogue, and the cluster names no owner"},
		{name: "two candidates alike", finalizer: cnpgFinalizer,
			state:  WithInference(catalogueOf(t, cnpgFinalizer, OwnerUnknown), tied),
			source: "", running: OwnerUnknown,
			row:      []string{"unknown owner", "Unknown"},
			absent:   []string{"(inferred", "Running"},
			evidence: "2 identities may remove it, none set it: serviceaccount cnpg-system/cnpg-manager, serviceaccount other-system/other"},
		{name: "catalogued without workloads, its running deployment inferred", finalizer: crossplaneManaged,
			state: WithInference(catalogueOf(t, crossplaneManaged, OwnerNotChecked),
				likelyOf(s3Provider, owners.Subject{Kind: "ServiceAccount", Namespace: "crossplane-system", Name: "provider-aws-s3"})),
			owner: finalizers.Lookup(crossplaneManaged).Owner, source: SourceCatalogue, running: OwnerRunningReady,
			row:      []string{"Running 1/1 (inferred, likely)"},
			absent:   []string{"NotChecked", "unknown owner", "none of its usual workloads found"},
			evidence: "the catalogue names no workload to look for; likely owner: serviceaccount crossplane-system/provider-aws-s3"},
		{name: "catalogued without workloads, nobody named", finalizer: crossplaneManaged,
			state: WithInference(catalogueOf(t, crossplaneManaged, OwnerNotChecked), tied),
			owner: finalizers.Lookup(crossplaneManaged).Owner, source: SourceCatalogue, running: OwnerNotChecked,
			row:      []string{"NotChecked"},
			absent:   []string{"(inferred", "Running"},
			evidence: "the catalogue names no workload to look for; the cluster names no owner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := with(observation(), widgets, terminatingItem("w", 5*time.Minute, tc.finalizer))
			obs.Evidence.Owners = map[string]OwnerState{tc.finalizer: tc.state}
			r := Diagnose(obs)
			if len(r.Finalizers) != 1 {
				t.Fatalf("finalizers %+v", r.Finalizers)
			}
			f := r.Finalizers[0]
			if f.Owner != tc.owner || f.OwnerSource != tc.source || f.OwnerState.State != tc.running {
				t.Errorf("owner %q (%q), state %s; want %q (%q), %s", f.Owner, f.OwnerSource, f.OwnerState.State, tc.owner, tc.source, tc.running)
			}
			doc := printer.Diagnosis(r).Finalizers[0]
			if doc.Owner != tc.owner || doc.OwnerSource != tc.source || doc.OwnerState.Source != f.OwnerState.Source() {
				t.Errorf("document: owner %q (%q), state source %q", doc.Owner, doc.OwnerSource, doc.OwnerState.Source)
			}
			var out bytes.Buffer
			if err := (printer.Human{Now: now}).Diagnosis(&out, r); err != nil {
				t.Fatal(err)
			}
			human := out.String()
			row := tableRow(human, tc.finalizer)
			for _, want := range tc.row {
				if !strings.Contains(row, want) {
					t.Errorf("table row %q lacks %q", row, want)
				}
			}
			for _, no := range tc.absent {
				if strings.Contains(row, no) || strings.Contains(evidenceOf(human, tc.finalizer), no) {
					t.Errorf("%q in the finalizer's row or evidence:\n%s", no, human)
				}
			}
			if flat := strings.Join(strings.Fields(evidenceOf(human, tc.finalizer)), " "); !strings.Contains(flat, tc.evidence) {
				t.Errorf("evidence %q lacks %q", flat, tc.evidence)
			}
			if strings.Contains(human, ": ;") {
				t.Errorf("an empty list in:\n%s", human)
			}
		})
	}
}

// tableRow is the finalizer's row of the "Finalizers holding content"
// table.
func tableRow(human, finalizer string) string {
	_, section, _ := strings.Cut(human, "Finalizers holding content\n")
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, finalizer+" ") {
			return line
		}
	}
	return ""
}

// evidenceOf is the finalizer's evidence under the table, with its
// wrapped lines.
func evidenceOf(human, finalizer string) string {
	_, section, _ := strings.Cut(human, "Finalizers holding content\n")
	_, rest, found := strings.Cut(section, "  "+finalizer+": ")
	if !found {
		return ""
	}
	lines := strings.Split(rest, "\n")
	out := lines[0]
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "    ") || strings.HasPrefix(strings.TrimSpace(l), "guards:") {
			break
		}
		out += " " + strings.TrimSpace(l)
	}
	return out
}
