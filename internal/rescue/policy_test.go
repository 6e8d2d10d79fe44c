package rescue

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	admissionv1 "k8s.io/api/admissionregistration/v1"
)

// eval compiles expr as the API server does for a policy (variables
// request and oldObject as dynamic maps) and runs it on vars.
func eval(t *testing.T, expr string, vars map[string]any) bool {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("request", cel.DynType), cel.Variable("oldObject", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("compiling %s: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(vars)
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		t.Fatalf("%s gave %v, not a bool", expr, out.Value())
	}
	return b
}

func request(namespace, user string) map[string]any {
	return map[string]any{"request": map[string]any{"namespace": namespace, "userInfo": map[string]any{"username": user}}}
}

func TestHoldRefusesOnlyTheControllersInTheNamespace(t *testing.T) {
	p := holdPolicy("shop")
	if len(p.Spec.MatchConditions) != 1 || len(p.Spec.Validations) != 1 {
		t.Fatalf("want one match condition and one validation, got %+v", p.Spec)
	}
	inNamespace, allowed := p.Spec.MatchConditions[0].Expression, p.Spec.Validations[0].Expression
	for _, tc := range []struct {
		namespace, user string
		matches, allows bool
	}{
		{"shop", "system:serviceaccount:kube-system:namespace-controller", true, false},
		{"shop", "system:serviceaccount:kube-system:generic-garbage-collector", true, false},
		{"shop", "system:kube-controller-manager", true, false},
		{"shop", "alice", true, true},
		{"shop", "system:serviceaccount:kube-system:namespace-controller-2", true, true},
		{"shop", "system:node:node-1", true, true},
		{"shop-2", "system:serviceaccount:kube-system:namespace-controller", false, false},
		{"", "system:serviceaccount:kube-system:namespace-controller", false, false},
	} {
		vars := request(tc.namespace, tc.user)
		if got := eval(t, inNamespace, vars); got != tc.matches {
			t.Errorf("namespace %q: match condition %v, want %v", tc.namespace, got, tc.matches)
		}
		if !tc.matches {
			continue
		}
		if got := eval(t, allowed, vars); got != tc.allows {
			t.Errorf("%s in %s: allowed %v, want %v", tc.user, tc.namespace, got, tc.allows)
		}
	}
}

func TestHoldMatchesEveryNamespacedDelete(t *testing.T) {
	p := holdPolicy("shop")
	rules := p.Spec.MatchConstraints.ResourceRules
	if len(rules) != 1 {
		t.Fatalf("rules: %+v", rules)
	}
	r := rules[0]
	if len(r.Operations) != 1 || r.Operations[0] != admissionv1.Delete {
		t.Errorf("operations %v, want DELETE only (a DELETECOLLECTION is admitted item by item as DELETE)", r.Operations)
	}
	for name, got := range map[string][]string{"apiGroups": r.APIGroups, "apiVersions": r.APIVersions, "resources": r.Resources} {
		if len(got) != 1 || got[0] != "*" {
			t.Errorf("%s %v, want *", name, got)
		}
	}
	if *r.Scope != admissionv1.NamespacedScope || *p.Spec.FailurePolicy != admissionv1.Fail {
		t.Errorf("scope %s, failure policy %s", *r.Scope, *p.Spec.FailurePolicy)
	}
	if !strings.Contains(p.Spec.Validations[0].Message, "kubectl ns-doctor rescue shop --release") {
		t.Errorf("message does not say how to release: %s", p.Spec.Validations[0].Message)
	}
}

func TestProtectAllowsOnlyTheConfirmationNamingTheNamespace(t *testing.T) {
	p := protectPolicy("shop")
	r := p.Spec.MatchConstraints.ResourceRules[0]
	if len(r.ResourceNames) != 1 || r.ResourceNames[0] != "shop" || r.Resources[0] != "namespaces" || r.APIGroups[0] != "" {
		t.Errorf("rule %+v, want the namespace shop only", r)
	}
	expr := p.Spec.Validations[0].Expression
	for _, tc := range []struct {
		name        string
		annotations map[string]any
		allows      bool
	}{
		{"none", nil, false},
		{"other annotations", map[string]any{"owner": "shop"}, false},
		{"naming another namespace", map[string]any{ConfirmAnnotation: "other"}, false},
		{"true is not a name", map[string]any{ConfirmAnnotation: "true"}, false},
		{"naming it", map[string]any{ConfirmAnnotation: "shop"}, true},
	} {
		meta := map[string]any{"name": "shop"}
		if tc.annotations != nil {
			meta["annotations"] = tc.annotations
		}
		if got := eval(t, expr, map[string]any{"oldObject": map[string]any{"metadata": meta}}); got != tc.allows {
			t.Errorf("%s: allowed %v, want %v", tc.name, got, tc.allows)
		}
	}
}

func TestBindingDenies(t *testing.T) {
	b := bindingOf(HoldName("shop"), "shop")
	if b.Spec.PolicyName != "ns-doctor-rescue-shop" || len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != admissionv1.Deny {
		t.Errorf("binding %+v", b.Spec)
	}
}
