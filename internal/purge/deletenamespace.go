package purge

import (
	"context"
	"fmt"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// --delete-namespace sends the DELETE of an Active namespace first.
var deleteNamespaceEscalation = Escalation{
	Flag:      diagnose.FlagDeleteNamespace,
	Help:      "Delete the namespace first if it is Active",
	Leak:      "a namespace deletion cannot be cancelled: everything in it goes",
	Conflicts: []string{"--orphans"},
	consent: func([]string) []string {
		return []string{"and first delete the namespace if it is Active"}
	},
	answers: func(_ []string, a diagnose.Action) bool { return a.Flag == diagnose.FlagDeleteNamespace },
	start:   func([]string) action { return namespaceDeleter{} },
	changes: map[ChangeKind]func(Change, string) string{ChangeDeletedActiveNamespace: func(c Change, _ string) string {
		return "deleted namespace " + c.Name + " (it was Active)"
	}},
}

// ChangeDeletedActiveNamespace: --delete-namespace.
const ChangeDeletedActiveNamespace ChangeKind = "DeletedActiveNamespace"

type namespaceDeleter struct{}

func (namespaceDeleter) needs(s scope) []access.Permission {
	if s.ns.DeletionTimestamp != nil {
		return nil
	}
	return []access.Permission{{Verb: "delete", Resource: "namespaces"}}
}

// before deletes the namespace when it is Active; it is in the backup
// already. A plan plays the namespace as deleted from the start.
func (namespaceDeleter) before(ctx context.Context, a actor, s scope) (func(), error) {
	if s.ns.DeletionTimestamp != nil {
		return func() {}, nil
	}
	sent, err := a.send(ctx, Write{Verb: "delete", Resource: namespacesGVR, Name: s.ns.Name,
		Change: &Change{Kind: ChangeDeletedActiveNamespace, Resource: "namespaces", Name: s.ns.Name}})
	step := Step{Verb: "delete", Resource: "namespaces", Name: s.ns.Name, Objects: 1, Status: pick(sent, StepSent, StepPlanned)}
	if err != nil {
		step.Status, step.Error = StepFailed, err.Error()
		a.fail(ctx, namespacesGVR, Failure{Verb: "delete", Resource: "namespaces", Name: s.ns.Name}, err)
	}
	a.step(step)
	if err != nil && sent.ForReal {
		return func() {}, fmt.Errorf("deleting namespace %s: %w", s.ns.Name, err)
	}
	return func() {}, nil
}
