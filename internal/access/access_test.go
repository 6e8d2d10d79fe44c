package access

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	authv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// server answers reviews: rules per namespace (nil: incomplete), and
// each access review by allowed; it counts what it was sent.
type server struct {
	mu      sync.Mutex
	rules   map[string][]authv1.ResourceRule
	allowed func(authv1.ResourceAttributes) bool
	fail    error
	asked   []authv1.ResourceAttributes
	reviews []string // namespaces of the rules reviews
}

func (s *server) client() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "selfsubjectrulesreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authv1.SelfSubjectRulesReview).DeepCopy()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.reviews = append(s.reviews, r.Spec.Namespace)
		rules, ok := s.rules[r.Spec.Namespace]
		r.Status.ResourceRules, r.Status.Incomplete = rules, !ok
		return true, r, nil
	})
	c.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview).DeepCopy()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.fail != nil {
			return true, nil, s.fail
		}
		s.asked = append(s.asked, *r.Spec.ResourceAttributes)
		r.Status.Allowed = s.allowed == nil || s.allowed(*r.Spec.ResourceAttributes)
		return true, r, nil
	})
	return c
}

var (
	finalize = Permission{Verb: "update", Resource: "namespaces", Subresource: "finalize"}
	pvPatch  = Permission{Verb: "patch", Resource: "persistentvolumes"}
	webhook  = Permission{Verb: "patch", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "demo"}
)

func inShop(verb, group, resource string) Permission {
	return Permission{Verb: verb, Group: group, Resource: resource, Namespace: "shop"}
}

// The one wording of a permission, and the one line of what is missing:
// sorted, every one named, an ErrMissing.
func TestMissingErrorNamesEveryPermissionOnOneSortedLine(t *testing.T) {
	for p, want := range map[Permission]string{
		finalize: "update namespaces/finalize",
		webhook:  "patch validatingwebhookconfigurations.admissionregistration.k8s.io demo",
		inShop("deletecollection", "", "configmaps"): "deletecollection configmaps in namespace shop",
	} {
		if got := p.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	err := error(&MissingError{Missing: []Permission{pvPatch, inShop("list", "", "secrets"), webhook}})
	want := "missing 3 permission(s): list secrets in namespace shop, patch persistentvolumes, patch validatingwebhookconfigurations.admissionregistration.k8s.io demo"
	if err.Error() != want || strings.Contains(err.Error(), "\n") {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	if !errors.Is(err, ErrMissing) {
		t.Error("a MissingError is not ErrMissing")
	}
}

// A broad rule in the namespace answers every namespaced question at
// once: only the cluster-scoped ones are asked, each once.
func TestOneRulesReviewAnswersTheNamespace(t *testing.T) {
	s := &server{rules: map[string][]authv1.ResourceRule{"shop": {{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}}}
	needs := []Permission{finalize, pvPatch, pvPatch}
	for _, r := range []string{"configmaps", "secrets", "pods", "services"} {
		needs = append(needs, inShop("list", "", r), inShop("deletecollection", "", r))
	}
	missing, err := Missing(context.Background(), s.client().AuthorizationV1(), needs)
	if err != nil || len(missing) != 0 {
		t.Fatalf("missing %v, %v", missing, err)
	}
	if len(s.reviews) != 1 || s.reviews[0] != "shop" {
		t.Errorf("rules reviews %v, want one of shop", s.reviews)
	}
	if len(s.asked) != 2 {
		t.Errorf("%d access reviews, want the 2 cluster-scoped ones: %v", len(s.asked), s.asked)
	}
}

// An incomplete rules review grants nothing: every question is asked,
// and the refused ones come back sorted.
func TestIncompleteRulesAreAskedOneByOne(t *testing.T) {
	s := &server{allowed: func(a authv1.ResourceAttributes) bool {
		return a.Resource != "secrets" && a.Resource != "persistentvolumes"
	}}
	needs := []Permission{inShop("list", "", "secrets"), inShop("list", "", "configmaps"), pvPatch, finalize}
	err := Check(context.Background(), s.client().AuthorizationV1(), needs)
	var missing *MissingError
	if !errors.As(err, &missing) || !slices.Equal(missing.Missing, []Permission{inShop("list", "", "secrets"), pvPatch}) {
		t.Fatalf("got %v", err)
	}
	if len(s.asked) != len(needs) {
		t.Errorf("%d access reviews, want %d", len(s.asked), len(needs))
	}
}

// A review that fails is an error, never a permission missing or granted.
func TestAReviewThatFailsIsAnError(t *testing.T) {
	s := &server{fail: errors.New("connection refused")}
	err := Check(context.Background(), s.client().AuthorizationV1(), []Permission{pvPatch})
	if err == nil || errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "patch persistentvolumes") {
		t.Fatalf("got %v", err)
	}
}

// Rules grant as RBAC does, and never more: a rule only ever spares a
// question.
func TestRulesGrantAsRBACDoes(t *testing.T) {
	rule := func(verbs, groups, resources, names []string) authv1.ResourceRule {
		return authv1.ResourceRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
	}
	one := []string{""}
	pods := inShop("delete", "", "pods")
	podsFinalize := pods
	podsFinalize.Subresource = "finalize"
	named := inShop("get", "", "configmaps")
	named.Name = "settings"
	for _, tc := range []struct {
		what string
		rule authv1.ResourceRule
		p    Permission
		want bool
	}{
		{"exact", rule([]string{"delete"}, one, []string{"pods"}, nil), pods, true},
		{"any verb", rule([]string{"*"}, one, []string{"pods"}, nil), pods, true},
		{"another verb", rule([]string{"get"}, one, []string{"pods"}, nil), pods, false},
		{"another group", rule([]string{"delete"}, []string{"apps"}, []string{"pods"}, nil), pods, false},
		{"any resource covers subresources", rule([]string{"delete"}, one, []string{"*"}, nil), podsFinalize, true},
		{"the resource is not its subresource", rule([]string{"delete"}, one, []string{"pods"}, nil), podsFinalize, false},
		{"*/finalize", rule([]string{"delete"}, one, []string{"*/finalize"}, nil), podsFinalize, true},
		{"pods/finalize", rule([]string{"delete"}, one, []string{"pods/finalize"}, nil), podsFinalize, true},
		{"names restrict", rule([]string{"get"}, one, []string{"configmaps"}, []string{"settings"}), named, true},
		{"another name", rule([]string{"get"}, one, []string{"configmaps"}, []string{"other"}), named, false},
		{"names never grant a list", rule([]string{"list"}, one, []string{"configmaps"}, []string{""}), inShop("list", "", "configmaps"), false},
	} {
		if got := grants([]authv1.ResourceRule{tc.rule}, tc.p); got != tc.want {
			t.Errorf("%s: grants %v, want %v", tc.what, got, tc.want)
		}
	}
}
