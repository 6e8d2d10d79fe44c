package printer

import (
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// An inference is said with its confidence and what it rests on; one that
// names nobody says what was looked at; one beside the catalogue says
// when the cluster shows another owner than the catalogue's.
func TestOwnerWords(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	sa := owners.Subject{Kind: "ServiceAccount", Namespace: "acme-system", Name: "acme"}
	w := &owners.Workload{Kind: "Deployment", Namespace: "acme-system", Name: "acme", Ready: 0, Want: 1}
	for _, tc := range []struct {
		name  string
		state diagnose.OwnerState
		want  []string
	}{
		{"certain, not ready", diagnose.OwnerState{State: diagnose.OwnerNotReady, Inferred: &owners.Inference{Confidence: owners.Certain, RBACRead: true, WorkloadsRead: true,
			SetBy:    []owners.Manager{{Name: "kubectl-edit", Applier: true}, {Name: "acme", Time: &at, Object: "widgets/w"}},
			Identity: &sa, Grant: &owners.Grant{Verb: "patch", Role: owners.Ref{Kind: "ClusterRole", Name: "acme"}, Binding: owners.Ref{Kind: "ClusterRoleBinding", Name: "acme"}}, Workload: w}},
			[]string{`not in ns-doctor's catalogue; certain owner: set by field manager "acme" on widgets/w (its last write 2026-03-01T10:00:00Z)`,
				"serviceaccount acme-system/acme may patch it through ClusterRole/acme (ClusterRoleBinding/acme)", "deployment acme-system/acme runs as it: 0/1 ready"}},
		{"none, several candidates, set by kubectl", diagnose.OwnerState{State: diagnose.OwnerUnknown, Inferred: &owners.Inference{Confidence: owners.None, RBACRead: true,
			SetBy: []owners.Manager{{Name: "kubectl-client-side-apply", Applier: true}}, Candidates: []owners.Subject{sa}, CandidateCount: 7}},
			[]string{"unknown owner: not in ns-doctor's catalogue, and the cluster names no owner", "a tool that applies manifests",
				"7 identities may remove it, none set it: serviceaccount acme-system/acme and 6 more"}},
		{"none, RBAC unread, nothing recorded", diagnose.OwnerState{State: diagnose.OwnerUnknown, Inferred: &owners.Inference{Confidence: owners.None,
			Object: &owners.Object{APIVersion: "tenancy.example.com/v1", Kind: "Space", Name: "team-a", State: owners.ObjectGone}}},
			[]string{"no field manager recorded setting it", "RBAC could not be read", "the namespace's owner Space team-a (tenancy.example.com/v1) is gone"}},
		{"the catalogue's workload elsewhere", diagnose.OwnerState{State: diagnose.OwnerRunningReady, Owner: "Acme", Looked: []diagnose.WorkloadRef{{Kind: "Deployment", Namespace: "acme", Name: "acme-controller"}},
			Inferred: &owners.Inference{Confidence: owners.Likely, Workload: &owners.Workload{Kind: "Deployment", Namespace: "ops", Name: "acme", Ready: 1, Want: 1}, WorkloadsRead: true}},
			[]string{"none of its usual workloads found: deployment acme/acme-controller; the cluster shows another owner than the catalogue's: likely owner",
				"deployment ops/acme is named as that field manager: 1/1 ready", "RBAC could not be read"}},
		{"deleted with the namespace", diagnose.OwnerState{State: diagnose.OwnerDeletedWithNamespace, Inferred: &owners.Inference{Confidence: owners.Likely, Identity: &sa, InNamespace: true, RBACRead: true}},
			[]string{"likely owner", "it lived in this namespace and was deleted with it"}},
		{"its own namespace terminating", diagnose.OwnerState{State: diagnose.OwnerNotFound, Inferred: &owners.Inference{Confidence: owners.Likely, Identity: &sa, OwnerNamespace: owners.NamespaceTerminating, RBACRead: true, WorkloadsRead: true}},
			[]string{"no Deployment, StatefulSet or DaemonSet runs as it", "its namespace is terminating"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := OwnerEvidence(tc.state)
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("%q lacks %q", got, want)
				}
			}
		})
	}
	if ownerWords(diagnose.OwnerState{State: diagnose.OwnerDeletedWithNamespace}) != "deleted with this namespace" {
		t.Error("owner words")
	}
}
