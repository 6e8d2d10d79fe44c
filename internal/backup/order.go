package backup

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Stage is one entry of the restore order: the types it brings back, and
// why they come at that point. Types no stage lists come back between the
// last listed stage before workloads and the workloads, in alphabetical
// order of resource and group: a stable order for custom resources.
type Stage struct {
	Resources []schema.GroupResource
	Why       string
}

// otherTypes marks, in Order, where the types no stage lists go.
const otherTypes = "other types"

// Order is the restore order. An object whose owner the restore brings
// back comes right after its owner, whatever its type's place: it is
// applied with its owner's new uid.
func Order() []Stage {
	return []Stage{
		{[]schema.GroupResource{grAccounts},
			"pods and workloads run as them: admission refuses a pod whose ServiceAccount is missing"},
		{[]schema.GroupResource{{Group: "rbac.authorization.k8s.io", Resource: "roles"}, {Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}},
			"what the accounts may do, before anything runs as them"},
		{[]schema.GroupResource{{Resource: "resourcequotas"}, {Resource: "limitranges"}},
			"admission applies them to what is created after them: they bound and default the restored pods as they did"},
		{[]schema.GroupResource{{Group: "networking.k8s.io", Resource: "networkpolicies"}},
			"no restored pod runs a moment without its network policies"},
		{[]schema.GroupResource{grSecrets, grConfigMaps},
			"pods mount and read them: a pod started before them waits or fails"},
		{[]schema.GroupResource{grClaims},
			"bound to their volumes before the pods that mount them"},
		{[]schema.GroupResource{grServices},
			"a StatefulSet's governing Service before it; pods get the environment variables of the Services there when they start"},
		{nil, otherTypes + ": custom resources and the rest, in alphabetical order"},
		{[]schema.GroupResource{{Group: "apps", Resource: "deployments"}, {Group: "apps", Resource: "statefulsets"},
			{Group: "apps", Resource: "daemonsets"}, grReplicaSets, grJobs, {Group: "batch", Resource: "cronjobs"}, grPods},
			"what runs comes last: everything its pods reference is there when they start"},
	}
}

// Stage is the step's stage in Order: steps of one stage may be applied
// together, those of a later stage only once the earlier ones are.
func (s Step) Stage() int { return rankOf(s.GroupResource()) }

// rankOf is a type's stage in Order, and for the types no stage lists,
// the stage that holds them.
func rankOf(gr schema.GroupResource) int {
	other := 0
	for i, s := range Order() {
		if s.Resources == nil {
			other = i
		}
		if slices.Contains(s.Resources, gr) {
			return i
		}
	}
	return other
}

// compareTypes orders two types by Order, then by resource and group.
func compareTypes(a, b schema.GroupResource) int {
	return cmp.Or(cmp.Compare(rankOf(a), rankOf(b)), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Group, b.Group))
}
