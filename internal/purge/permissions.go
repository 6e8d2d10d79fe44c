package purge

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// Needs are what a force run with no escalation needs in namespace, over
// disc: the controller's own pass. A command that runs purge's pass as one
// of its steps (rescue --restore) puts them in its own one access check,
// and runs purge with Options.AccessChecked.
func Needs(disc *kube.Discovery, namespace string) []access.Permission {
	return needs(scope{ns: &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, disc: disc}, false, nil)
}

// needs are what a force run needs, for its one access check
// (internal/access): the pass's own (the finalize call, and per type what
// the controller sends, each object read first for the backup) and each
// escalation's.
func needs(s scope, orphans bool, actions []action) []access.Permission {
	var out []access.Permission
	if !orphans {
		out = append(out, access.Permission{Verb: "update", Resource: "namespaces", Subresource: "finalize"})
	}
	for gvr, res := range s.disc.DeletableResources() {
		verbs := map[string]bool{}
		for _, v := range res.Verbs {
			verbs[v] = true
		}
		base := access.Permission{Group: gvr.Group, Resource: gvr.Resource, Namespace: s.ns.Name}
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
	for _, a := range actions {
		out = append(out, a.needs(s)...)
	}
	return out
}

func with(p access.Permission, verb string) access.Permission {
	p.Verb = verb
	return p
}
