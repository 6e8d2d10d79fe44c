package inspect

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// rescueHold reads a rescue's hold of ns when the controller's conditions
// quote its policy (one GET, only then): who set it, and since when. A
// hold that cannot be read is still named by its denial.
func (i *Inspector) rescueHold(ctx context.Context, ns *v1.Namespace) *diagnose.RescueHold {
	if ns == nil || !quotesPolicy(ns, diagnose.RescueHoldPolicy(ns.Name)) {
		return nil
	}
	p, err := i.clients.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, diagnose.RescueHoldPolicy(ns.Name), metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return &diagnose.RescueHold{Policy: p.Name, Since: p.CreationTimestamp.UTC(), By: p.Annotations[diagnose.HeldByAnnotation]}
}

// quotesPolicy tells whether a condition of ns names the policy.
func quotesPolicy(ns *v1.Namespace, policy string) bool {
	for _, c := range ns.Status.Conditions {
		if strings.Contains(c.Message, "'"+policy+"'") {
			return true
		}
	}
	return false
}

// protection reads protect's policy of an Active namespace (one GET): a
// deletion now would be refused by it unless the namespace carries the
// confirmation. Nil when it cannot be read (no permission, no policy
// API): unknown, not unprotected.
func (i *Inspector) protection(ctx context.Context, ns *v1.Namespace) *diagnose.Protection {
	name := diagnose.ProtectPolicy(ns.Name)
	p := &diagnose.Protection{Confirmed: ns.Annotations[diagnose.ConfirmDeleteAnnotation] == ns.Name}
	_, err := i.clients.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		p.Policy = name
	case !apierrors.IsNotFound(err):
		return nil
	}
	return p
}
