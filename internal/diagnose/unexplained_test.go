package diagnose_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	. "github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// conversionFailure is what kube-apiserver answers for a custom
// resource whose conversion webhook cannot be called.
const conversionFailure = `conversion webhook for example.com/v1, Kind=Widget failed: Post "https://conv.conv-system.svc:443/convert?timeout=30s": service "conv" not found`

// failedPass is the namespace with the controller's ContentFailure True,
// in its words, while ns-doctor sees nothing left.
func failedPass(message string) Observation {
	obs := observation()
	obs.Namespace.Status.Conditions = append(obs.Namespace.Status.Conditions, v1.NamespaceCondition{
		Type: v1.NamespaceDeletionContentFailure, Status: v1.ConditionTrue, Reason: "ContentDeletionFailed", Message: message})
	return obs
}

// The controller says its pass failed, ns-doctor's own pass does not: the
// verdict is never the all-clear. The cause is found where the type
// fails across namespaces (a conversion webhook down fails the type in
// every namespace, even one that holds none), and told as that type's
// blocker with the controller's words; found nowhere, the failure is a
// blocker of its own, in the controller's words.
func TestNoAllClearAgainstTheControllersWord(t *testing.T) {
	msg := "Failed to delete all resource types, 1 remaining: " + conversionFailure
	crd := CRD{Name: "widgets.example.com", Group: "example.com", Plural: "widgets", Kind: "Widget", ConversionService: &ServiceRef{Namespace: "conv-system", Name: "conv"}}

	found := failedPass(msg)
	found.CRDs = []CRD{crd}
	found.Services["conv-system/conv"] = ServiceState{}
	// kube-apiserver 1.37.2's answer to a list across namespaces, word for
	// word but for the names.
	unreadable := `failed to read one or more widgets.example.com from the storage: StorageError: corrupt object, Code: 7, Key: /registry/example.com/widgets/team-b/w1, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=218: ` + conversionFailure
	found.Probes = []Probe{{Resource: configMaps}, {Resource: widgets, Err: apierrors.NewInternalError(errors.New(unreadable))}}
	r := Diagnose(found)
	if r.Verdict.State != StateStuck || len(r.Blockers) != 1 || r.Blockers[0].Kind != BlockerConversionWebhook {
		t.Fatalf("cause found elsewhere: verdict %s, blockers:\n%s", r.Verdict.State, dump(r.Blockers))
	}
	w := printer.WordsOf(r.Blockers[0])
	evidence := strings.Join(w.Evidence, "\n")
	if !strings.Contains(w.Summary, "the namespace controller cannot delete widgets.example.com here, though ns-doctor lists none in this namespace: the type fails across namespaces") ||
		!strings.Contains(evidence, "the namespace controller's last pass: "+msg) || !strings.Contains(evidence, "a list of widgets.example.com across namespaces: ") ||
		!strings.Contains(evidence, "what cannot be read is elsewhere: team-b/w1") || !strings.Contains(w.NextStep, "restore service conv-system/conv") {
		t.Errorf("words %+v", w)
	}

	none := failedPass(msg)
	none.Probes = []Probe{{Resource: widgets}}
	r = Diagnose(none)
	if r.Verdict.State != StateStuck || len(r.Blockers) != 1 || r.Blockers[0].Kind != BlockerUnexplainedFailure {
		t.Fatalf("unexplained: verdict %s, blockers:\n%s", r.Verdict.State, dump(r.Blockers))
	}
	w = printer.WordsOf(r.Blockers[0])
	if !strings.Contains(w.Summary, "the namespace controller says its last pass failed (DeletionContentFailure=True ContentDeletionFailed)") ||
		!strings.Contains(strings.Join(w.Evidence, "\n"), "the namespace controller: "+msg) ||
		!strings.Contains(strings.Join(w.Evidence, "\n"), "listed across namespaces, and answering: widgets.example.com") ||
		!strings.HasPrefix(w.NextStep, "kubectl ns-doctor purge demo --dry-run=server") {
		t.Errorf("words %+v", w)
	}

	discovery := observation()
	discovery.Namespace.Status.Conditions[0] = v1.NamespaceCondition{Type: v1.NamespaceDeletionDiscoveryFailure, Status: v1.ConditionTrue, Reason: "DiscoveryFailed",
		Message: "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"}
	if r := Diagnose(discovery); r.Verdict.State != StateStuck || len(r.Blockers) != 1 || r.Blockers[0].Subject != string(v1.NamespaceDeletionDiscoveryFailure) {
		t.Errorf("a discovery failure only the controller saw: verdict %s, blockers:\n%s", r.Verdict.State, dump(r.Blockers))
	}
}

// The counter-examples: the controller and ns-doctor agree; the
// controller's count of what remains is older than ns-doctor's (the
// content went since: no failure); its failure is a webhook's denial,
// which its own words explain; ns-doctor sees the failure too; a type
// failing elsewhere, but a forbidden list across namespaces, is no cause.
func TestControllersWordExplainedOrNoFailure(t *testing.T) {
	if r := Diagnose(observation()); r.Verdict.State != StateTerminating || len(r.Blockers) != 0 {
		t.Errorf("agreeing: verdict %s, blockers:\n%s", r.Verdict.State, dump(r.Blockers))
	}
	stale := observation()
	stale.Namespace.Status.Conditions = append(stale.Namespace.Status.Conditions, v1.NamespaceCondition{
		Type: v1.NamespaceContentRemaining, Status: v1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "Some resources are remaining: configmaps. has 1 resource instances"})
	if r := Diagnose(stale); r.Verdict.State != StateTerminating || len(r.Blockers) != 0 {
		t.Errorf("a count older than ns-doctor's: verdict %s, blockers:\n%s", r.Verdict.State, dump(r.Blockers))
	}
	denied := failedPass(`Failed to delete all resource types, 1 remaining: admission webhook "keep.example.com" denied the request: tenants keep their widgets`)
	r := Diagnose(denied)
	for _, b := range r.Blockers {
		if b.Kind == BlockerUnexplainedFailure {
			t.Errorf("a denial, explained by the controller's words, called unexplained:\n%s", dump(r.Blockers))
		}
	}
	forbidden := failedPass("Failed to delete all resource types, 1 remaining: " + conversionFailure)
	forbidden.Probes = []Probe{{Resource: widgets, Err: apierrors.NewForbidden(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "", errors.New("no"))}}
	r = Diagnose(forbidden)
	if len(r.Blockers) != 1 || r.Blockers[0].Kind != BlockerUnexplainedFailure {
		t.Errorf("a forbidden probe taken for a cause:\n%s", dump(r.Blockers))
	}
}

// A held object that blocks an owner deleted in the foreground
// (blockOwnerDeletion): the owner, of another type of the namespace or
// cluster-scoped, waits on it too, and the blocker says so; a reference
// that does not block, or an owner not deleted in the foreground, says
// nothing.
func TestOwnersWaitingOnAHeldObject(t *testing.T) {
	owner := terminatingItem("w1", 5*time.Minute, metav1.FinalizerDeleteDependents)
	member := terminatingItem("member", 5*time.Minute, "example.com/hold")
	member.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "w1", UID: owner.UID, BlockOwnerDeletion: ptr.To(true)}}
	loose := terminatingItem("loose", 5*time.Minute, "example.com/hold")
	loose.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "w1", UID: owner.UID}}
	obs := with(with(observation(), widgets, owner), configMaps, member, loose)
	obs.Evidence.ForegroundOwners = []WaitingOwner{{Owner: "fleets.example.com/f1", Dependent: "configmaps/member", ClusterScoped: true}}
	var evidence string
	for _, b := range Diagnose(obs).Blockers {
		if b.Kind == BlockerFinalizers && b.Subject == "example.com/hold" {
			evidence = strings.Join(printer.WordsOf(b).Evidence, "\n")
		}
	}
	for _, want := range []string{
		"widgets.example.com/w1 is being deleted in the foreground and waits on configmaps/member too (blockOwnerDeletion): releasing it lets widgets.example.com/w1 go as well",
		"fleets.example.com/f1 (cluster-scoped, not deleted with the namespace) is being deleted in the foreground and waits on configmaps/member too",
	} {
		if !strings.Contains(evidence, want) {
			t.Errorf("evidence lacks %q:\n%s", want, evidence)
		}
	}
	if strings.Contains(evidence, "configmaps/loose too") {
		t.Errorf("a reference that does not block named:\n%s", evidence)
	}
}
