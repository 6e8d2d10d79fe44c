package diagnose

import (
	"time"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
)

// A rescue's hold (kubectl ns-doctor rescue) is a ValidatingAdmissionPolicy
// that refuses the namespace controller's and the garbage collector's
// DELETEs in one namespace, on purpose: explain names it as such, with who
// set it and since when, never as a policy to delete.

// RescueHoldPolicy is the name of the policy, and of its binding, that
// holds namespace.
func RescueHoldPolicy(namespace string) string { return "ns-doctor-rescue-" + namespace }

// HeldByAnnotation names, on a hold's policy, the user who set it.
const HeldByAnnotation = "ns-doctor.io/held-by"

// RescueHold is a hold's policy as the cluster has it.
type RescueHold struct {
	Policy string    `json:"policy"`
	Since  time.Time `json:"since"`
	// By is the user who set it, when the policy says.
	By string `json:"by,omitempty"`
}

// RescueHoldFacts: the namespace controller's deletes are refused by a
// rescue's hold (RescueHold).
type RescueHoldFacts struct {
	// Hold is the policy as read; nil when it could not be read (its
	// denial alone names it).
	Hold *RescueHold
	// Message is the policy's words, as the controller's condition quotes
	// them.
	Message string
}

func (*RescueHoldFacts) facts() {}

// rescueHoldBlocker is the RescueHold blocker for a denial by the hold's
// policy: the step is to release it (or, to keep the content, not to).
func rescueHoldBlocker(obs Observation, d apierror.Error) Blocker {
	f := &RescueHoldFacts{Hold: obs.RescueHold, Message: d.Denial}
	return Blocker{Kind: BlockerRescueHold, Subject: d.Policy, Facts: f,
		Actions: []Action{{Kind: ActionReleaseRescue, Namespace: obs.Namespace.Name, Target: d.Policy}}}
}

// ProtectPolicy is the name of the policy, and of its binding, that
// protects namespace from deletion (kubectl ns-doctor protect).
func ProtectPolicy(namespace string) string { return "ns-doctor-protect-" + namespace }

// ConfirmDeleteAnnotation, set to a protected namespace's own name, lets
// its deletion through protect's policy.
const ConfirmDeleteAnnotation = "ns-doctor.io/confirm-delete"

// Protection is protect's policy over a namespace, as explain --if-deleted
// and the guard say it: whether a deletion now would be refused before
// anything else is looked at.
type Protection struct {
	// Policy is protect's policy of the namespace; empty when there is
	// none (not protected).
	Policy string `json:"policy,omitempty"`
	// Confirmed: the namespace carries ConfirmDeleteAnnotation with its
	// name, so the policy lets its deletion through.
	Confirmed bool `json:"confirmed"`
}

// Protected tells whether a deletion now would be refused by protect.
func (p *Protection) Protected() bool { return p != nil && p.Policy != "" && !p.Confirmed }
