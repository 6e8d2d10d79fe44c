package purge

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	authv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// permission is one verb on one resource that the plan needs.
type permission struct {
	verb, group, resource, subresource, namespace, name string
}

func (p permission) String() string {
	res := p.resource
	if p.group != "" {
		res += "." + p.group
	}
	if p.subresource != "" {
		res += "/" + p.subresource
	}
	if p.name != "" {
		res += " " + p.name
	}
	if p.namespace != "" {
		return fmt.Sprintf("%s %s in namespace %s", p.verb, res, p.namespace)
	}
	return fmt.Sprintf("%s %s", p.verb, res)
}

// missingPermissions asks the API server about every permission the force
// run needs, and returns all that are missing, before anything is changed.
// One SelfSubjectRulesReview of the namespace settles most of them; what
// it does not grant (it may be incomplete: webhook authorizers), and every
// cluster-scoped permission, is asked one by one (SelfSubjectAccessReview,
// 16 at a time): a 150-type namespace costs a few requests, not 300.
func (r *run) missingPermissions(ctx context.Context, ns *v1.Namespace, disc *kube.Discovery, snap *deletion.Snapshot) ([]string, error) {
	namespaced := r.neededPermissions(ns, disc, snap)
	var cluster []permission
	namespaced = slices.DeleteFunc(namespaced, func(p permission) bool {
		if p.namespace == "" {
			cluster = append(cluster, p)
		}
		return p.namespace == ""
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
		namespaced = slices.DeleteFunc(namespaced, func(p permission) bool { return grants(rules, p) })
	}
	more, err2 := r.ask(ctx, namespaced)
	missing = append(missing, more...)
	sort.Strings(missing)
	return missing, cmp.Or(err, err2)
}

// ask puts each permission to a SelfSubjectAccessReview, 16 at a time,
// and returns those denied.
func (r *run) ask(ctx context.Context, perms []permission) ([]string, error) {
	var (
		mu       sync.Mutex
		missing  []string
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, 16)
	)
	for _, perm := range perms {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			allowed, err := r.allowed(ctx, perm)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && firstErr == nil:
				firstErr = fmt.Errorf("checking permissions (SelfSubjectAccessReview): %w", err)
			case err == nil && !allowed:
				missing = append(missing, perm.String())
			}
		})
	}
	wg.Wait()
	return missing, firstErr
}

func (r *run) neededPermissions(ns *v1.Namespace, disc *kube.Discovery, snap *deletion.Snapshot) []permission {
	var out []permission
	switch {
	case !r.Opts.Orphans:
		out = append(out, permission{verb: "update", resource: "namespaces", subresource: "finalize"})
	case r.Opts.Escalations.strips():
		// Strips over a former namespace go through one re-created.
		out = append(out, permission{verb: "create", resource: "namespaces"}, permission{verb: "delete", resource: "namespaces"},
			permission{verb: "update", resource: "namespaces", subresource: "finalize"})
	}
	if ns.DeletionTimestamp == nil {
		out = append(out, permission{verb: "delete", resource: "namespaces"})
	}
	if r.Opts.Escalations.RemoveNamespaceFinalizers && len(ns.Finalizers) > 0 {
		out = append(out, permission{verb: "patch", resource: "namespaces"})
	}
	esc := r.Opts.Escalations
	if esc.ForceDeletePods {
		out = append(out, permission{verb: "delete", resource: "pods", namespace: ns.Name})
	}
	for _, b := range r.report.Bypassed {
		if b.Status != BypassPlanned {
			continue
		}
		gvr := gvrOfKind(b.Kind)
		out = append(out, permission{verb: "list", group: gvr.Group, resource: gvr.Resource},
			permission{verb: "get", group: gvr.Group, resource: gvr.Resource, name: b.Name},
			permission{verb: "patch", group: gvr.Group, resource: gvr.Resource, name: b.Name})
	}
	for gvr, res := range disc.DeletableResources() {
		verbs := map[string]bool{}
		for _, v := range res.Verbs {
			verbs[v] = true
		}
		base := permission{group: gvr.Group, resource: gvr.Resource, namespace: ns.Name}
		if verbs["list"] {
			out = append(out, with(base, "list"))
		}
		if verbs["deletecollection"] {
			out = append(out, with(base, "deletecollection"))
		} else {
			// Deleting item by item, each is read in full for the backup.
			out = append(out, with(base, "delete"), with(base, "get"))
		}
		if r.Opts.Escalations.strips() && hasFinalizers(snap, gvr) {
			out = append(out, with(base, "get"), with(base, "patch"))
		}
	}
	return out
}

func with(p permission, verb string) permission {
	p.verb = verb
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
func grants(rules []authv1.ResourceRule, p permission) bool {
	resource := p.resource
	if p.subresource != "" {
		resource += "/" + p.subresource
	}
	for _, rule := range rules {
		if hasOrStar(rule.Verbs, p.verb) && hasOrStar(rule.APIGroups, p.group) && hasOrStar(rule.Resources, resource) &&
			(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, p.name)) {
			return true
		}
	}
	return false
}

func hasOrStar(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

func (r *run) allowed(ctx context.Context, perm permission) (bool, error) {
	review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
		Namespace: perm.namespace, Verb: perm.verb, Group: perm.group, Resource: perm.resource, Subresource: perm.subresource, Name: perm.name,
	}}}
	res, err := r.Clients.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return res.Status.Allowed, nil
}
