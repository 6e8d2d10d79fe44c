// Package rescue is ns-doctor's policies over namespaces: four verbs, each
// a Prepare that reads, plans and checks every permission it will need
// (internal/access) before anything changes, then the act.
//
//   - hold (rescue): stops an accidental namespace deletion inside the
//     window ordered deletion leaves (the namespace controller deletes pods
//     first and touches nothing else while any pod remains): a
//     ValidatingAdmissionPolicy refusing the controllers' DELETEs of the
//     namespace's content, its PersistentVolumes set to Retain, and a
//     re-appliable copy of what remains (Prepare, Run).
//   - release (rescue --release): removes the hold, so the deletion
//     finishes; the volumes stay Retain (PrepareRelease, Release).
//   - restore (rescue --restore): releases, waits for the namespace to go,
//     creates it again and re-applies the copy, then gives the volumes
//     their reclaim policy back (PrepareRestore, RestoreSteps).
//   - protect: a policy refusing an Active namespace's DELETE unless it is
//     annotated first (PrepareProtect, Protect).
//
// It returns data (a Plan, a Report, a Released, a RestoreReport, a
// Protected); internal/printer words it, and the confirmation before each
// act (consent.Request).
package rescue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	authnv1 "k8s.io/api/authentication/v1"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// Errors the command layer maps to exit codes; missing permissions are
// access.ErrMissing (a *access.MissingError names them).
var (
	ErrNotFound = errors.New("namespace not found")
	// ErrActive: rescue acts on a namespace being deleted; protect is
	// what guards an Active one.
	ErrActive = errors.New("namespace is Active")
	// ErrNoPolicyAPI: the cluster serves no admissionregistration.k8s.io/v1
	// ValidatingAdmissionPolicy (GA in 1.30).
	ErrNoPolicyAPI = errors.New("no ValidatingAdmissionPolicy API")
)

// check asks the API server whether the caller may do all of needs: a
// *access.MissingError names what it may not.
func check(ctx context.Context, c *kube.Clients, needs []access.Permission) error {
	return access.Check(ctx, c.Kube.AuthorizationV1(), needs)
}

// checkPolicyAPI refuses a cluster without the policy API: nothing can
// hold a namespace there.
func checkPolicyAPI(ctx context.Context, c *kube.Clients) error {
	list, err := discovery.ToDiscoveryInterfaceWithContext(c.Discovery).ServerResourcesForGroupVersionWithContext(ctx, admissionv1.SchemeGroupVersion.String())
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("discovering %s: %w", admissionv1.SchemeGroupVersion, err)
	}
	if list != nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "validatingadmissionpolicies" }) &&
		slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "validatingadmissionpolicybindings" }) {
		return nil
	}
	return ErrNoPolicyAPI
}

// policyPermissions are what applying (or removing) a policy and its
// binding needs.
func policyPermissions(verbs ...string) []access.Permission {
	var out []access.Permission
	for _, r := range []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"} {
		for _, v := range verbs {
			out = append(out, access.Permission{Verb: v, Group: admissionv1.GroupName, Resource: r})
		}
	}
	return out
}

// applyPolicy creates or updates (server-side apply, ns-doctor's field
// manager, forced: a second run takes the fields back) policy, then its
// binding: the binding last, so no binding ever names a missing policy.
// Whether the API server enforces them yet is a question only a request
// answers (proveHold, waitProtected): the policy's status, which a
// controller of kube-controller-manager writes, may never come.
func applyPolicy(ctx context.Context, c *kube.Clients, policy *admissionv1.ValidatingAdmissionPolicy, binding *admissionv1.ValidatingAdmissionPolicyBinding) error {
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)}
	data, err := json.Marshal(policy)
	if err != nil {
		return err
	}
	if _, err := c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Patch(ctx, policy.Name, types.ApplyPatchType, data, opts); err != nil {
		return fmt.Errorf("applying ValidatingAdmissionPolicy %s: %w", policy.Name, err)
	}
	if data, err = json.Marshal(binding); err != nil {
		return err
	}
	if _, err := c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Patch(ctx, binding.Name, types.ApplyPatchType, data, opts); err != nil {
		return fmt.Errorf("applying ValidatingAdmissionPolicyBinding %s: %w", binding.Name, err)
	}
	return nil
}

// removePolicy deletes the binding named name, then its policy; what is
// gone already is not an error. It tells whether anything was there.
func removePolicy(ctx context.Context, c *kube.Clients, name string) (bool, error) {
	found := false
	err := c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
	switch {
	case err == nil:
		found = true
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("deleting ValidatingAdmissionPolicyBinding %s: %w", name, err)
	}
	err = c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	switch {
	case err == nil:
		found = true
	case !apierrors.IsNotFound(err):
		return found, fmt.Errorf("deleting ValidatingAdmissionPolicy %s: %w", name, err)
	}
	return found, nil
}

// policyExists tells whether the policy named name is there.
func policyExists(ctx context.Context, c *kube.Clients, name string) (bool, error) {
	_, err := c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("reading ValidatingAdmissionPolicyBinding %s: %w", name, err)
	}
}

// GetNamespace reads the namespace, ErrNotFound when it is gone.
func GetNamespace(ctx context.Context, c *kube.Clients, name string) (*corev1.Namespace, error) {
	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("namespace %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	return ns, nil
}

// whoAmI is the user the API server knows the caller as (a
// SelfSubjectReview, GA since 1.28); empty when it will not say.
func whoAmI(ctx context.Context, c *kube.Clients) string {
	r, err := c.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return ""
	}
	return r.Status.UserInfo.Username
}
