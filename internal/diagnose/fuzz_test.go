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
// catches its operation, and a selector requiring a label the object has
// selects it whenever the selector is valid at all.
func FuzzMatchRules(f *testing.F) {
	f.Add("", "v1", "configmaps", "DELETE", "app", "In", "x")
	f.Add("*", "*", "*/*", "*", "", "Exists", "")
	f.Add("example.com", "v1", "widgets/*", "UPDATE", "a b", "Bogus", "%%%")
	f.Fuzz(func(t *testing.T, group, version, resource, op, key, operator, value string) {
		gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
		rule := admissionregv1.RuleWithOperations{
			Operations: []admissionregv1.OperationType{admissionregv1.OperationType(op)},
			Rule:       admissionregv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}},
		}
		ops := strings.Join(matchingOperations([]admissionregv1.RuleWithOperations{rule}, gvr), ",")
		if (op == "DELETE" || op == "*") && !strings.Contains(ops, "DELETE") {
			t.Fatalf("rule %+v does not catch DELETE of %v", rule, gvr)
		}
		if (op == "UPDATE" || op == "*") && !strings.Contains(ops, "UPDATE") {
			t.Fatalf("rule %+v does not catch UPDATE of %v", rule, gvr)
		}
		if op != "DELETE" && op != "UPDATE" && op != "*" && ops != "" {
			t.Fatalf("rule for %q catches %s", op, ops)
		}
		sel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOperator(operator), Values: []string{value}}}}
		_, invalid := metav1.LabelSelectorAsSelector(sel)
		got := selects(sel, map[string]string{key: value})
		switch {
		case invalid != nil && got:
			t.Fatalf("an invalid selector %+v selected an object", sel)
		case invalid == nil && (operator == "In" || operator == "Exists") && !got:
			t.Fatalf("%+v does not select {%q: %q}", sel, key, value)
		}
	})
}
