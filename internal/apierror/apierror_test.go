package apierror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/storage"
	storeerr "k8s.io/apiserver/pkg/storage/errors"
	"k8s.io/apiserver/pkg/util/proxy"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
)

// ErrorToAPIStatus logs what it converts, as kube-apiserver does.
func TestMain(m *testing.M) {
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// The answers to read, each built by the upstream function that writes
// it (k8s.io/apiserver, apimachinery and client-go v0.36.3, as
// kube-apiserver v1.36.3 links them), so a changed wording upstream fails
// here. Where upstream builds it in an unexported function, the row
// copies its format string and cites it.
func TestClassify(t *testing.T) {
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	sa := "system:serviceaccount:team-a:ci"
	cases := []struct {
		name, source string
		err          error
		want         Error
	}{
		// The authorizer's refusal.
		{"forbidden in a namespace", "apiserver pkg/endpoints/handlers/responsewriters/errors.go ForbiddenStatusError (forbiddenMessage)",
			forbidden(authorizer.AttributesRecord{User: &user.DefaultInfo{Name: sa}, Verb: "delete", Namespace: "team-a", APIGroup: "example.com", Resource: "widgets", Name: "w1", ResourceRequest: true}, ""),
			Error{Kind: Forbidden, Code: 403, Reason: metav1.StatusReasonForbidden, User: sa, Verb: "delete", Group: "example.com", Resource: "widgets", Namespace: "team-a", Name: "w1"}},
		{"forbidden at the cluster scope, a subresource, RBAC's reason", "responsewriters ForbiddenStatusError",
			forbidden(authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "jane"}, Verb: "update", Resource: "namespaces", Subresource: "finalize", Name: "team-a", ResourceRequest: true},
				`RBAC: clusterrole.rbac.authorization.k8s.io "purger" not found`),
			Error{Kind: Forbidden, Code: 403, Reason: metav1.StatusReasonForbidden, User: "jane", Verb: "update", Resource: "namespaces", Subresource: "finalize", Name: "team-a"}},
		{"forbidden, a user name the sanitizer escapes", "responsewriters ForbiddenStatusError (sanitizer)",
			forbidden(authorizer.AttributesRecord{User: &user.DefaultInfo{Name: `o'brien <"ops" & co>`}, Verb: "list", Namespace: "demo", Resource: "secrets", ResourceRequest: true}, ""),
			Error{Kind: Forbidden, Code: 403, Reason: metav1.StatusReasonForbidden, User: `o'brien <"ops" & co>`, Verb: "list", Resource: "secrets", Namespace: "demo"}},
		{"forbidden path", "responsewriters ForbiddenStatusError (non-resource)",
			forbidden(authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "jane"}, Verb: "get", Path: "/apis/metrics.k8s.io"}, ""),
			Error{Kind: Forbidden, Code: 403, Reason: metav1.StatusReasonForbidden, User: "jane", Verb: "get", Path: "/apis/metrics.k8s.io"}},
		{"namespace terminating", "apiserver pkg/admission/plugin/namespace/lifecycle/admission.go Admit",
			terminatingRefusal(t),
			Error{Kind: NamespaceTerminating, Code: 403, Reason: metav1.StatusReasonForbidden, Resource: "configmaps", Namespace: "team-a", Name: "x"}},
		{"unauthorized", "apiserver pkg/endpoints/filters/authentication.go Unauthorized",
			apierrors.NewUnauthorized("Unauthorized"),
			Error{Kind: Unauthorized, Code: 401, Reason: metav1.StatusReasonUnauthorized}},
		{"unauthorized, no Status", "apimachinery NewGenericServerResponse (client-go newUnstructuredResponseError)",
			apierrors.NewGenericServerResponse(http.StatusUnauthorized, "GET", schema.GroupResource{Resource: "namespaces"}, "", "", 0, true),
			Error{Kind: Unauthorized, Code: 401, Reason: metav1.StatusReasonUnauthorized, Resource: "namespaces"}},

		// Admission webhooks.
		{"webhook: service not found", "apiserver pkg/util/webhook/error.go ErrCallingWebhook, .../webhook/validating/dispatcher.go callHook and Dispatch",
			callingWebhook("guard.example.com", &url.Error{Op: "Post", URL: "https://guard.guard.svc:443/validate?timeout=10s", Err: apierrors.NewNotFound(v1.Resource("service"), "guard")}),
			Error{Kind: WebhookFailed, Code: 500, Reason: metav1.StatusReasonInternalError, Webhook: "guard.example.com"}},
		{"webhook: no endpoints", "apiserver pkg/util/proxy/proxy.go ResolveEndpoint, in ErrCallingWebhook",
			callingWebhook("guard.example.com", &url.Error{Op: "Post", URL: "https://guard.guard.svc:443/?timeout=10s", Err: resolveEndpoint(t, true)}),
			Error{Kind: WebhookFailed, Code: 500, Reason: metav1.StatusReasonInternalError, Webhook: "guard.example.com"}},
		{"webhook: no details", "apiserver pkg/util/webhook/error.go ErrCallingWebhook",
			apierrors.NewInternalError(&webhookutil.ErrCallingWebhook{WebhookName: "guard.example.com"}),
			Error{Kind: WebhookFailed, Code: 500, Reason: metav1.StatusReasonInternalError, Webhook: "guard.example.com"}},
		{"webhook denies, with a 403", "apiserver pkg/admission/plugin/webhook/errors/statuserror.go ToStatusErr",
			webhookerrors.ToStatusErr("policy.example.com", &metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden, Message: "tenants keep their widgets"}),
			Error{Kind: WebhookDenied, Code: 403, Reason: metav1.StatusReasonForbidden, Webhook: "policy.example.com", Denial: "tenants keep their widgets"}},
		{"webhook denies without explanation", "ToStatusErr",
			webhookerrors.ToStatusErr("policy.example.com", nil),
			Error{Kind: WebhookDenied, Code: 400, Webhook: "policy.example.com", Denial: "without explanation"}},
		{"1.37: a conversion webhook's failure reported as an undecodable object", "apiserver pkg/storage/etcd3/corrupt_obj_deleter.go, with KEP-3926 on by default",
			&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonStoreReadError,
				Details: &metav1.StatusDetails{Group: "example.com", Kind: "convs", Causes: []metav1.StatusCause{{Type: metav1.CauseTypeUnexpectedServerResponse, Field: "/registry/example.com/convs/team-a/old",
					Message: storage.NewCorruptObjError("/registry/example.com/convs/team-a/old", errors.New(`object not decodable revision=274: conversion webhook for example.com/v1, Kind=Conv failed: Post "https://converter.conv-system.svc:443/convert?timeout=30s": service "converter" not found`)).Error()}}},
				Message: `failed to read one or more convs.example.com from the storage: StorageError: corrupt object, Code: 7, Key: /registry/example.com/convs/team-a/old, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=274: conversion webhook for example.com/v1, Kind=Conv failed: Post "https://converter.conv-system.svc:443/convert?timeout=30s": service "converter" not found`}},
			Error{Kind: ConversionFailed, Code: 500, Reason: metav1.StatusReasonStoreReadError, Group: "example.com", Version: "v1", ObjectKind: "Conv", Resource: "convs"}},
		{"policy denies, with its binding", "apiserver pkg/admission/plugin/policy/validating/dispatcher.go Dispatch",
			policyDenial("hold.static.k8s.io", "hold-binding.static.k8s.io", "held by ns-doctor rescue"),
			Error{Kind: PolicyDenied, Code: 422, Reason: metav1.StatusReasonInvalid, Resource: "configmaps", Name: "x", Policy: "hold.static.k8s.io", Binding: "hold-binding.static.k8s.io", Denial: "held by ns-doctor rescue"}},
		{"policy denies, no binding named", "dispatcher.go Dispatch",
			policyDenial("tenancy", "", "tenants keep their secrets"),
			Error{Kind: PolicyDenied, Code: 422, Reason: metav1.StatusReasonInvalid, Resource: "configmaps", Name: "x", Policy: "tenancy", Denial: "tenants keep their secrets"}},
		{"webhook refuses a dry run", "statuserror.go NewDryRunUnsupportedErr",
			webhookerrors.NewDryRunUnsupportedErr("audit.example.com"),
			Error{Kind: WebhookNoDryRun, Code: 400, Reason: metav1.StatusReasonBadRequest, Webhook: "audit.example.com"}},
		{"mutating webhook patched a DELETE", "apiserver .../webhook/mutating/dispatcher.go callAttrMutatingHook",
			apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", "defaults.example.com")),
			Error{Kind: WebhookFailed, Code: 500, Reason: metav1.StatusReasonInternalError, Webhook: "defaults.example.com"}},
		{"webhook panicked", "apiserver .../webhook/validating/dispatcher.go Dispatch",
			apierrors.NewInternalError(fmt.Errorf("ValidatingAdmissionWebhook/%v has panicked: %v", "guard.example.com", "boom")),
			Error{Kind: WebhookFailed, Code: 500, Reason: metav1.StatusReasonInternalError, Webhook: "guard.example.com"}},

		// Conversion.
		{"conversion webhook down", "apiextensions-apiserver pkg/apiserver/conversion/webhook_converter.go Convert, answered by responsewriters ErrorToAPIStatus",
			asStatus(fmt.Errorf("conversion webhook for %v failed: %v", schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"},
				&url.Error{Op: "Post", URL: "https://conv.conv.svc:443/convert?timeout=30s", Err: apierrors.NewNotFound(v1.Resource("service"), "conv")})),
			Error{Kind: ConversionFailed, Code: 500, Group: "example.com", Version: "v2", ObjectKind: "Widget"}},

		// Storage.
		{"store read error, gate on", "apiserver pkg/storage/etcd3/corrupt_obj_deleter.go aggregatedStorageError.NewAPIStatusError",
			kep3926Answer(widgets, "/registry/example.com/widgets/demo/w1", "/registry/example.com/widgets/demo/w2"),
			Error{Kind: StoreReadError, Code: 500, Reason: metav1.StatusReasonStoreReadError, Group: "example.com", Resource: "widgets", Name: "/registry/example.com/widgets/demo",
				Keys: []string{"/registry/example.com/widgets/demo/w1", "/registry/example.com/widgets/demo/w2"}, Truncated: true}},
		{"store read error, gate off", "apiserver pkg/storage/etcd3/store.go GetList, pkg/storage/errors InterpretListError",
			storeerr.InterpretListError(storage.NewInternalError(fmt.Errorf("unable to transform key %q: %w", "/registry/example.com/widgets/demo/w1", errors.New("no matching key"))), widgets),
			Error{Kind: StoreReadError, Code: 500, Reason: metav1.StatusReasonInternalError, Keys: []string{"/registry/example.com/widgets/demo/w1"}}},
		{"corrupt object", "apiserver pkg/storage/errors.go NewCorruptObjError, InterpretGetError",
			storeerr.InterpretGetError(storage.NewCorruptObjError("/registry/configmaps/demo/broken", errors.New("object not decodable")), v1.Resource("configmaps"), "broken"),
			Error{Kind: StoreReadError, Code: 500, Reason: metav1.StatusReasonInternalError, Keys: []string{"/registry/configmaps/demo/broken"}}},
		{"etcd unreachable", "pkg/storage/errors InterpretListError (NewServerTimeout)",
			storeerr.InterpretListError(storage.NewUnreachableError("/registry/configmaps/demo", 0), v1.Resource("configmaps")),
			Error{Kind: Transient, Code: 500, Reason: metav1.StatusReasonServerTimeout, Resource: "configmaps", Name: "list"}},
		{"etcd timed out", "responsewriters ErrorToAPIStatus of etcd's rpctypes.ErrTimeout",
			asStatus(errors.New("etcdserver: request timed out")),
			Error{Kind: Transient, Code: 500}},
		{"a 500 that names no cause", "apimachinery NewInternalError",
			apierrors.NewInternalError(errors.New("couldn't get version/kind; json parse error")),
			Error{Kind: ServerError, Code: 500, Reason: metav1.StatusReasonInternalError}},

		// The server away for a while.
		{"aggregated API down", "kube-aggregator pkg/apiserver/handler_proxy.go proxyError, read by client-go",
			aggregatorAnswer(t),
			Error{Kind: Transient, Code: 503, Reason: metav1.StatusReasonServiceUnavailable, Resource: "namespaces"}},
		{"request timeout", "apiserver pkg/server/filters/timeout.go (NewTimeoutError)",
			apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0),
			Error{Kind: Transient, Code: 504, Reason: metav1.StatusReasonTimeout}},
		{"too many requests", "apiserver pkg/server/filters/priority-and-fairness.go tooManyRequests, read by client-go",
			apierrors.NewGenericServerResponse(http.StatusTooManyRequests, "GET", schema.GroupResource{Resource: "pods"}, "", "Too many requests, please try again later.\n", 1, true),
			Error{Kind: Transient, Code: 429, Reason: metav1.StatusReasonTooManyRequests, Resource: "pods"}},

		// Objects.
		{"not found", "apimachinery NewNotFound", apierrors.NewNotFound(widgets, "w1"),
			Error{Kind: NotFound, Code: 404, Reason: metav1.StatusReasonNotFound, Group: "example.com", Resource: "widgets", Name: "w1"}},
		{"conflict", "pkg/storage/errors InterpretUpdateError of a resource version conflict",
			storeerr.InterpretUpdateError(storage.NewResourceVersionConflictsError("/registry/configmaps/demo/x", 7), v1.Resource("configmaps"), "x"),
			Error{Kind: Conflict, Code: 409, Reason: metav1.StatusReasonConflict, Resource: "configmaps", Name: "x"}},
		{"bad request", "apimachinery NewBadRequest", apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"),
			Error{Kind: Other, Code: 400, Reason: metav1.StatusReasonBadRequest}},

		// The way to the server (client-go and Go's net/http).
		{"connection refused", "net/http through client-go", refused(t), Error{Kind: Unreachable, Cause: CauseRefused}},
		{"no answer in --request-timeout", "net/http Client.Timeout through client-go", silent(t), Error{Kind: Timeout}},
		{"connection closed", "net/http EOF through client-go", hungUp(t), Error{Kind: Unreachable, Cause: CauseBroken}},
		{"untrusted certificate", "crypto/x509 through client-go", untrusted(t), Error{Kind: Unreachable, Cause: CauseTLS}},
		{"rate limiter out of time", "client-go rest/request.go tryThrottleWithInfo, golang.org/x/time/rate", throttled(t), Error{Kind: Timeout}},
		{"connection reset", "syscall ECONNRESET in net.OpError",
			fmt.Errorf("listing: %w", &url.Error{Op: "Get", URL: "https://10.0.0.1/api", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}),
			Error{Kind: Unreachable, Cause: CauseBroken}},
		{"unknown host", "net.DNSError", &url.Error{Op: "Get", URL: "https://nope.example/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "nope.example", IsNotFound: true}}},
			Error{Kind: Unreachable, Cause: CauseUnknownHost}},
		{"run's deadline", "context", fmt.Errorf("pass 3: %w", context.DeadlineExceeded), Error{Kind: Timeout}},
		{"interrupted", "context", fmt.Errorf("pass 3: %w", context.Canceled), Error{Kind: Other}},
		{"predicted", "Classified", predicted{}, Error{Kind: WebhookFailed, Webhook: "guard.example.com"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error built")
			}
			if got := Classify(tc.err); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s\n%v\n got %+v\nwant %+v", tc.source, tc.err, got, tc.want)
			}
			// Wrapped with %w, it says the same.
			if got := Classify(fmt.Errorf("context: %w", tc.err)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("wrapped: got %+v", got)
			}
		})
	}
	if got := Classify(nil); got.Kind != "" {
		t.Errorf("nil: %+v", got)
	}
}

type predicted struct{}

func (predicted) Error() string   { return "not parsed" }
func (predicted) APIError() Error { return Error{Kind: WebhookFailed, Webhook: "guard.example.com"} }

// An answer kept as text (a condition, a holder's status, a report's
// error) says the same kind, and what the words carry.
func TestClassifyMessage(t *testing.T) {
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	for _, tc := range []struct {
		err  error
		want Error
	}{
		{forbidden(authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "system:serviceaccount:x:y"}, Verb: "create", Namespace: "team-a", APIGroup: "batch", Resource: "jobs", ResourceRequest: true}, ""),
			Error{Kind: Forbidden, User: "system:serviceaccount:x:y", Verb: "create", Group: "batch", Resource: "jobs", Namespace: "team-a"}},
		{terminatingRefusal(t), Error{Kind: NamespaceTerminating, Namespace: "team-a"}},
		{callingWebhook("guard.example.com", errors.New("x")), Error{Kind: WebhookFailed, Webhook: "guard.example.com"}},
		{webhookerrors.ToStatusErr("policy.example.com", &metav1.Status{Message: "no"}), Error{Kind: WebhookDenied, Webhook: "policy.example.com", Denial: "no"}},
		{apierrors.NewNotFound(widgets, "w1"), Error{Kind: NotFound, Group: "example.com", Resource: "widgets", Name: "w1"}},
		{apierrors.NewConflict(widgets, "w1", errors.New("the object has been modified")), Error{Kind: Conflict, Group: "example.com", Resource: "widgets", Name: "w1"}},
		{apierrors.NewUnauthorized("Unauthorized"), Error{Kind: Unauthorized}},
		{aggregatorAnswer(t), Error{Kind: Transient}},
		{apierrors.NewInternalError(errors.New("etcdserver: leader changed")), Error{Kind: Transient}},
		{apierrors.NewInternalError(errors.New("bug")), Error{Kind: ServerError}},
		{storeerr.InterpretListError(storage.NewInternalError(fmt.Errorf("unable to transform key %q: %w", "/registry/k", errors.New("x"))), widgets),
			Error{Kind: StoreReadError, Keys: []string{"/registry/k"}}},
		{kep3926Answer(widgets), Error{Kind: StoreReadError}},
		{refused(t), Error{Kind: Unreachable, Cause: CauseRefused}},
		{silent(t), Error{Kind: Timeout}},
		{untrusted(t), Error{Kind: Unreachable, Cause: CauseTLS}},
		{hungUp(t), Error{Kind: Unreachable, Cause: CauseBroken}},
		{throttled(t), Error{Kind: Timeout}},
		{errors.New(`Get "https://nope.example/api": dial tcp: lookup nope.example: no such host`), Error{Kind: Unreachable, Cause: CauseUnknownHost}},
		{errors.New("namespace demo is not being deleted"), Error{Kind: Other}},
	} {
		if got := ClassifyMessage(tc.err.Error()); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q\n got %+v\nwant %+v", tc.err, got, tc.want)
		}
	}
}

// The namespace controller joins its errors with ", ": each denial is
// read with its own words.
func TestDenials(t *testing.T) {
	msg := "Failed to delete all resource types, 2 remaining: " + webhookerrors.ToStatusErr("a.example.com", &metav1.Status{Message: "keep a, please"}).Error() +
		", " + webhookerrors.ToStatusErr("b.example.com", nil).Error()
	want := []Error{{Kind: WebhookDenied, Webhook: "a.example.com", Denial: "keep a, please"}, {Kind: WebhookDenied, Webhook: "b.example.com", Denial: "without explanation"}}
	if got := Denials(msg); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
	if got := ClassifyMessage(msg); !reflect.DeepEqual(got, want[0]) {
		t.Errorf("the first: %+v", got)
	}
	if got := Denials("timeout"); len(got) != 0 {
		t.Errorf("no denial: %+v", got)
	}
}

// Worth retrying: what may answer otherwise the next time.
func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want bool
	}{
		{Error{Kind: Transient}, true}, {Error{Kind: Timeout}, true}, {Error{Kind: ServerError}, true},
		{Error{Kind: WebhookFailed}, true}, {Error{Kind: ConversionFailed}, true},
		{Error{Kind: Unreachable, Cause: CauseRefused}, true}, {Error{Kind: Unreachable, Cause: CauseBroken}, true},
		{Error{Kind: Unreachable, Cause: CauseNetwork}, true},
		{Error{Kind: Unreachable, Cause: CauseTLS}, false}, {Error{Kind: Unreachable, Cause: CauseUnknownHost}, false},
		{Error{Kind: Forbidden}, false}, {Error{Kind: Unauthorized}, false}, {Error{Kind: WebhookDenied}, false},
		{Error{Kind: WebhookNoDryRun}, false}, {Error{Kind: StoreReadError}, false}, {Error{Kind: NotFound}, false},
		{Error{Kind: Conflict}, false}, {Error{Kind: NamespaceTerminating}, false}, {Error{Kind: Other}, false},
	} {
		if tc.e.Transient() != tc.want {
			t.Errorf("%+v: transient %v", tc.e, !tc.want)
		}
	}
}

// The answers a plan predicts are kube-apiserver's own, word for word.
func TestPredictedAnswersAreUpstreams(t *testing.T) {
	target := "https://guard.guard.svc:443/validate?timeout=10s"
	for _, exists := range []bool{false, true} {
		var upstreamReason error = apierrors.NewNotFound(v1.Resource("service"), "guard")
		if exists {
			upstreamReason = resolveEndpoint(t, true)
		}
		upstream := callingWebhook("guard.example.com", &url.Error{Op: "Post", URL: target, Err: upstreamReason})
		ours := WebhookCallFailure("guard.example.com", ServiceCallError(target, "guard", exists))
		if !reflect.DeepEqual(ours.ErrStatus, upstream.(*apierrors.StatusError).ErrStatus) {
			t.Errorf("service exists %v:\n ours     %+v\n upstream %+v", exists, ours.ErrStatus, upstream)
		}
	}
	// The lister's NotFound is of resource "service" (the singular the
	// webhook client's resolver sees), as ResolveEndpoint returns it.
	if err := resolveEndpoint(t, false); err.Error() != `service "guard" not found` {
		t.Errorf("a missing service: %v", err)
	}
}

// forbidden is the authorizer's refusal as kube-apiserver answers it.
func forbidden(a authorizer.AttributesRecord, reason string) error {
	if a.Path == "" {
		a.ResourceRequest = true
	}
	return responsewriters.ForbiddenStatusError(a, reason)
}

// policyDenial is a ValidatingAdmissionPolicy's denial as its dispatcher
// builds it: admission.NewForbidden of its message, the reason Invalid
// (the policy's, by default) and its code.
func policyDenial(policy, binding, message string) error {
	text := fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", policy, message)
	if binding != "" {
		text = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", policy, binding, message)
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "team-a"}}
	attrs := admission.NewAttributesRecord(nil, cm, v1.SchemeGroupVersion.WithKind("ConfigMap"), "team-a", "x", v1.SchemeGroupVersion.WithResource("configmaps"),
		"", admission.Delete, &metav1.DeleteOptions{}, false, &user.DefaultInfo{Name: "system:serviceaccount:kube-system:namespace-controller"})
	err := admission.NewForbidden(attrs, errors.New(text)).(*apierrors.StatusError)
	err.ErrStatus.Reason, err.ErrStatus.Code = metav1.StatusReasonInvalid, http.StatusUnprocessableEntity
	return err
}

// callingWebhook is a fail-closed webhook's failure as the dispatchers
// answer it.
func callingWebhook(name string, reason error) error {
	return apierrors.NewInternalError(&webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("failed to call webhook: %w", reason),
		Status: apierrors.NewServiceUnavailable("error calling webhook")})
}

// asStatus is an error that is no Status, as kube-apiserver answers it.
func asStatus(err error) error {
	return &apierrors.StatusError{ErrStatus: *responsewriters.ErrorToAPIStatus(err)}
}

// kep3926Answer is KEP-3926's answer: NewAPIStatusError belongs to an
// unexported type, so its Status is copied here.
func kep3926Answer(gr schema.GroupResource, keys ...string) error {
	var causes []metav1.StatusCause
	for _, k := range keys {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Field: k,
			Message: storage.NewCorruptObjError(k, errors.New("object not decodable")).Error()})
	}
	causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeTooMany, Message: "too many errors, the list is truncated"})
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonStoreReadError,
		Details: &metav1.StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: "/registry/example.com/widgets/demo", Causes: causes},
		Message: fmt.Sprintf("failed to read one or more %s from the storage", gr.String())}}
}

// terminatingRefusal is NamespaceLifecycle's answer to a create in a
// terminating namespace, from the plugin itself.
func terminatingRefusal(t *testing.T) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Status: v1.NamespaceStatus{Phase: v1.NamespaceTerminating}}
	client := fake.NewClientset(ns)
	factory := informers.NewSharedInformerFactory(client, 0)
	plugin, err := lifecycle.NewLifecycle(sets.New[string]())
	if err != nil {
		t.Fatal(err)
	}
	plugin.SetExternalKubeInformerFactory(factory)
	plugin.SetExternalKubeClientSet(client)
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "team-a"}}
	attrs := admission.NewAttributesRecord(cm, nil, v1.SchemeGroupVersion.WithKind("ConfigMap"), "team-a", "x", v1.SchemeGroupVersion.WithResource("configmaps"),
		"", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "system:serviceaccount:team-a:ctrl"})
	return plugin.Admit(context.Background(), attrs, nil)
}

// resolveEndpoint is how kube-apiserver finds a webhook's backend: a
// Service that does not exist, or has no endpoint.
func resolveEndpoint(t *testing.T, exists bool) error {
	services := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if exists {
		_ = services.Add(&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "guard", Name: "guard"},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, Ports: []v1.ServicePort{{Port: 443}}}})
	}
	_, err := proxy.ResolveEndpoint(listersv1.NewServiceLister(services), noSlices{}, "guard", "guard", 443)
	if err == nil {
		t.Fatal("resolved")
	}
	return err
}

type noSlices struct{}

func (noSlices) GetEndpointSlices(string, string) ([]*discoveryv1.EndpointSlice, error) {
	return nil, nil
}

// client is client-go's REST client for a server, as ns-doctor's are
// built, without retries.
func client(t *testing.T, host string, cfg func(*rest.Config)) *rest.RESTClient {
	c := &rest.Config{Host: host, ContentConfig: rest.ContentConfig{GroupVersion: &v1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}}
	c.APIPath = "/api"
	if cfg != nil {
		cfg(c)
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func get(ctx context.Context, rc *rest.RESTClient) error {
	return rc.Get().Resource("namespaces").MaxRetries(0).Do(ctx).Error()
}

// aggregatorAnswer is kube-aggregator's plain-text 503 for an APIService
// whose backend is gone, as client-go reads it.
func aggregatorAnswer(t *testing.T) error {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	return get(context.Background(), client(t, srv.URL, nil))
}

func refused(t *testing.T) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return get(context.Background(), client(t, "http://"+addr, nil))
}

func silent(t *testing.T) error {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	return get(context.Background(), client(t, srv.URL, func(c *rest.Config) { c.Timeout = 50 * time.Millisecond }))
}

func hungUp(t *testing.T) error {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	defer srv.Close()
	return get(context.Background(), client(t, srv.URL, nil))
}

func untrusted(t *testing.T) error {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake the client gives up
	srv.StartTLS()
	defer srv.Close()
	return get(context.Background(), client(t, srv.URL, nil))
}

func throttled(t *testing.T) error {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"kind":"NamespaceList","apiVersion":"v1"}`))
	}))
	defer srv.Close()
	rc := client(t, srv.URL, func(c *rest.Config) { c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(0.01, 1) })
	if err := get(context.Background(), rc); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := get(ctx, rc)
	if err == nil || !strings.Contains(err.Error(), "client rate limiter") {
		t.Fatalf("not the rate limiter: %v", err)
	}
	return err
}

// Any text, a webhook author's or a hostile cluster's: read without
// panicking, always a kind, the same whether it comes as an error or as
// text, and no more denials than it quotes.
func FuzzClassifyMessage(f *testing.F) {
	for _, seed := range []string{
		`Internal error occurred: failed calling webhook "a": failed to call webhook: Post "https://a.b.svc:443/?timeout=10s": service "a" not found`,
		`admission webhook "a\"b" denied the request: x, admission webhook "c" denied the request`,
		`pods "p" is forbidden: User "system:serviceaccount:a:b" cannot delete resource "pods/eviction" in API group "" in the namespace "n"`,
		`conversion webhook for example.com/v2, Kind=Widget failed: x`, `unable to transform key "/registry/k": x`, "x509: certificate", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		e := ClassifyMessage(msg)
		if (msg == "") != (e.Kind == "") {
			t.Fatalf("%q: kind %q", msg, e.Kind)
		}
		if msg != "" && !reflect.DeepEqual(Classify(errors.New(msg)), e) {
			t.Fatalf("%q: as an error %+v, as text %+v", msg, Classify(errors.New(msg)), e)
		}
		denials := Denials(msg)
		if len(denials) > strings.Count(msg, " denied the request") {
			t.Fatalf("%q: %d denials", msg, len(denials))
		}
		for _, d := range denials {
			if d.Kind != WebhookDenied {
				t.Fatalf("%q: %+v", msg, d)
			}
		}
	})
}
