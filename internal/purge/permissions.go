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
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// missingPermissions asks the API server about every permission the force
// run needs, and returns all that are missing, before anything is changed.
// One SelfSubjectRulesReview of the namespace settles most of them; what
// it does not grant (it may be incomplete: webhook authorizers), and every
// cluster-scoped permission, is asked one by one (SelfSubjectAccessReview,
// 16 at a time): a 150-type namespace costs a few requests, not 300.
func (r *run) missingPermissions(ctx context.Context, ns *v1.Namespace, disc *kube.Discovery, snap *deletion.Snapshot) ([]Permission, error) {
	namespaced := r.neededPermissions(ns, disc, snap)
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
		rules, rulesErr = r.namespaceRules(ctx, ns.Name)
	}()
	missing, err := r.ask(ctx, cluster)
	<-reviewed
	if rulesErr == nil {
		namespaced = slices.DeleteFunc(namespaced, func(p Permission) bool { return grants(rules, p) })
	}
	more, err2 := r.ask(ctx, namespaced)
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
func (r *run) ask(ctx context.Context, perms []Permission) ([]Permission, error) {
	var (
		mu      sync.Mutex
		missing []Permission
		g       errgroup.Group
	)
	g.SetLimit(16)
	for _, perm := range perms {
		g.Go(func() error {
			allowed, err := r.allowed(ctx, perm)
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

func (r *run) neededPermissions(ns *v1.Namespace, disc *kube.Discovery, snap *deletion.Snapshot) []Permission {
	var out []Permission
	switch {
	case !r.Opts.Orphans:
		out = append(out, Permission{Verb: "update", Resource: "namespaces", Subresource: "finalize"})
	case r.Opts.strips():
		// Strips over a former namespace go through one re-created.
		out = append(out, Permission{Verb: "create", Resource: "namespaces"}, Permission{Verb: "delete", Resource: "namespaces"},
			Permission{Verb: "update", Resource: "namespaces", Subresource: "finalize"})
	}
	if ns.DeletionTimestamp == nil {
		out = append(out, Permission{Verb: "delete", Resource: "namespaces"})
	}
	if r.Opts.RemoveNamespaceFinalizers && len(ns.Finalizers) > 0 {
		out = append(out, Permission{Verb: "patch", Resource: "namespaces"})
	}
	if r.Opts.ForceDeletePods {
		out = append(out, Permission{Verb: "delete", Resource: "pods", Namespace: ns.Name})
	}
	for _, b := range r.report.Bypassed {
		if b.Status != BypassPlanned {
			continue
		}
		gvr := gvrOfKind(b.Kind)
		out = append(out, Permission{Verb: "list", Group: gvr.Group, Resource: gvr.Resource},
			Permission{Verb: "get", Group: gvr.Group, Resource: gvr.Resource, Name: b.Name},
			Permission{Verb: "patch", Group: gvr.Group, Resource: gvr.Resource, Name: b.Name})
	}
	for gvr, res := range disc.DeletableResources() {
		verbs := map[string]bool{}
		for _, v := range res.Verbs {
			verbs[v] = true
		}
		base := Permission{Group: gvr.Group, Resource: gvr.Resource, Namespace: ns.Name}
		if verbs["list"] {
			out = append(out, with(base, "list"))
		}
		if verbs["deletecollection"] {
			out = append(out, with(base, "deletecollection"))
		} else {
			// Deleting item by item, each is read in full for the backup.
			out = append(out, with(base, "delete"), with(base, "get"))
		}
		if r.Opts.strips() && hasFinalizers(snap, gvr) {
			out = append(out, with(base, "get"), with(base, "patch"))
		}
	}
	return out
}

func with(p Permission, verb string) Permission {
	p.Verb = verb
	return p
}

func hasFinalizers(snap *deletion.Snapshot, gvr schemaGVR) bool {
	if l := snap.Lists[gvr]; l != nil {
		for _, item := range l.Items {
			if len(item.Finalizers) > 0 {
				return true
			}
		}
	}
	return false
}

// namespaceRules are the RBAC rules the user has in namespace, nil when
// the review says it is incomplete.
func (r *run) namespaceRules(ctx context.Context, namespace string) ([]authv1.ResourceRule, error) {
	review := &authv1.SelfSubjectRulesReview{Spec: authv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
	res, err := r.Clients.Kube.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, review, metav1.CreateOptions{})
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

func (r *run) allowed(ctx context.Context, perm Permission) (bool, error) {
	review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
		Namespace: perm.Namespace, Verb: perm.Verb, Group: perm.Group, Resource: perm.Resource, Subresource: perm.Subresource, Name: perm.Name,
	}}}
	res, err := r.Clients.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return res.Status.Allowed, nil
}
