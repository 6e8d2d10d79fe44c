package diagnose

import (
	"strings"
	"testing"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Webhook rules and selectors come from the cluster, written by anyone:
// matching them never panics, a rule naming the resource exactly always
// matches, and normalising a condition message is idempotent.
func FuzzMatchRules(f *testing.F) {
	f.Add("", "v1", "configmaps", "DELETE", "app", "In", "x", "configmaps")
	f.Add("*", "*", "*/*", "*", "", "Exists", "", "pods/status")
	f.Add("example.com", "v1", "widgets/*", "UPDATE", "a b", "Bogus", "%%%", "Some finalizers are remaining: x")
	f.Fuzz(func(t *testing.T, group, version, resource, op, key, operator, value, msg string) {
		gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
		rule := admissionregv1.RuleWithOperations{
			Operations: []admissionregv1.OperationType{admissionregv1.OperationType(op)},
			Rule:       admissionregv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}},
		}
		ops := matchingOperations([]admissionregv1.RuleWithOperations{rule}, gvr)
		if (op == "DELETE" || op == "*") && !strings.Contains(strings.Join(ops, ","), "DELETE") {
			t.Fatalf("rule %+v does not catch DELETE of %v", rule, gvr)
		}
		sel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOperator(operator), Values: []string{value}}}}
		_ = selects(sel, map[string]string{key: value})
		if n := normalizeMessage(msg); normalizeMessage(n) != n {
			t.Fatalf("normalizeMessage not idempotent on %q", msg)
		}
	})
}
