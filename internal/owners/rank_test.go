package owners

import (
	"fmt"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scoped is a grant of a ClusterRole of that scope, with the role's and
// binding's marks (names and labels).
func scoped(ns, name, role string, scope Scope, marks ...string) Grant {
	g := grant(ns, name, role)
	g.Scope, g.Marks = scope, append([]string{role}, marks...)
	return g
}

// The owner is uninstalled but its RBAC stays: no field manager names a
// candidate (its workload is gone), so the candidates are ranked by their
// grants' scope (the held resource itself over its API group), the
// finalizers subresource, writing the finalizer's API, and the affinity of
// their names and labels with the finalizer's domain or the held group.
// One ranked first alone is the likely owner; several ranked first
// together are "likely one of" them, never a guess; many such are only
// counted.
func TestRankCandidates(t *testing.T) {
	setter := Manager{Name: "gadget-reconciler", Operation: "Update"}
	owner := scoped("platform", "controller", "acme-manager-role", ScopeResource, "acme")
	bucket := scoped("storage", "bucket-controller", "bucket-controller", ScopeGroup)
	pg := scoped("db", "pg-operator", "pg-operator", ScopeGroup)
	twin := scoped("platform", "legacy-controller", "acme-legacy-manager-role", ScopeResource, "acme")
	plain := scoped("tools", "sync", "sync", ScopeResource)
	admin := scoped("ops", "editor", "gadget-editor-role", ScopeResource, "acme")
	admin.Aggregated = true
	req := func(grants []Grant, finalizers ...Grant) Request {
		return Request{Finalizer: "acme.test/cleanup", Groups: []string{"gadgets.acme.test"}, Managers: []Manager{setter},
			Grants: grants, FinalizerGrants: finalizers, RBACRead: true, WorkloadsRead: true}
	}
	for _, tc := range []struct {
		name       string
		req        Request
		confidence Confidence
		identity   string
		oneOf      []string
		finalizers bool
		affinity   []string
	}{
		{name: "one grant names the resource, with finalizers, and its role the product",
			req:        req([]Grant{bucket, pg, owner}, owner),
			confidence: Likely, identity: "serviceaccount platform/controller", finalizers: true, affinity: []string{"acme-manager-role", "acme"}},
		{name: "the scope alone tells",
			req:        req([]Grant{bucket, plain}),
			confidence: Likely, identity: "serviceaccount tools/sync"},
		{name: "the finalizers subresource tells equal scopes apart",
			req:        req([]Grant{plain, twin}, twin),
			confidence: Likely, identity: "serviceaccount platform/legacy-controller", finalizers: true, affinity: []string{"acme-legacy-manager-role", "acme"}},
		{name: "a label of the role tells equal scopes apart",
			req:        req([]Grant{bucket, scoped("x", "y", "generic-role", ScopeGroup, "acme")}),
			confidence: Likely, identity: "serviceaccount x/y", affinity: []string{"acme"}},
		{name: "counter-example: two equally specific candidates",
			req:        req([]Grant{bucket, owner, twin, pg}, owner, twin),
			confidence: None, oneOf: []string{"serviceaccount platform/controller", "serviceaccount platform/legacy-controller"}},
		{name: "a role aggregated into admin is every admin's",
			req:        req([]Grant{admin, bucket}),
			confidence: Likely, identity: "serviceaccount storage/bucket-controller"},
		{name: "the field manager still outranks every grant",
			req: Request{Finalizer: "acme.test/cleanup", Managers: []Manager{{Name: "bucket-controller"}}, Grants: []Grant{owner, bucket},
				FinalizerGrants: []Grant{owner}},
			confidence: Certain, identity: "serviceaccount storage/bucket-controller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Infer(tc.req)
			identity := ""
			if got.Identity != nil {
				identity = got.Identity.String()
			}
			var oneOf []string
			for _, s := range got.OneOf {
				oneOf = append(oneOf, s.String())
			}
			if got.Confidence != tc.confidence || identity != tc.identity || !slices.Equal(oneOf, tc.oneOf) ||
				got.FinalizersGrant != tc.finalizers || !slices.Equal(got.Affinity, tc.affinity) {
				t.Errorf("got %s %q one of %q finalizers %v affinity %q; want %s %q %q %v %q",
					got.Confidence, identity, oneOf, got.FinalizersGrant, got.Affinity, tc.confidence, tc.identity, tc.oneOf, tc.finalizers, tc.affinity)
			}
			if tc.confidence == None && (got.Identity != nil || got.Workload != nil) {
				t.Errorf("named an owner while none ranks alone: %+v", got)
			}
		})
	}
}

// A swamped cluster: many equally ranked candidates are counted and a
// few named, never all, and the owner is not said to be one of them.
func TestRankManyCandidatesStaysBounded(t *testing.T) {
	var grants []Grant
	for k := range 40 {
		grants = append(grants, scoped("ns", fmt.Sprintf("sa-%02d", k), fmt.Sprintf("role-%02d", k), ScopeGroup))
	}
	got := Infer(Request{Finalizer: "acme.test/cleanup", Grants: grants, RBACRead: true})
	if got.Confidence != None || got.CandidateCount != 40 || len(got.Candidates) != maxCandidates || got.OneOf != nil {
		t.Errorf("got %s, %d candidates named of %d, one of %v", got.Confidence, len(got.Candidates), got.CandidateCount, got.OneOf)
	}
}

// The walk says how narrowly each grant names the resource, drops the
// roles aggregated into the user-facing ones, and keeps the names and
// labels of each grant's role and binding.
func TestGrantScope(t *testing.T) {
	gadgets := []string{"gadgets"}
	x := NewIndex(RBAC{
		ClusterRoles: []rbacv1.ClusterRole{
			{ObjectMeta: metav1.ObjectMeta{Name: "acme-manager-role", Labels: map[string]string{LabelPartOf: "acme", "other": "x"},
				Annotations: map[string]string{AnnotationRelease: "acme-release"}},
				Rules: []rbacv1.PolicyRule{rule(patch, []string{"acme.test"}, []string{"*"}), rule(patch, []string{"acme.test"}, gadgets)}},
			clusterRole("group-wide", nil, rule(patch, []string{"acme.test"}, []string{"*"})),
			clusterRole("any-group", nil, rule(patch, []string{"*"}, gadgets)),
			clusterRole("everything", nil, rule(patch, []string{"*"}, []string{"*"})),
			clusterRole("gadget-editor", map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}, rule(patch, []string{"acme.test"}, gadgets)),
		},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{
			crb("acme-manager-rolebinding", "acme-manager-role", sa("platform", "controller")),
			crb("g", "group-wide", sa("x", "group")), crb("a", "any-group", sa("x", "any")),
			crb("e", "everything", sa("x", "all")), crb("ed", "gadget-editor", sa("x", "editor")),
		},
	})
	got := map[string]string{}
	for _, g := range x.Who(Access{Verbs: patch, Group: "acme.test", Resource: "gadgets", Namespace: "n"}) {
		got[g.Subject.Name] = fmt.Sprintf("%s specific=%v", g.Scope, g.Specific())
		if g.Subject.Name == "controller" && !slices.Equal(g.Marks, []string{"acme-manager-role", "acme", "acme-release", "acme-manager-rolebinding"}) {
			t.Errorf("marks %q", g.Marks)
		}
	}
	want := map[string]string{"controller": "Resource specific=true", "group": "Group specific=true", "any": "Group specific=true",
		"all": " specific=false", "editor": "Resource specific=false"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}
