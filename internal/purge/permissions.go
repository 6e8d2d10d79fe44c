package purge

import (
	"context"
	"fmt"
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

// missingPermissions asks the API server (SelfSubjectAccessReview) about
// every permission the force run needs, and returns all that are missing,
// before anything is changed.
func (r *run) missingPermissions(ctx context.Context, ns *v1.Namespace, disc *kube.Discovery, snap *deletion.Snapshot) ([]string, error) {
	needed := r.neededPermissions(ns, disc, snap)
	var (
		mu       sync.Mutex
		missing  []string
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, 16)
	)
	for _, perm := range needed {
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
	sort.Strings(missing)
	return missing, firstErr
}

func (r *run) neededPermissions(ns *v1.Namespace, disc *kube.Discovery, snap *deletion.Snapshot) []permission {
	out := []permission{
		{verb: "update", resource: "namespaces", subresource: "finalize"},
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
