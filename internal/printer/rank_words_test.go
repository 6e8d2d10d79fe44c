package printer

import (
	"strings"
	"testing"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// An identity ranked first without a field manager says why (its grant's
// scope, the finalizers subresource, its API, the names that carry the
// domain, bounded); candidates ranked first together are "likely one of"
// them, named once; the object a namespace finalizer points to says what
// follows for its writer.
func TestRankAndPointedWords(t *testing.T) {
	sa := owners.Subject{Kind: "ServiceAccount", Namespace: "platform", Name: "controller"}
	other := owners.Subject{Kind: "ServiceAccount", Namespace: "platform", Name: "legacy"}
	grant := &owners.Grant{Verb: "update", Scope: owners.ScopeResource, Role: owners.Ref{Kind: "ClusterRole", Name: "acme-manager-role"}, Binding: owners.Ref{Kind: "ClusterRoleBinding", Name: "acme"}}
	for _, tc := range []struct {
		name    string
		in      owners.Inference
		want    []string
		notWant []string
	}{
		{"ranked first", owners.Inference{Confidence: owners.Likely, Identity: &sa, Grant: grant, CandidateCount: 4, FinalizersGrant: true, WritesAPI: true,
			Affinity: []string{"acme-manager-role", "acme", "acme-binding", "acme-extra"}, RBACRead: true, WorkloadsRead: true},
			[]string{"ranked first of 4 identities that may remove it: its grant names the held resource itself, it may update their finalizers subresource, it writes the finalizer's own API, its names carry the finalizer's domain: acme-manager-role, acme, acme-binding and 1 more",
				"no Deployment, StatefulSet or DaemonSet runs as it"}, nil},
		{"certain says no rank", owners.Inference{Confidence: owners.Certain, Identity: &sa, Grant: grant, CandidateCount: 4, RBACRead: true},
			nil, []string{"ranked first"}},
		{"one of", owners.Inference{Confidence: owners.None, OneOf: []owners.Subject{sa, other}, Candidates: []owners.Subject{sa, other}, CandidateCount: 3, RBACRead: true},
			[]string{"likely one of serviceaccount platform/controller, serviceaccount platform/legacy: their grants rank alike, and nothing tells them apart",
				"3 identities may remove it, none set it"}, []string{"none set it: serviceaccount"}},
		{"pointed gone", owners.Inference{Confidence: owners.Certain, RBACRead: true, Pointed: &owners.Pointed{State: owners.ObjectGone, Looked: []string{"tenants.acme.test"}, Names: []string{"tenant-a", "a"}}},
			[]string{"its name points to an object of tenants.acme.test (tenant-a, a), and none is there"}, nil},
		{"pointed deleting, still selecting", owners.Inference{Confidence: owners.Certain, RBACRead: true, Pointed: &owners.Pointed{State: owners.ObjectDeleting,
			Object: "tenants.acme.test/a", Selection: owners.Selects, Field: "spec.namespaceSelector"}},
			[]string{"its name points to tenants.acme.test/a, being deleted, which still selects this namespace (spec.namespaceSelector)"}, nil},
		{"pointed without selector", owners.Inference{Confidence: owners.Certain, RBACRead: true, Pointed: &owners.Pointed{State: owners.ObjectPresent,
			Object: "tenants.acme.test/a", Selection: owners.NoSelector}},
			[]string{"which is there (its spec names no namespace selector)"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			got := OwnerEvidence(diagnose.OwnerState{State: diagnose.OwnerUnknown, Inferred: &in})
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("%q has %q", got, w)
				}
			}
		})
	}
}
