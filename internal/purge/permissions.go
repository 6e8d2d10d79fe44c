package purge

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"
	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// missingPermissions asks the API server about every permission the force
// run needs, and returns all that are missing, before anything is changed.
// One SelfSubjectRulesReview of the namespace settles most of them; what
// it does not grant (it may be incomplete: webhook authorizers), and every
// cluster-scoped permission, is asked one by one (SelfSubjectAccessReview,
// 16 at a time): a 150-type namespace costs a few requests, not 300.
func (r *run) missingPermissions(ctx context.Context, s scope) ([]Permission, error) {
	return access{r.Clients}.missing(ctx, s.ns.Name, r.neededPermissions(s))
}

// access asks the API server what the user may do.
type access struct{ clients *kube.Clients }

// missing returns the permissions of needed the user lacks; namespace is
// where the namespaced ones apply.
func (c access) missing(ctx context.Context, namespace string, needed []Permission) ([]Permission, error) {
	namespaced := needed
	var cluster []Permission
	namespaced = slices.DeleteFunc(namespaced, func(p Permission) bool {
		if p.Namespace == "" {
			cluster = append(cluster, p)
		}
		return p.Namespace == ""
	})
	// The rules review and the cluster-scoped questions go at once: over a
	// slow link each round trip counts.
	var rules []authv1.ResourceRule
	var rulesErr error
	reviewed := make(chan struct{})
	go func() {
		defer close(reviewed)
		rules, rulesErr = c.namespaceRules(ctx, namespace)
	}()
	missing, err := c.ask(ctx, cluster)
	<-reviewed
	if rulesErr == nil {
		namespaced = slices.DeleteFunc(namespaced, func(p Permission) bool { return grants(rules, p) })
	}
	more, err2 := c.ask(ctx, namespaced)
	missing = append(missing, more...)
	sort.Slice(missing, func(i, j int) bool { return permissionKey(missing[i]) < permissionKey(missing[j]) })
	return missing, cmp.Or(err, err2)
}

// permissionKey orders permissions as their words do: verb, then resource.
func permissionKey(p Permission) string {
	return p.Verb + " " + p.Resource + "." + p.Group + "/" + p.Subresource + " " + p.Name + " " + p.Namespace
}

// ask puts each permission to a SelfSubjectAccessReview, 16 at a time,
// and returns those denied.
func (c access) ask(ctx context.Context, perms []Permission) ([]Permission, error) {
	var (
		mu      sync.Mutex
		missing []Permission
		g       errgroup.Group
	)
	g.SetLimit(16)
	for _, perm := range perms {
		g.Go(func() error {
			allowed, err := c.allowed(ctx, perm)
			if err != nil {
				return fmt.Errorf("checking permissions (SelfSubjectAccessReview): %w", err)
			}
			if !allowed {
				mu.Lock()
				missing = append(missing, perm)
				mu.Unlock()
			}
			return nil
		})
	}
	err := g.Wait()
	return missing, err
}

// neededPermissions are the pass's own (the finalize call, and per type
// what the controller sends, each object read first for the backup) and
// each escalation's, once each.
func (r *run) neededPermissions(s scope) []Permission {
	var out []Permission
	if !r.Opts.Orphans {
		out = append(out, Permission{Verb: "update", Resource: "namespaces", Subresource: "finalize"})
	}
	for gvr, res := range s.disc.DeletableResources() {
		verbs := map[string]bool{}
		for _, v := range res.Verbs {
			verbs[v] = true
		}
		base := Permission{Group: gvr.Group, Resource: gvr.Resource, Namespace: s.ns.Name}
		if verbs["list"] {
			out = append(out, with(base, "list"))
		}
		if verbs["deletecollection"] {
			out = append(out, with(base, "deletecollection"))
		} else {
			// Deleting item by item, each is read in full for the backup.
			out = append(out, with(base, "delete"), with(base, "get"))
		}
	}
	for _, a := range r.actions {
		out = append(out, a.needs(s)...)
	}
	return uniquePermissions(out)
}

func uniquePermissions(perms []Permission) []Permission {
	seen := map[Permission]bool{}
	return slices.DeleteFunc(perms, func(p Permission) bool {
		dup := seen[p]
		seen[p] = true
		return dup
	})
}

func with(p Permission, verb string) Permission {
	p.Verb = verb
	return p
}

// namespaceRules are the RBAC rules the user has in namespace, nil when
// the review says it is incomplete.
func (c access) namespaceRules(ctx context.Context, namespace string) ([]authv1.ResourceRule, error) {
	review := &authv1.SelfSubjectRulesReview{Spec: authv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
	res, err := c.clients.Kube.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if res.Status.Incomplete {
		return nil, fmt.Errorf("incomplete rules: %s", res.Status.EvaluationError)
	}
	return res.Status.ResourceRules, nil
}

// grants tells whether a rule allows the permission, RBAC's way: "*"
// matches any verb, group or resource; resourceNames restrict.
func grants(rules []authv1.ResourceRule, p Permission) bool {
	resource := p.Resource
	if p.Subresource != "" {
		resource += "/" + p.Subresource
	}
	for _, rule := range rules {
		if hasOrStar(rule.Verbs, p.Verb) && hasOrStar(rule.APIGroups, p.Group) && hasOrStar(rule.Resources, resource) &&
			(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, p.Name)) {
			return true
		}
	}
	return false
}

func hasOrStar(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

func (c access) allowed(ctx context.Context, perm Permission) (bool, error) {
	review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
		Namespace: perm.Namespace, Verb: perm.Verb, Group: perm.Group, Resource: perm.Resource, Subresource: perm.Subresource, Name: perm.Name,
	}}}
	res, err := c.clients.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return res.Status.Allowed, nil
}
