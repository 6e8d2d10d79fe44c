package owners

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func clusterRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

func rule(verbs, groups, resources []string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
}

func sa(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

func crb(name, role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subjects}
}

func rb(ns, name, kind, role string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
	return rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}, Subjects: subjects}
}

var patch = []string{"update", "patch"}

// who names the subjects an access is granted to, as "subject via role".
func who(x *Index, a Access) []string {
	var out []string
	for _, g := range x.Who(a) {
		s := g.Subject.String() + " via " + g.Role.String()
		if g.Wildcard {
			s += " (wildcard)"
		}
		if g.Builtin {
			s += " (builtin)"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// The walk answers as the API server's authorizer would: aggregated
// ClusterRoles hold the rules of the roles they select (even before the
// aggregation controller wrote them), wildcards match but are told apart,
// resourceNames limit a rule to those objects, a RoleBinding grants in its
// namespace only (to a Role or a ClusterRole, to a ServiceAccount or the
// group of a namespace's ServiceAccounts), subresources match as
// "resource/sub" or "*/sub", and a binding to a missing role grants
// nothing.
func TestRBACWalk(t *testing.T) {
	x := NewIndex(RBAC{
		ClusterRoles: []rbacv1.ClusterRole{
			clusterRole("acme-widgets", map[string]string{"acme.example.com/aggregate-to-manager": "true"},
				rule([]string{"get", "list", "update", "patch"}, []string{"acme.example.com"}, []string{"widgets"})),
			{ObjectMeta: metav1.ObjectMeta{Name: "acme-manager"}, AggregationRule: &rbacv1.AggregationRule{
				ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"acme.example.com/aggregate-to-manager": "true"}}}}},
			clusterRole("everything", nil, rule([]string{"*"}, []string{"*"}, []string{"*"})),
			clusterRole("acme-group", nil, rule([]string{"*"}, []string{"acme.example.com"}, []string{"*"})),
			clusterRole("one-widget", nil, rule(patch, []string{"acme.example.com"}, []string{"widgets"}, "w1")),
			clusterRole("finalizer", nil, rule([]string{"update"}, []string{""}, []string{"namespaces/finalize"})),
			clusterRole("any-finalize", nil, rule([]string{"update"}, []string{""}, []string{"*/finalize"})),
			clusterRole("cluster-admin", nil, rule([]string{"*"}, []string{"*"}, []string{"*"})),
			clusterRole("read-only", nil, rule([]string{"get", "list"}, []string{"acme.example.com"}, []string{"widgets"})),
		},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{
			crb("acme-manager", "acme-manager", sa("acme-system", "acme")),
			crb("god", "everything", sa("tools", "god")),
			crb("group", "acme-group", sa("acme-system", "group")),
			crb("one", "one-widget", sa("ops", "one")),
			crb("finalizer", "finalizer", sa("tenancy", "tenancy")),
			crb("any-finalize", "any-finalize", sa("ops", "finalize-all")),
			crb("admins", "cluster-admin", rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:masters"}),
			crb("reader", "read-only", sa("ops", "reader")),
			crb("dangling", "no-such-role", sa("ops", "dangling")),
		},
		Roles: []rbacv1.Role{{ObjectMeta: metav1.ObjectMeta{Name: "widgets", Namespace: "team-a"},
			Rules: []rbacv1.PolicyRule{rule(patch, []string{"acme.example.com"}, []string{"widgets"})}}},
		RoleBindings: []rbacv1.RoleBinding{
			rb("team-a", "local", "Role", "widgets", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "local"}),
			rb("team-a", "all-of-ns", "ClusterRole", "acme-widgets", rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:watchers"}),
			rb("team-b", "elsewhere", "ClusterRole", "acme-widgets", sa("acme-system", "elsewhere")),
			rb("team-a", "missing", "Role", "no-such-role", sa("ops", "missing")),
		},
	})
	widgets := func(ns string, names ...string) Access {
		return Access{Verbs: patch, Group: "acme.example.com", Resource: "widgets", Namespace: ns, Names: names}
	}
	for _, tc := range []struct {
		name string
		a    Access
		want []string
	}{
		{"widgets in team-a, object w2", widgets("team-a", "w2"), []string{
			"group system:masters via ClusterRole/cluster-admin (wildcard) (builtin)",
			"group system:serviceaccounts:watchers via ClusterRole/acme-widgets",
			"serviceaccount acme-system/acme via ClusterRole/acme-manager",
			"serviceaccount acme-system/group via ClusterRole/acme-group",
			"serviceaccount team-a/local via Role/team-a/widgets",
			"serviceaccount tools/god via ClusterRole/everything (wildcard)",
		}},
		{"w1 too is granted to one", widgets("team-c", "w1"), []string{
			"group system:masters via ClusterRole/cluster-admin (wildcard) (builtin)",
			"serviceaccount acme-system/acme via ClusterRole/acme-manager",
			"serviceaccount acme-system/group via ClusterRole/acme-group",
			"serviceaccount ops/one via ClusterRole/one-widget",
			"serviceaccount tools/god via ClusterRole/everything (wildcard)",
		}},
		{"namespaces/finalize", Access{Verbs: []string{"update"}, Resource: "namespaces", Subresource: "finalize", Names: []string{"team-a"}}, []string{
			"group system:masters via ClusterRole/cluster-admin (wildcard) (builtin)",
			"serviceaccount ops/finalize-all via ClusterRole/any-finalize (wildcard)",
			"serviceaccount tenancy/tenancy via ClusterRole/finalizer",
			"serviceaccount tools/god via ClusterRole/everything (wildcard)",
		}},
		{"reading is not removing", Access{Verbs: []string{"delete"}, Group: "acme.example.com", Resource: "widgets", Namespace: "team-z"}, []string{
			"group system:masters via ClusterRole/cluster-admin (wildcard) (builtin)",
			"serviceaccount acme-system/group via ClusterRole/acme-group",
			"serviceaccount tools/god via ClusterRole/everything (wildcard)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := who(x, tc.a); !slices.Equal(got, tc.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// A specific grant is an operator's: a wildcard over every group or the
// core group, and the roles Kubernetes ships, are not.
func TestGrantSpecific(t *testing.T) {
	x := NewIndex(RBAC{
		ClusterRoles: []rbacv1.ClusterRole{
			clusterRole("core-all", nil, rule(patch, []string{""}, []string{"*"})),
			clusterRole("configmaps", nil, rule(patch, []string{"*"}, []string{"configmaps"})),
			clusterRole("edit", nil, rule(patch, []string{""}, []string{"configmaps"})),
		},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{crb("a", "core-all", sa("x", "a")), crb("b", "configmaps", sa("x", "b")), crb("c", "edit", sa("x", "c"))},
	})
	got := map[string]bool{}
	for _, g := range x.Who(Access{Verbs: patch, Resource: "configmaps", Namespace: "n"}) {
		got[g.Subject.Name] = g.Specific()
	}
	if want := map[string]bool{"a": false, "b": true, "c": false}; len(got) != 3 || got["a"] != want["a"] || got["b"] != want["b"] || got["c"] != want["c"] {
		t.Errorf("specific: %v", got)
	}
}
