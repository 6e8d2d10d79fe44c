package rescue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// Errors the command layer maps to exit codes.
var (
	ErrNotFound = errors.New("namespace not found")
	// ErrActive: rescue acts on a namespace being deleted; protect is
	// what guards an Active one.
	ErrActive = errors.New("namespace is Active")
	// ErrNoPolicyAPI: the cluster serves no admissionregistration.k8s.io/v1
	// ValidatingAdmissionPolicy (GA in 1.30).
	ErrNoPolicyAPI = errors.New("no ValidatingAdmissionPolicy API")
	// ErrMissingPermissions: the SelfSubjectAccessReviews refused some of
	// what a run needs; nothing was changed.
	ErrMissingPermissions = errors.New("missing permissions")
)

// Permission is one verb on one resource a run needs.
type Permission struct {
	Verb, Group, Resource, Namespace string
}

func (p Permission) String() string {
	r := p.Resource
	if p.Group != "" {
		r += "." + p.Group
	}
	if p.Namespace != "" {
		return fmt.Sprintf("%s %s in %s", p.Verb, r, p.Namespace)
	}
	return p.Verb + " " + r
}

// MissingError lists the permissions a run lacks.
type MissingError struct{ Missing []Permission }

func (e *MissingError) Error() string {
	names := make([]string, len(e.Missing))
	for i, p := range e.Missing {
		names[i] = p.String()
	}
	return fmt.Sprintf("missing %d permission(s): %s", len(names), strings.Join(names, ", "))
}

func (e *MissingError) Unwrap() error { return ErrMissingPermissions }

// CheckPolicyAPI refuses a cluster without the policy API: nothing can
// hold a namespace there.
func CheckPolicyAPI(c *kube.Clients) error {
	list, err := c.Discovery.ServerResourcesForGroupVersion(admissionv1.SchemeGroupVersion.String())
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("discovering %s: %w", admissionv1.SchemeGroupVersion, err)
	}
	if list != nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "validatingadmissionpolicies" }) &&
		slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "validatingadmissionpolicybindings" }) {
		return nil
	}
	return ErrNoPolicyAPI
}

// CheckPermissions asks the API server (SelfSubjectAccessReview) for each
// of needs and returns a *MissingError naming those refused.
func CheckPermissions(ctx context.Context, c *kube.Clients, needs []Permission) error {
	missing, err := checkAll(ctx, func(ctx context.Context, p Permission) (bool, error) {
		review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
			Verb: p.Verb, Group: p.Group, Resource: p.Resource, Namespace: p.Namespace,
		}}}
		got, err := c.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("checking permission to %s: %w", p, err)
		}
		return got.Status.Allowed, nil
	}, needs)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return &MissingError{Missing: missing}
	}
	return nil
}

// policyPermissions are what applying (or removing) a policy and its
// binding needs.
func policyPermissions(verbs ...string) []Permission {
	var out []Permission
	for _, r := range []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"} {
		for _, v := range verbs {
			out = append(out, Permission{Verb: v, Group: admissionv1.GroupName, Resource: r})
		}
	}
	return out
}

// ApplyPolicy creates or updates (server-side apply, ns-doctor's field
// manager, forced: a second run takes the fields back) policy, then its
// binding: the binding last, so no binding ever names a missing policy.
// Whether the API server enforces them yet is a question only a request
// answers (proveHold, waitProtected): the policy's status, which a
// controller of kube-controller-manager writes, may never come.
func ApplyPolicy(ctx context.Context, c *kube.Clients, policy *admissionv1.ValidatingAdmissionPolicy, binding *admissionv1.ValidatingAdmissionPolicyBinding) error {
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

// RemovePolicy deletes the binding named name, then its policy; what is
// gone already is not an error. It tells whether anything was there.
func RemovePolicy(ctx context.Context, c *kube.Clients, name string) (bool, error) {
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

// PolicyExists tells whether the policy named name is there.
func PolicyExists(ctx context.Context, c *kube.Clients, name string) (bool, error) {
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

// sortPermissions orders needs as the error line lists them.
func sortPermissions(needs []Permission) {
	slices.SortFunc(needs, func(a, b Permission) int { return strings.Compare(a.String(), b.String()) })
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
