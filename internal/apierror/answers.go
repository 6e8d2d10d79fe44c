package apierror

import (
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kube-apiserver's answers, built for a prediction (a plan says what the
// API server will answer a request it does not send): the same Status, in
// the same words, as kube-apiserver's own functions build (checked in
// apierror_test.go against them), so a predicted condition reads as the
// controller's.

// WebhookCallFailure is the answer to a request a fail-closed webhook
// catches when the webhook cannot be called, reason the call's error:
// the validating and mutating dispatchers wrap apiserver's
// pkg/util/webhook ErrCallingWebhook ("failed to call webhook: %w") in a
// 500 (apierrors.NewInternalError).
func WebhookCallFailure(webhook string, reason error) *apierrors.StatusError {
	return apierrors.NewInternalError(fmt.Errorf("failed calling webhook %q: failed to call webhook: %w", webhook, reason))
}

// ServiceCallError is the error of a POST to an in-cluster Service
// backend that cannot answer: the Service does not exist (the service
// lister's NotFound, of resource "service") or has no ready endpoint
// (apiserver pkg/util/proxy ResolveEndpoint), in the url.Error of the
// call to target.
func ServiceCallError(target, service string, exists bool) error {
	var reason error = apierrors.NewNotFound(schema.GroupResource{Resource: "service"}, service)
	if exists {
		reason = apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", service))
	}
	return &url.Error{Op: "Post", URL: target, Err: reason}
}
