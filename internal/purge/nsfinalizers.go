package purge

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// --remove-namespace-finalizers drops the spec.finalizers tokens other
// systems set, and the namespace's own metadata.finalizers.
var removeNamespaceFinalizersEscalation = Escalation{
	Flag: diagnose.FlagRemoveNamespaceFinalizers,
	Help: "Escalation: also remove spec.finalizers tokens other than kubernetes, and the namespace's metadata.finalizers",
	Leak: "whatever the systems that set those tokens and finalizers would have cleaned up for the namespace is left behind",
	consent: func([]string) []string {
		return []string{"and remove the namespace's spec.finalizers tokens other than kubernetes, and its metadata.finalizers"}
	},
	answers: func(_ []string, a diagnose.Action) bool { return a.Flag == diagnose.FlagRemoveNamespaceFinalizers },
	start:   func([]string) action { return namespaceFinalizerRemover{} },
	changes: map[ChangeKind]func(Change, string) string{ChangeRemovedNamespaceFinalizers: func(c Change, _ string) string {
		return fmt.Sprintf("removed metadata.finalizers %v of namespace %s", c.Finalizers, c.Name)
	}},
}

// ChangeRemovedNamespaceFinalizers: --remove-namespace-finalizers.
const ChangeRemovedNamespaceFinalizers ChangeKind = "RemovedNamespaceFinalizers"

type namespaceFinalizerRemover struct{}

// needs: the finalize call (every run has it) drops the tokens; the
// namespace's own finalizers go with a patch.
func (namespaceFinalizerRemover) needs(s scope) []access.Permission {
	out := []access.Permission{{Verb: "update", Resource: "namespaces", Subresource: "finalize"}}
	if len(s.ns.Finalizers) > 0 {
		out = append(out, access.Permission{Verb: "patch", Resource: "namespaces"})
	}
	return out
}

// configure makes the finalize call drop every token, not only kubernetes.
func (namespaceFinalizerRemover) configure(d *deletion.NamespacedResourcesDeleter) {
	d.RemoveNamespaceFinalizers = true
}

// namespaceHeld empties the metadata.finalizers of a finalized namespace,
// saved already in the backup's namespace.yaml.
func (namespaceFinalizerRemover) namespaceHeld(ctx context.Context, a actor, ns *v1.Namespace) (int, error) {
	before, err := toUnstructured(ns, "v1", "Namespace")
	if err != nil {
		return 0, err
	}
	after := before.DeepCopy()
	after.SetFinalizers(nil)
	patch, err := guardedPatch(before, after)
	if err != nil {
		return 0, err
	}
	sent, err := a.send(ctx, Write{Verb: "patch", Resource: namespacesGVR, Name: ns.Name, Patch: patch,
		Play:   func(p *planState) { p.ns.RemoveMetadataFinalizers() },
		Change: &Change{Kind: ChangeRemovedNamespaceFinalizers, Resource: "namespaces", Name: ns.Name, Finalizers: ns.Finalizers}})
	step := Step{Verb: "patch", Resource: "namespaces", Name: ns.Name, Objects: 1, Status: pick(sent, StepSent, StepPlanned)}
	if err != nil {
		step.Status, step.Error = StepFailed, err.Error()
		a.step(step)
		a.fail(ctx, namespacesGVR, Failure{Verb: "patch", Resource: "namespaces", Name: ns.Name}, err)
		return 0, fmt.Errorf("removing metadata.finalizers of namespace %s: %w", ns.Name, err)
	}
	a.step(step)
	return 1, nil
}
