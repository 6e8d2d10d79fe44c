package rescue

import (
	"fmt"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

const (
	// FieldManager owns what ns-doctor writes (server-side apply).
	FieldManager = "ns-doctor"
	// ConfirmAnnotation, set to the namespace's own name, lets a protected
	// namespace be deleted: the name, not "true", so a label copied from
	// another namespace confirms nothing.
	ConfirmAnnotation = diagnose.ConfirmDeleteAnnotation
	// ReclaimAnnotation keeps, on a PersistentVolume rescue set to Retain,
	// the reclaim policy it had before.
	ReclaimAnnotation = backup.ReclaimAnnotation
	// RescuedAnnotation names, on a retained PersistentVolume, the
	// namespace whose rescue retained it: release finds them by it.
	RescuedAnnotation = backup.RetainedForAnnotation
	// managedLabel marks every policy and binding ns-doctor creates.
	managedLabel = "app.kubernetes.io/managed-by"
)

// controllerUsers are the identities the namespace controller and the
// garbage collector send their requests as: their own service accounts
// with kube-controller-manager's --use-service-account-credentials (what
// kubeadm, kops and the managed offerings run), kube-controller-manager's
// own user without it. Only these are refused: a person (or purge) can
// still delete what they choose inside a held namespace.
var controllerUsers = []string{
	"system:serviceaccount:kube-system:namespace-controller",
	"system:serviceaccount:kube-system:generic-garbage-collector",
	"system:kube-controller-manager",
}

// HoldName is the name of the hold's policy and of its binding: explain
// knows a hold by it (diagnose.RescueHoldPolicy).
func HoldName(namespace string) string { return diagnose.RescueHoldPolicy(namespace) }

// protectName is the name of protect's policy and of its binding.
func protectName(namespace string) string { return diagnose.ProtectPolicy(namespace) }

// holdMessage is what a refused DELETE says: who holds the namespace and
// the two ways on.
func holdMessage(namespace string) string {
	return fmt.Sprintf("ns-doctor rescue holds namespace %s: its content is not deleted while the hold stands; "+
		"'kubectl ns-doctor rescue %s --release' lets the deletion finish, 'kubectl ns-doctor rescue %s --restore' puts the namespace back from the backup rescue saved", namespace, namespace, namespace)
}

// protectMessage is what a refused namespace DELETE says.
func protectMessage(namespace string) string {
	return fmt.Sprintf("ns-doctor protects namespace %s from deletion: to delete it, first run "+
		"'kubectl annotate namespace %s %s=%s'; to drop the protection, 'kubectl ns-doctor protect %s --remove'",
		namespace, namespace, ConfirmAnnotation, namespace, namespace)
}

// celString quotes s as a CEL string literal. Go's quoting is a subset
// CEL reads alike; namespace names are DNS labels anyway.
func celString(s string) string { return strconv.Quote(s) }

// holdNamespaceCondition keeps the policy to requests in the namespace
// held: every other DELETE of the cluster is let through before any
// validation runs.
func holdNamespaceCondition(namespace string) string {
	return "request.namespace == " + celString(namespace)
}

// holdExpression is true (allowed) for anyone but the controllers. It
// reads the user only: the API server runs admission for each item of a
// DELETECOLLECTION (the namespace controller's way) as a DELETE of that
// item, so one rule covers both verbs.
func holdExpression() string {
	quoted := make([]string, len(controllerUsers))
	for i, u := range controllerUsers {
		quoted[i] = celString(u)
	}
	return "!(request.userInfo.username in [" + strings.Join(quoted, ", ") + "])"
}

// protectExpression is true (allowed) when the namespace about to be
// deleted carries the confirmation naming it. A Namespace has no
// namespaceObject in a policy: it is the oldObject of its own DELETE.
func protectExpression(namespace string) string {
	key := celString(ConfirmAnnotation)
	return fmt.Sprintf("has(oldObject.metadata.annotations) && %s in oldObject.metadata.annotations && oldObject.metadata.annotations[%s] == %s",
		key, key, celString(namespace))
}

// holdPolicy refuses the DELETEs of the namespace controller and the
// garbage collector inside namespace, for every resource.
func holdPolicy(namespace string) *admissionv1.ValidatingAdmissionPolicy {
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: objectMeta(HoldName(namespace), namespace),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Delete},
					Rule: admissionv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"},
						Scope: ptr.To(admissionv1.NamespacedScope)},
				}}},
			},
			MatchConditions: []admissionv1.MatchCondition{{Name: "in-held-namespace", Expression: holdNamespaceCondition(namespace)}},
			Validations: []admissionv1.Validation{{
				Expression: holdExpression(),
				Message:    holdMessage(namespace),
				Reason:     ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
}

// protectPolicy refuses the DELETE of the Namespace namespace unless it
// carries ConfirmAnnotation with its own name.
func protectPolicy(namespace string) *admissionv1.ValidatingAdmissionPolicy {
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: objectMeta(protectName(namespace), namespace),
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				ResourceRules: []admissionv1.NamedRuleWithOperations{{
					ResourceNames: []string{namespace},
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Delete},
						Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"},
							Scope: ptr.To(admissionv1.ClusterScope)},
					},
				}},
			},
			Validations: []admissionv1.Validation{{
				Expression: protectExpression(namespace),
				Message:    protectMessage(namespace),
				Reason:     ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
}

// bindingOf enforces the policy named name (Deny: the request is refused,
// not only audited or warned about).
func bindingOf(name, namespace string) *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: objectMeta(name, namespace),
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
}

func objectMeta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{managedLabel: FieldManager},
		Annotations: map[string]string{"ns-doctor.io/namespace": namespace},
	}
}
