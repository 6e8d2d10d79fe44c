package restore

import (
	"context"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// Needs are what restoring p needs, for its one access check: the
// namespace (read, and created by server-side apply), each type it applies
// (a server-side apply creates or patches), the default ServiceAccount
// and the claims it waits for, and the volumes it binds again and gives
// their policy back.
func Needs(p *backup.Plan) []access.Permission {
	out := []access.Permission{
		{Verb: "get", Resource: "namespaces", Name: p.Into},
		{Verb: "create", Resource: "namespaces"},
		{Verb: "patch", Resource: "namespaces", Name: p.Into},
		{Verb: "get", Resource: "serviceaccounts", Namespace: p.Into},
		{Verb: "get", Resource: "persistentvolumeclaims", Namespace: p.Into},
		{Verb: "get", Resource: "persistentvolumes"},
		{Verb: "list", Resource: "persistentvolumes"},
		{Verb: "patch", Resource: "persistentvolumes"},
	}
	if p.Clone() {
		// Whether the saved namespace's claims still hold their volumes.
		out = append(out, access.Permission{Verb: "get", Resource: "persistentvolumeclaims", Namespace: p.From})
	}
	for _, s := range p.Steps {
		if s.Verdict != backup.Restore {
			continue
		}
		for _, verb := range []string{"create", "patch"} {
			out = append(out, access.Permission{Verb: verb, Group: s.Group, Resource: s.Resource, Namespace: p.Into})
		}
	}
	return access.Unique(out)
}

// Check is restore's one access check: a *access.MissingError names what
// the user may not do; nothing was changed.
func Check(ctx context.Context, c *kube.Clients, p *backup.Plan) error {
	return access.Check(ctx, c.Kube.AuthorizationV1(), Needs(p))
}
