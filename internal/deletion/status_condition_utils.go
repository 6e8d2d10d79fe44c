// Package deletion reproduces the namespace controller's deletion logic
// (k8s.io/kubernetes pkg/controller/namespace/deletion, v1.36). This file
// mirrors status_condition_utils.go: it turns what a deletion pass saw into
// the five namespace conditions, with the controller's reasons and messages
// byte for byte.
package deletion

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// ConditionTypes are the conditions the controller maintains, in its order.
var ConditionTypes = []v1.NamespaceConditionType{
	v1.NamespaceDeletionDiscoveryFailure,
	v1.NamespaceDeletionGVParsingFailure,
	v1.NamespaceDeletionContentFailure,
	v1.NamespaceContentRemaining,
	v1.NamespaceFinalizersRemaining,
}

var (
	okMessages = map[v1.NamespaceConditionType]string{
		v1.NamespaceDeletionDiscoveryFailure: "All resources successfully discovered",
		v1.NamespaceDeletionGVParsingFailure: "All legacy kube types successfully parsed",
		v1.NamespaceDeletionContentFailure:   "All content successfully deleted, may be waiting on finalization",
		v1.NamespaceContentRemaining:         "All content successfully removed",
		v1.NamespaceFinalizersRemaining:      "All content-preserving finalizers finished",
	}
	okReasons = map[v1.NamespaceConditionType]string{
		v1.NamespaceDeletionDiscoveryFailure: "ResourcesDiscovered",
		v1.NamespaceDeletionGVParsingFailure: "ParsedGroupVersions",
		v1.NamespaceDeletionContentFailure:   "ContentDeleted",
		v1.NamespaceContentRemaining:         "ContentRemoved",
		v1.NamespaceFinalizersRemaining:      "ContentHasNoFinalizers",
	}
)

// ContentTotals is upstream's allGVRDeletionMetadata: what remains after a
// pass, per resource and per finalizer.
type ContentTotals struct {
	GVRToNumRemaining        map[schema.GroupVersionResource]int
	FinalizersToNumRemaining map[string]int
}

// NewContentTotals returns empty totals.
func NewContentTotals() ContentTotals {
	return ContentTotals{
		GVRToNumRemaining:        map[schema.GroupVersionResource]int{},
		FinalizersToNumRemaining: map[string]int{},
	}
}

// ConditionUpdater is upstream's namespaceConditionUpdater. now stamps
// lastTransitionTime, so tests can fix it.
type ConditionUpdater struct {
	newConditions       []v1.NamespaceCondition
	deleteContentErrors []error
	now                 metav1.Time
}

// NewConditionUpdater returns an updater stamping times with now.
func NewConditionUpdater(now metav1.Time) *ConditionUpdater {
	return &ConditionUpdater{now: now}
}

// ProcessGroupVersionErr records a GroupVersion parsing failure.
func (u *ConditionUpdater) ProcessGroupVersionErr(err error) {
	u.add(v1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", err.Error())
}

// ProcessDiscoverResourcesErr records a (partial) discovery failure.
func (u *ConditionUpdater) ProcessDiscoverResourcesErr(err error) {
	msg := err.Error()
	// A type assertion, not errors.As, exactly as upstream: a wrapped
	// error gets the plain message.
	if derr, ok := err.(*discovery.ErrGroupDiscoveryFailed); ok {
		msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(derr.Groups), err)
	}
	u.add(v1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
}

// ProcessContentTotals records remaining content and finalizers.
func (u *ConditionUpdater) ProcessContentTotals(totals ContentTotals) {
	if len(totals.GVRToNumRemaining) != 0 {
		var remaining []string
		for gvr, n := range totals.GVRToNumRemaining {
			if n == 0 {
				continue
			}
			remaining = append(remaining, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
		}
		sort.Strings(remaining)
		u.add(v1.NamespaceContentRemaining, "SomeResourcesRemain",
			fmt.Sprintf("Some resources are remaining: %s", strings.Join(remaining, ", ")))
	}
	if len(totals.FinalizersToNumRemaining) != 0 {
		var remaining []string
		for finalizer, n := range totals.FinalizersToNumRemaining {
			if n == 0 {
				continue
			}
			remaining = append(remaining, fmt.Sprintf("%s in %d resource instances", finalizer, n))
		}
		sort.Strings(remaining)
		u.add(v1.NamespaceFinalizersRemaining, "SomeFinalizersRemain",
			fmt.Sprintf("Some content in the namespace has finalizers remaining: %s", strings.Join(remaining, ", ")))
	}
}

// ProcessDeleteContentErr records one resource type's deletion error.
func (u *ConditionUpdater) ProcessDeleteContentErr(err error) {
	u.deleteContentErrors = append(u.deleteContentErrors, err)
}

// Update writes the processed conditions into status the controller's way
// and reports whether anything changed. lastTransitionTime moves only when
// a condition's status flips.
func (u *ConditionUpdater) Update(status *v1.NamespaceStatus) bool {
	if getCondition(u.newConditions, v1.NamespaceDeletionContentFailure) == nil {
		if c := u.makeDeleteContentCondition(); c != nil {
			u.newConditions = append(u.newConditions, *c)
		}
	}
	return u.updateConditions(status)
}

// Conditions returns the five conditions a fresh status would get.
func (u *ConditionUpdater) Conditions() []v1.NamespaceCondition {
	var status v1.NamespaceStatus
	u.Update(&status)
	return status.Conditions
}

func (u *ConditionUpdater) add(t v1.NamespaceConditionType, reason, msg string) {
	u.newConditions = append(u.newConditions, v1.NamespaceCondition{
		Type: t, Status: v1.ConditionTrue, LastTransitionTime: u.now, Reason: reason, Message: msg,
	})
}

func (u *ConditionUpdater) makeDeleteContentCondition() *v1.NamespaceCondition {
	if len(u.deleteContentErrors) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(u.deleteContentErrors))
	for _, e := range u.deleteContentErrors {
		msgs = append(msgs, e.Error())
	}
	sort.Strings(msgs)
	return &v1.NamespaceCondition{
		Type: v1.NamespaceDeletionContentFailure, Status: v1.ConditionTrue, LastTransitionTime: u.now,
		Reason:  "ContentDeletionFailed",
		Message: fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(msgs), strings.Join(msgs, ", ")),
	}
}

func (u *ConditionUpdater) updateConditions(status *v1.NamespaceStatus) (hasChanged bool) {
	for _, conditionType := range ConditionTypes {
		newCondition := getCondition(u.newConditions, conditionType)
		if newCondition == nil {
			newCondition = u.newSuccessfulCondition(conditionType)
		}
		oldCondition := getCondition(status.Conditions, conditionType)
		if oldCondition == nil {
			status.Conditions = append(status.Conditions, *newCondition)
			hasChanged = true
		} else if oldCondition.Status != newCondition.Status || oldCondition.Message != newCondition.Message || oldCondition.Reason != newCondition.Reason {
			if oldCondition.Status != newCondition.Status {
				oldCondition.LastTransitionTime = u.now
			}
			oldCondition.Status = newCondition.Status
			oldCondition.Reason = newCondition.Reason
			oldCondition.Message = newCondition.Message
			hasChanged = true
		}
	}
	return hasChanged
}

func (u *ConditionUpdater) newSuccessfulCondition(t v1.NamespaceConditionType) *v1.NamespaceCondition {
	return &v1.NamespaceCondition{
		Type: t, Status: v1.ConditionFalse, LastTransitionTime: u.now, Reason: okReasons[t], Message: okMessages[t],
	}
}

func getCondition(conditions []v1.NamespaceCondition, t v1.NamespaceConditionType) *v1.NamespaceCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// GetCondition returns the condition of type t, or nil.
func GetCondition(conditions []v1.NamespaceCondition, t v1.NamespaceConditionType) *v1.NamespaceCondition {
	return getCondition(conditions, t)
}
