// Package access asks the API server, before a command changes anything,
// whether the user may do all it will: a command that changes a cluster
// declares what it needs as a list of Permissions, and Check (or Missing)
// answers with the ones refused, in one line (MissingError). It is the one
// access check of purge, rescue (hold, release, restore), protect, watch's
// janitor and the MCP tools that act.
//
// The questions are batched: one SelfSubjectRulesReview per namespace
// concerned answers most namespaced ones at once (a broad rule grants
// many); what it does not grant (the review may be incomplete: webhook
// authorizers), and every cluster-scoped permission, is asked one by one
// as a SelfSubjectAccessReview, 16 at a time. A rule review only ever
// grants: what it leaves out is asked, never assumed refused.
package access

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Permission is one verb on one resource a command needs: a subresource
// (namespaces/finalize), one object by Name, in Namespace or (empty)
// cluster-wide.
type Permission struct {
	Verb        string `json:"verb"`
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	Name        string `json:"name,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
}

// String says a permission as kubectl auth can-i reads: verb, resource
// (.group, /subresource), the object's name, where.
func (p Permission) String() string {
	res := p.Resource
	if p.Group != "" {
		res += "." + p.Group
	}
	if p.Subresource != "" {
		res += "/" + p.Subresource
	}
	if p.Name != "" {
		res += " " + p.Name
	}
	if p.Namespace != "" {
		return fmt.Sprintf("%s %s in namespace %s", p.Verb, res, p.Namespace)
	}
	return p.Verb + " " + res
}

// ErrMissing: the API server refused some of what a command needs; nothing
// was changed. Every *MissingError is one.
var ErrMissing = errors.New("missing permissions")

// MissingError names every permission a command lacks, sorted, on one line.
type MissingError struct{ Missing []Permission }

func (e *MissingError) Error() string {
	words := Words(e.Missing)
	return fmt.Sprintf("missing %d permission(s): %s", len(words), strings.Join(words, ", "))
}

func (e *MissingError) Unwrap() error { return ErrMissing }

// Words says permissions, sorted.
func Words(perms []Permission) []string {
	out := make([]string, 0, len(perms))
	for _, p := range perms {
		out = append(out, p.String())
	}
	slices.Sort(out)
	return out
}

// Check asks about every permission of needs and returns a *MissingError
// naming those refused, nil when all are granted, or the error that kept
// the API server from answering.
func Check(ctx context.Context, c authclient.AuthorizationV1Interface, needs []Permission) error {
	missing, err := Missing(ctx, c, needs)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return &MissingError{Missing: missing}
	}
	return nil
}

// reviewsAtOnce bounds the SelfSubjectAccessReviews in flight: each is a
// round trip, and priority and fairness counts them.
const reviewsAtOnce = 16

// Missing returns the permissions of needs the user lacks, sorted as their
// words are, each once.
func Missing(ctx context.Context, c authclient.AuthorizationV1Interface, needs []Permission) ([]Permission, error) {
	namespaced := map[string][]Permission{}
	var cluster []Permission
	for _, p := range Unique(needs) {
		if p.Namespace == "" {
			cluster = append(cluster, p)
		} else {
			namespaced[p.Namespace] = append(namespaced[p.Namespace], p)
		}
	}
	// The rules reviews and the cluster-scoped questions go at once: over
	// a slow link each round trip counts.
	rules := make(map[string][]authv1.ResourceRule, len(namespaced))
	var mu sync.Mutex
	var reviews sync.WaitGroup
	for ns := range namespaced {
		reviews.Go(func() {
			got, err := namespaceRules(ctx, c, ns)
			if err == nil {
				mu.Lock()
				rules[ns] = got
				mu.Unlock()
			}
		})
	}
	missing, err := ask(ctx, c, cluster)
	reviews.Wait()
	if err != nil {
		return nil, err
	}
	var rest []Permission
	for ns, perms := range namespaced {
		for _, p := range perms {
			if !grants(rules[ns], p) {
				rest = append(rest, p)
			}
		}
	}
	more, err := ask(ctx, c, rest)
	if err != nil {
		return nil, err
	}
	missing = append(missing, more...)
	slices.SortFunc(missing, func(a, b Permission) int { return strings.Compare(a.String(), b.String()) })
	return missing, nil
}

// Unique is perms with each permission once, in their first order.
func Unique(perms []Permission) []Permission {
	seen := make(map[Permission]bool, len(perms))
	out := make([]Permission, 0, len(perms))
	for _, p := range perms {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// ask puts each permission to a SelfSubjectAccessReview, reviewsAtOnce at
// a time, and returns those denied.
func ask(ctx context.Context, c authclient.AuthorizationV1Interface, perms []Permission) ([]Permission, error) {
	allowed := make([]bool, len(perms))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(reviewsAtOnce)
	for i, p := range perms {
		g.Go(func() error {
			// Each goroutine writes its own element: no lock.
			var err error
			allowed[i], err = allowedTo(ctx, c, p)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var missing []Permission
	for i, ok := range allowed {
		if !ok {
			missing = append(missing, perms[i])
		}
	}
	return missing, nil
}

// Everything tells whether the caller may do every verb on every resource
// of every group, in every namespace (cluster-admin): one question that
// answers, for a command over thousands of namespaces, what a check per
// namespace would (two requests each). False says nothing: check each.
func Everything(ctx context.Context, c authclient.AuthorizationV1Interface) (bool, error) {
	return allowedTo(ctx, c, Permission{Verb: "*", Group: "*", Resource: "*"})
}

func allowedTo(ctx context.Context, c authclient.AuthorizationV1Interface, p Permission) (bool, error) {
	review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
		Namespace: p.Namespace, Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Name: p.Name,
	}}}
	res, err := c.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("checking permission to %s (SelfSubjectAccessReview): %w", p, err)
	}
	return res.Status.Allowed, nil
}

// namespaceRules are the rules the user has in namespace; an incomplete
// review is an error, so that nothing is granted from it.
func namespaceRules(ctx context.Context, c authclient.AuthorizationV1Interface, namespace string) ([]authv1.ResourceRule, error) {
	review := &authv1.SelfSubjectRulesReview{Spec: authv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
	res, err := c.SelfSubjectRulesReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if res.Status.Incomplete {
		return nil, fmt.Errorf("incomplete rules: %s", res.Status.EvaluationError)
	}
	return res.Status.ResourceRules, nil
}

// grants tells whether a rule allows the permission, RBAC's way (its
// RuleAllows): "*" matches any verb, group or resource, "*/sub" any
// resource's subresource sub; resourceNames restrict to those names, so
// they never grant a request that names none (a list).
func grants(rules []authv1.ResourceRule, p Permission) bool {
	resource := p.Resource
	if p.Subresource != "" {
		resource += "/" + p.Subresource
	}
	for _, rule := range rules {
		if hasOrStar(rule.Verbs, p.Verb) && hasOrStar(rule.APIGroups, p.Group) && resourceMatches(rule.Resources, resource, p.Subresource) &&
			(len(rule.ResourceNames) == 0 || p.Name != "" && slices.Contains(rule.ResourceNames, p.Name)) {
			return true
		}
	}
	return false
}

func resourceMatches(resources []string, resource, subresource string) bool {
	return hasOrStar(resources, resource) || subresource != "" && slices.Contains(resources, "*/"+subresource)
}

func hasOrStar(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}
