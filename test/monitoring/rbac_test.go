package monitoring

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// missingRules returns the rules of want that no single rule of have
// holds: a rule of have holds one of want when its API groups, resources,
// verbs and non-resource URLs each include want's, compared literally, so
// the wildcard rule (`*` in `*`) does not stand for the explicit rules the
// docs' roles keep for when the wildcard is narrowed. A rule restricted by
// resourceNames holds only a rule restricted to the same names or fewer.
func missingRules(have, want []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var missing []rbacv1.PolicyRule
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h rbacv1.PolicyRule) bool { return holds(h, w) }) {
			missing = append(missing, w)
		}
	}
	return missing
}

func holds(h, w rbacv1.PolicyRule) bool {
	if len(h.ResourceNames) > 0 && (len(w.ResourceNames) == 0 || !subset(w.ResourceNames, h.ResourceNames)) {
		return false
	}
	return subset(w.APIGroups, h.APIGroups) && subset(w.Resources, h.Resources) &&
		subset(w.Verbs, h.Verbs) && subset(w.NonResourceURLs, h.NonResourceURLs)
}

func subset(small, big []string) bool {
	for _, s := range small {
		if !slices.Contains(big, s) {
			return false
		}
	}
	return true
}

func describeRules(rules []rbacv1.PolicyRule) string {
	var b strings.Builder
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			fmt.Fprintf(&b, "\n  - nonResourceURLs %v verbs %v", r.NonResourceURLs, r.Verbs)
			continue
		}
		fmt.Fprintf(&b, "\n  - apiGroups %q resources %v verbs %v", r.APIGroups, r.Resources, r.Verbs)
		if len(r.ResourceNames) > 0 {
			fmt.Fprintf(&b, " resourceNames %v", r.ResourceNames)
		}
	}
	return b.String()
}

// TestWatchClusterRoleHoldsExplainRules: the watch runs explain's
// diagnosis, so its ClusterRole must hold every rule of
// docs/rbac/explain-clusterrole.yaml (test/distribution checks that file is
// enough for explain), and the janitor's every rule of
// docs/rbac/purge-clusterrole.yaml.
func TestWatchClusterRoleHoldsExplainRules(t *testing.T) {
	for _, c := range []struct{ deploy, role, docs string }{
		{"deploy/10-rbac.yaml", "ns-doctor-watch", "docs/rbac/explain-clusterrole.yaml"},
		{"deploy/janitor/rbac.yaml", "ns-doctor-janitor", "docs/rbac/purge-clusterrole.yaml"},
	} {
		have := findObject[rbacv1.ClusterRole](t, c.deploy, "ClusterRole", c.role)
		want := findObject[rbacv1.ClusterRole](t, c.docs, "ClusterRole", "")
		if missing := missingRules(have.Rules, want.Rules); len(missing) > 0 {
			t.Errorf("ClusterRole %s in %s lacks these rules of %s:%s", c.role, c.deploy, c.docs, describeRules(missing))
		}
	}
	// The watch's own additions: its Events, in both event APIs.
	watch := findObject[rbacv1.ClusterRole](t, "deploy/10-rbac.yaml", "ClusterRole", "ns-doctor-watch")
	events := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list", "watch"}},
	}
	if missing := missingRules(watch.Rules, events); len(missing) > 0 {
		t.Errorf("ClusterRole ns-doctor-watch lacks:%s", describeRules(missing))
	}
	// Read-only: nothing of the watch's role deletes, updates or finalizes.
	for _, r := range watch.Rules {
		for _, v := range r.Verbs {
			read := v == "get" || v == "list" || v == "watch"
			event := (v == "create" || v == "patch") && slices.Equal(r.Resources, []string{"events"})
			if !read && !event {
				t.Errorf("ClusterRole ns-doctor-watch grants %s on %q %v: the read-only watch writes only Events", v, r.APIGroups, r.Resources)
			}
		}
	}
}

// TestMissingRulesCanFail checks the comparison itself: each rule of the
// docs' role, left out, is reported, and the wildcard does not stand for
// an explicit rule.
func TestMissingRulesCanFail(t *testing.T) {
	want := findObject[rbacv1.ClusterRole](t, "docs/rbac/explain-clusterrole.yaml", "ClusterRole", "").Rules
	if len(want) < 3 {
		t.Fatalf("docs/rbac/explain-clusterrole.yaml has %d rules", len(want))
	}
	for i := range want {
		have := slices.Delete(slices.Clone(want), i, i+1)
		missing := missingRules(have, want)
		if len(missing) != 1 || !holds(missing[0], want[i]) {
			t.Errorf("leaving out rule %d gave missing =%s", i, describeRules(missing))
		}
	}
	wildcard := []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}
	if missing := missingRules(wildcard, []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list"}}}); len(missing) != 1 {
		t.Error("the wildcard rule stood for an explicit one")
	}
	named := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get"}, ResourceNames: []string{"one"}}}
	if missing := missingRules(named, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get"}}}); len(missing) != 1 {
		t.Error("a rule narrowed by resourceNames stood for one on every name")
	}
}
