package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	admissionregclient "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	"k8s.io/utils/ptr"
)

// The webhook, as kube-apiserver knows it.
const (
	// WebhookName names the guard's webhook in its configuration (and in
	// kube-apiserver's apiserver_admission_webhook_* metrics).
	WebhookName = "guard.ns-doctor.io"
	// Path is where the guard answers.
	Path = "/validate"
	// DefaultConfiguration is the ValidatingWebhookConfiguration's name.
	DefaultConfiguration = "ns-doctor-guard"
	// OutOfClusterLabel marks a configuration the guard registered from
	// outside the cluster (--guard-addr): it is the guard's to replace and
	// to remove on exit; any other of that name is left alone.
	OutOfClusterLabel = "ns-doctor.io/guard"
	outOfClusterValue = "out-of-cluster"
	// NotDeletingCondition is the matchCondition that keeps a DELETE of
	// an object already being deleted (the namespace controller's, or
	// anyone's again) from reaching the guard.
	NotDeletingCondition = "oldObject == null || !has(oldObject.metadata.deletionTimestamp)"
)

// TimeoutSeconds is the webhook's timeoutSeconds for a budget: the next
// whole second above it, so the guard always answers (failing open)
// before kube-apiserver gives up on it.
func TimeoutSeconds(budget time.Duration) int32 {
	return int32(math.Floor(budget.Seconds())) + 1
}

// MaxTimeout is the largest budget: kube-apiserver takes a timeoutSeconds
// of at most 30.
const MaxTimeout = 29 * time.Second

// Webhook is the guard's webhook: DELETE of namespaces and of
// CustomResourceDefinitions only (never a subresource such as a
// namespace's finalize, never the content of a namespace), skipped by
// matchConditions when the object is already being deleted, failing open.
func Webhook(cc admissionregv1.WebhookClientConfig, budget time.Duration) admissionregv1.ValidatingWebhook {
	rules := make([]admissionregv1.RuleWithOperations, 0, 2)
	for _, r := range []struct{ group, resource string }{{"", "namespaces"}, {"apiextensions.k8s.io", "customresourcedefinitions"}} {
		rules = append(rules, admissionregv1.RuleWithOperations{
			Operations: []admissionregv1.OperationType{admissionregv1.Delete},
			Rule: admissionregv1.Rule{APIGroups: []string{r.group}, APIVersions: []string{"v1"}, Resources: []string{r.resource},
				Scope: ptr.To(admissionregv1.ClusterScope)},
		})
	}
	return admissionregv1.ValidatingWebhook{
		Name:                    WebhookName,
		ClientConfig:            cc,
		Rules:                   rules,
		FailurePolicy:           ptr.To(admissionregv1.Ignore),
		MatchPolicy:             ptr.To(admissionregv1.Equivalent),
		SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To(TimeoutSeconds(budget)),
		AdmissionReviewVersions: []string{"v1"},
		MatchConditions:         []admissionregv1.MatchCondition{{Name: "not-being-deleted", Expression: NotDeletingCondition}},
	}
}

// RegistrationError is a write of the webhook configuration the API
// server refused or failed.
type RegistrationError struct {
	// Verb is what was sent (get, create, update, patch, delete).
	Verb, Name string
	Err        error
}

func (e *RegistrationError) Error() string {
	return fmt.Sprintf("%s validatingwebhookconfiguration %s: %v", e.Verb, e.Name, e.Err)
}

func (e *RegistrationError) Unwrap() error { return e.Err }

// Registration is the configuration the guard wrote out of the cluster.
type Registration struct {
	Name string
	UID  types.UID
}

// Register writes the out-of-cluster configuration name, pointing at url
// and trusting caBundle: created, or replacing the one a killed run left.
// A configuration of that name that the guard did not register out of the
// cluster (deploy/guard's, for one) is refused, never replaced.
func Register(ctx context.Context, c admissionregclient.ValidatingWebhookConfigurationsGetter, name, url string, caBundle []byte, budget time.Duration) (Registration, error) {
	cfg := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"app.kubernetes.io/name": "ns-doctor", "app.kubernetes.io/component": "guard", OutOfClusterLabel: outOfClusterValue}},
		Webhooks: []admissionregv1.ValidatingWebhook{Webhook(admissionregv1.WebhookClientConfig{URL: &url, CABundle: caBundle}, budget)},
	}
	api := c.ValidatingWebhookConfigurations()
	made, err := api.Create(ctx, cfg, metav1.CreateOptions{FieldManager: fieldManager})
	switch {
	case err == nil:
		return Registration{Name: name, UID: made.UID}, nil
	case !apierrors.IsAlreadyExists(err):
		return Registration{}, &RegistrationError{Verb: "create", Name: name, Err: err}
	}
	old, err := api.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err != nil:
		return Registration{}, &RegistrationError{Verb: "get", Name: name, Err: err}
	case old.Labels[OutOfClusterLabel] != outOfClusterValue:
		return Registration{}, &RegistrationError{Verb: "update", Name: name, Err: errNotOurs}
	}
	cfg.ResourceVersion = old.ResourceVersion
	made, err = api.Update(ctx, cfg, metav1.UpdateOptions{FieldManager: fieldManager})
	if err != nil {
		return Registration{}, &RegistrationError{Verb: "update", Name: name, Err: err}
	}
	return Registration{Name: name, UID: made.UID}, nil
}

// errNotOurs: a configuration of the name exists, not registered by an
// out-of-cluster guard.
var errNotOurs = fmt.Errorf("it exists and was not registered by an out-of-cluster guard (label %s=%s): choose another name with --guard-webhook-configuration", OutOfClusterLabel, outOfClusterValue)

// IsNotOurs tells a refusal to replace another's configuration.
func IsNotOurs(err error) bool { return errors.Is(err, errNotOurs) }

// Unregister removes the configuration Register wrote, and only it (its
// UID): deletes pass unchecked from then on.
func Unregister(ctx context.Context, c admissionregclient.ValidatingWebhookConfigurationsGetter, r Registration) error {
	err := c.ValidatingWebhookConfigurations().Delete(ctx, r.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &r.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return &RegistrationError{Verb: "delete", Name: r.Name, Err: err}
	}
	return nil
}

// PatchCABundle writes caBundle into the guard's webhook of the
// in-cluster configuration name (deploy/guard's), a strategic merge
// patch by webhook name: the only write RBAC lets the guard make to it.
func PatchCABundle(ctx context.Context, c admissionregclient.ValidatingWebhookConfigurationsGetter, name string, caBundle []byte) (*admissionregv1.ValidatingWebhookConfiguration, error) {
	patch, err := json.Marshal(map[string]any{"webhooks": []any{map[string]any{
		"name": WebhookName, "clientConfig": map[string]any{"caBundle": caBundle},
	}}})
	if err != nil {
		return nil, err
	}
	cfg, err := c.ValidatingWebhookConfigurations().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, &RegistrationError{Verb: "patch", Name: name, Err: err}
	}
	return cfg, nil
}

// ShortTimeout is the timeoutSeconds of the guard's webhook in cfg when
// it does not leave the budget time to answer (kube-apiserver would give
// up first, and fail open without the guard's warning), and false when it
// does or the webhook is not there.
func ShortTimeout(cfg *admissionregv1.ValidatingWebhookConfiguration, budget time.Duration) (int32, bool) {
	for _, w := range cfg.Webhooks {
		if w.Name != WebhookName {
			continue
		}
		seconds := int32(10) // the API's default
		if w.TimeoutSeconds != nil {
			seconds = *w.TimeoutSeconds
		}
		return seconds, time.Duration(seconds)*time.Second <= budget
	}
	return 0, false
}

const fieldManager = "ns-doctor-guard"
