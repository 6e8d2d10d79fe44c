package owners

import (
	"slices"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// RBAC is the cluster's role-based access control as read: who may do
// what, and where.
type RBAC struct {
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	Roles               []rbacv1.Role
	RoleBindings        []rbacv1.RoleBinding
}

// Access is a request RBAC is asked about: may someone do one of Verbs on
// Resource (with Subresource) of Group, in Namespace ("" for a
// cluster-scoped resource), to the objects Names?
type Access struct {
	Verbs       []string
	Group       string
	Resource    string
	Subresource string
	Namespace   string
	// Names are the objects asked about: a rule limited to resourceNames
	// grants only when it names one of them.
	Names []string
}

// Ref names an RBAC object.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String is kind/name, or kind/namespace/name.
func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// Subject is who a binding names: a ServiceAccount, a User or a Group.
type Subject struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String says the subject as kubectl names it: serviceaccount ns/name,
// user name, group name.
func (s Subject) String() string {
	if s.Kind == rbacv1.ServiceAccountKind {
		return "serviceaccount " + s.Namespace + "/" + s.Name
	}
	return strings.ToLower(s.Kind) + " " + s.Name
}

// serviceAccountsGroupPrefix is the group of every ServiceAccount of a
// namespace: system:serviceaccounts:<namespace>.
const serviceAccountsGroupPrefix = "system:serviceaccounts:"

// NamespaceOfGroup is the namespace whose every ServiceAccount a group
// holds, if it is such a group.
func NamespaceOfGroup(s Subject) (string, bool) {
	if s.Kind != rbacv1.GroupKind || !strings.HasPrefix(s.Name, serviceAccountsGroupPrefix) {
		return "", false
	}
	return strings.TrimPrefix(s.Name, serviceAccountsGroupPrefix), true
}

// Grant is one subject allowed an Access, and how.
type Grant struct {
	Subject Subject `json:"subject"`
	Verb    string  `json:"verb"`
	Role    Ref     `json:"role"`
	Binding Ref     `json:"binding"`
	// Wildcard: the role grants it only through "*" in its resources,
	// over every group or the core group: a grant of everything, which
	// says nothing of who owns this resource.
	Wildcard bool `json:"wildcard,omitempty"`
	// Builtin: through a role Kubernetes ships (system:*, and the
	// user-facing cluster-admin, admin, edit, view, which operators
	// aggregate their types into for people).
	Builtin bool `json:"builtin,omitempty"`
	// Aggregated: through a ClusterRole labelled to be aggregated into
	// admin, edit, view or cluster-admin: every admin holds it, so it says
	// nothing of who owns the resource.
	Aggregated bool `json:"aggregated,omitempty"`
	// Scope is how narrowly its rule names the resource: ScopeResource or
	// ScopeGroup; empty for a wildcard grant.
	Scope Scope `json:"scope,omitempty"`
	// Marks are the names its role and binding go by (their names, their
	// app.kubernetes.io/name and part-of labels, the Helm release that
	// installed them): what the affinity with a finalizer's domain reads.
	Marks []string `json:"-"`
}

// Scope is how narrowly a grant names the resource it allows.
type Scope string

// Scopes, most specific first.
const (
	// ScopeResource: the rule names the resource itself, in its own API
	// group (with resourceNames or without).
	ScopeResource Scope = "Resource"
	// ScopeGroup: the rule names the resource's API group with every
	// resource in it ("*"), or the resource in every group.
	ScopeGroup Scope = "Group"
)

// rank orders scopes: higher is more specific.
func (s Scope) rank() int {
	switch s {
	case ScopeResource:
		return 2
	case ScopeGroup:
		return 1
	}
	return 0
}

// Specific tells whether a grant names the resource itself, in a role of
// the cluster's own making: what an operator's installation grants its
// controller.
func (g Grant) Specific() bool { return !g.Wildcard && !g.Builtin && !g.Aggregated }

// Index is RBAC walked once: each binding with its role's rules resolved
// (aggregation included), so that each question asked of it is a scan.
type Index struct {
	// cluster are the ClusterRoleBindings; local the RoleBindings, by
	// namespace: a question about one namespace scans only its own.
	cluster []bound
	local   map[string][]bound

	// clusterWho are the ClusterRoleBindings' grants of each access asked
	// (its namespace aside): explain over thousands of namespaces asks
	// the same of each.
	mu         sync.Mutex
	clusterWho map[string][]Grant
}

type bound struct {
	binding, role Ref
	subjects      []Subject
	rules         []rbacv1.PolicyRule
	builtin       bool
	aggregated    bool
	marks         []string
}

// NewIndex resolves every binding's rules. A binding whose role is not
// there grants nothing, as in the API server.
func NewIndex(r RBAC) *Index {
	clusterRoles := map[string]*rbacv1.ClusterRole{}
	for k := range r.ClusterRoles {
		clusterRoles[r.ClusterRoles[k].Name] = &r.ClusterRoles[k]
	}
	roles := map[string]*rbacv1.Role{}
	for k := range r.Roles {
		roles[r.Roles[k].Namespace+"/"+r.Roles[k].Name] = &r.Roles[k]
	}
	resolved := map[string][]rbacv1.PolicyRule{}
	clusterRules := func(name string) ([]rbacv1.PolicyRule, bool) {
		if rules, ok := resolved[name]; ok {
			return rules, true
		}
		if clusterRoles[name] == nil {
			return nil, false
		}
		rules := aggregatedRules(name, r.ClusterRoles, clusterRoles, map[string]bool{})
		resolved[name] = rules
		return rules, true
	}
	x := &Index{local: map[string][]bound{}}
	for _, b := range r.ClusterRoleBindings {
		rules, ok := clusterRules(b.RoleRef.Name)
		if !ok || b.RoleRef.Kind != "ClusterRole" {
			continue
		}
		role := clusterRoles[b.RoleRef.Name]
		x.cluster = append(x.cluster, bound{binding: Ref{Kind: "ClusterRoleBinding", Name: b.Name}, role: Ref{Kind: "ClusterRole", Name: b.RoleRef.Name},
			subjects: subjectsOf(b.Subjects, ""), rules: rules, builtin: builtinRole(b.RoleRef.Name),
			aggregated: aggregatedIntoBuiltin(role.Labels), marks: append(marksOf(role.ObjectMeta), marksOf(b.ObjectMeta)...)})
	}
	for _, b := range r.RoleBindings {
		var rules []rbacv1.PolicyRule
		var meta metav1.ObjectMeta
		role := Ref{Kind: b.RoleRef.Kind, Name: b.RoleRef.Name}
		switch b.RoleRef.Kind {
		case "ClusterRole":
			var ok bool
			if rules, ok = clusterRules(b.RoleRef.Name); !ok {
				continue
			}
			meta = clusterRoles[b.RoleRef.Name].ObjectMeta
		case "Role":
			r := roles[b.Namespace+"/"+b.RoleRef.Name]
			if r == nil {
				continue
			}
			rules, role.Namespace, meta = r.Rules, b.Namespace, r.ObjectMeta
		default:
			continue
		}
		x.local[b.Namespace] = append(x.local[b.Namespace], bound{binding: Ref{Kind: "RoleBinding", Namespace: b.Namespace, Name: b.Name}, role: role,
			subjects: subjectsOf(b.Subjects, b.Namespace), rules: rules,
			builtin:    role.Kind == "ClusterRole" && builtinRole(role.Name),
			aggregated: role.Kind == "ClusterRole" && aggregatedIntoBuiltin(meta.Labels), marks: append(marksOf(meta), marksOf(b.ObjectMeta)...)})
	}
	return x
}

// aggregatedRules are a ClusterRole's rules, with those of every
// ClusterRole its aggregationRule selects (and theirs in turn): the
// clusterrole-aggregation controller writes the same union into the
// role, but may not have yet.
func aggregatedRules(name string, all []rbacv1.ClusterRole, byName map[string]*rbacv1.ClusterRole, seen map[string]bool) []rbacv1.PolicyRule {
	if seen[name] {
		return nil
	}
	seen[name] = true
	role := byName[name]
	rules := slices.Clone(role.Rules)
	if role.AggregationRule == nil {
		return rules
	}
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil || s.Empty() {
			continue
		}
		for k := range all {
			if all[k].Name != name && s.Matches(labels.Set(all[k].Labels)) {
				rules = append(rules, aggregatedRules(all[k].Name, all, byName, seen)...)
			}
		}
	}
	return rules
}

// builtinRole tells a role Kubernetes ships: the control plane's own
// (system:*) and the user-facing ones.
func builtinRole(name string) bool {
	switch name {
	case "cluster-admin", "admin", "edit", "view":
		return true
	}
	return strings.HasPrefix(name, "system:")
}

// aggregateToBuiltin is the label prefix that aggregates a ClusterRole
// into the user-facing roles Kubernetes ships
// (rbac.authorization.k8s.io/aggregate-to-admin, -edit, -view,
// -cluster-admin).
const aggregateToBuiltin = "rbac.authorization.k8s.io/aggregate-to-"

// aggregatedIntoBuiltin tells a role whose rules every admin (or editor,
// or viewer) holds through aggregation: it is written for people, not for
// the controller that owns the resource.
func aggregatedIntoBuiltin(labels map[string]string) bool {
	for k, v := range labels {
		if strings.HasPrefix(k, aggregateToBuiltin) && v == "true" {
			return true
		}
	}
	return false
}

// Labels and annotation that name the product an RBAC object (or a
// ServiceAccount) was installed for.
const (
	LabelName         = "app.kubernetes.io/name"
	LabelPartOf       = "app.kubernetes.io/part-of"
	AnnotationRelease = "meta.helm.sh/release-name"
)

// markKeys are the labels and annotation whose values say what an object
// was installed for.
var markKeys = []string{LabelName, LabelPartOf, AnnotationRelease}

// marksOf are the names an object goes by: its name, and the values of
// the labels and annotation markKeys names.
func marksOf(m metav1.ObjectMeta) []string {
	out := []string{m.Name}
	for _, k := range markKeys {
		if v := m.Labels[k]; v != "" {
			out = append(out, v)
		}
		if v := m.Annotations[k]; v != "" {
			out = append(out, v)
		}
	}
	return out
}

// subjectsOf reads a binding's subjects; a ServiceAccount without a
// namespace is the binding's (a RoleBinding may leave it out).
func subjectsOf(in []rbacv1.Subject, namespace string) []Subject {
	out := make([]Subject, 0, len(in))
	for _, s := range in {
		sub := Subject{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name}
		if s.Kind == rbacv1.ServiceAccountKind && sub.Namespace == "" {
			sub.Namespace = namespace
		}
		out = append(out, sub)
	}
	return out
}

// Who lists every subject a binding allows the access, once per subject
// and binding: the ClusterRoleBindings' first, in the order read.
func (x *Index) Who(a Access) []Grant {
	out := slices.Clone(x.clusterGrants(a))
	// A RoleBinding's grants hold in its namespace only.
	if a.Namespace != "" {
		out = x.grants(out, x.local[a.Namespace], a)
	}
	return out
}

// clusterGrants are the ClusterRoleBindings' grants of a, each access
// computed once; callers must not change them.
func (x *Index) clusterGrants(a Access) []Grant {
	key := strings.Join([]string{strings.Join(a.Verbs, ","), a.Group, a.Resource, a.Subresource, strings.Join(a.Names, ",")}, "/")
	x.mu.Lock()
	defer x.mu.Unlock()
	if g, ok := x.clusterWho[key]; ok {
		return g
	}
	if x.clusterWho == nil {
		x.clusterWho = map[string][]Grant{}
	}
	g := x.grants(nil, x.cluster, a)
	x.clusterWho[key] = g
	return g
}

// grants appends to out every subject of bindings allowed a.
func (x *Index) grants(out []Grant, bindings []bound, a Access) []Grant {
	for _, b := range bindings {
		verb, scope, ok := allows(b.rules, a)
		if !ok {
			continue
		}
		for _, s := range b.subjects {
			out = append(out, Grant{Subject: s, Verb: verb, Role: b.role, Binding: b.binding, Wildcard: scope == "", Builtin: b.builtin,
				Aggregated: b.aggregated, Scope: scope, Marks: b.marks})
		}
	}
	return out
}

// allows is whether some rule allows the access, by which verb, and how
// narrowly the most specific such rule names it (empty: only a wildcard
// rule does). The matching is the API server's
// (k8s.io/kubernetes/pkg/apis/rbac/v1/evaluation_helpers.go: VerbMatches,
// APIGroupMatches, ResourceMatches, ResourceNameMatches).
func allows(rules []rbacv1.PolicyRule, a Access) (verb string, scope Scope, ok bool) {
	for _, r := range rules {
		v, found := verbMatching(r.Verbs, a.Verbs)
		if !found || !has(r.APIGroups, a.Group) || !resourceMatches(r.Resources, a.Resource, a.Subresource) || !namesMatch(r.ResourceNames, a.Names) {
			continue
		}
		if s := scopeOf(r, a); !ok || s.rank() > scope.rank() {
			verb, scope, ok = v, s, true
		}
	}
	return verb, scope, ok
}

// scopeOf is how narrowly a rule that allows an access names it. A rule
// naming the resource in its own group is what an operator grants its
// controller over its own type; one over every type of the resource's
// group (an operator's rule over its API), or naming the resource in
// every group, is less so; "*" over every group, or over the core group,
// names nothing (empty).
func scopeOf(r rbacv1.PolicyRule, a Access) Scope {
	named := slices.Contains(r.Resources, combined(a.Resource, a.Subresource))
	groupNamed := slices.Contains(r.APIGroups, a.Group)
	switch {
	case named && groupNamed:
		return ScopeResource
	case named, a.Group != "" && groupNamed:
		return ScopeGroup
	}
	return ""
}

func verbMatching(ruleVerbs, asked []string) (string, bool) {
	for _, v := range asked {
		if has(ruleVerbs, v) {
			return v, true
		}
	}
	return "", false
}

// has: the list holds v or "*".
func has(list []string, v string) bool {
	return slices.Contains(list, rbacv1.VerbAll) || slices.Contains(list, v)
}

func combined(resource, sub string) string {
	if sub == "" {
		return resource
	}
	return resource + "/" + sub
}

// resourceMatches: "*", the resource (with its subresource), or
// "*/subresource".
func resourceMatches(list []string, resource, sub string) bool {
	for _, r := range list {
		if r == rbacv1.ResourceAll || r == combined(resource, sub) || (sub != "" && r == "*/"+sub) {
			return true
		}
	}
	return false
}

// namesMatch: a rule without resourceNames holds for every object; one
// with them, for those only.
func namesMatch(ruleNames, names []string) bool {
	if len(ruleNames) == 0 {
		return true
	}
	for _, n := range names {
		if slices.Contains(ruleNames, n) {
			return true
		}
	}
	return false
}
