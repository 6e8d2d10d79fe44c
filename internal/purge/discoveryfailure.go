package purge

import (
	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// --finalize-despite-discovery-failure finalizes when the pass's only
// error is a partial discovery failure.
var finalizeDespiteDiscoveryEscalation = Escalation{
	Flag: diagnose.FlagFinalizeDespiteDiscovery,
	Help: "Escalation: finalize although some API groups cannot be discovered (their content is orphaned in storage)",
	Leak: "objects of the groups that cannot be discovered stay in storage, orphaned ('explain --orphans' lists them once their API is back)",
	consent: func([]string) []string {
		return []string{"and finalize it although some API groups cannot be discovered"}
	},
	answers: func(_ []string, a diagnose.Action) bool { return a.Flag == diagnose.FlagFinalizeDespiteDiscovery },
	start:   func([]string) action { return discoveryFailureFinalizer{} },
}

type discoveryFailureFinalizer struct{}

// needs: the finalize call, which every run has.
func (discoveryFailureFinalizer) needs(scope) []access.Permission {
	return []access.Permission{{Verb: "update", Resource: "namespaces", Subresource: "finalize"}}
}

func (discoveryFailureFinalizer) configure(d *deletion.NamespacedResourcesDeleter) {
	d.FinalizeDespiteDiscoveryFailure = true
}
