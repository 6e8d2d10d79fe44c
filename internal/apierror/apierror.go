// Package apierror reads what an error from the API server, or from the
// way to it, says: one Kind, and the fields that kind carries (who was
// refused what, which webhook, which storage key). It is the one place
// ns-doctor understands API errors: diagnose, purge, the command layer,
// the printer, fleet and watch ask it rather than reading errors
// themselves.
//
// It reads the typed answer first (a Status's reason, code, details and
// causes) and kube-apiserver's wording only where the Status carries
// nothing better (a webhook's name, a forbidden user, a storage key are
// only in the message). Every wording it reads is kube-apiserver's or
// client-go's own at v1.36.3, each cited in words.go and checked in
// apierror_test.go against the upstream function that writes it.
package apierror

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kind is what an error says, in a word.
type Kind string

// Kinds. A new one needs its rows in apierror_test.go.
const (
	// Transient: the server answered that it cannot serve the request
	// now (503, 504, 429, a storage timeout): asking again later helps.
	Transient Kind = "Transient"
	// Timeout: no answer within the client's time (--request-timeout,
	// the run's deadline, client-go's rate limiter refusing to wait past
	// it).
	Timeout Kind = "Timeout"
	// Unreachable: no answer at all; Cause says why.
	Unreachable Kind = "Unreachable"
	// Unauthorized: the credentials were refused (401).
	Unauthorized Kind = "Unauthorized"
	// Forbidden: the authorizer refused: User may not Verb the resource.
	Forbidden Kind = "Forbidden"
	// NamespaceTerminating: the NamespaceLifecycle admission plugin
	// refuses new content in a terminating namespace (a 403 too).
	NamespaceTerminating Kind = "NamespaceTerminating"
	// WebhookFailed: an admission webhook could not be called (or
	// misbehaved), and its failure policy is Fail.
	WebhookFailed Kind = "WebhookFailed"
	// WebhookDenied: an admission webhook answered no (its policy);
	// Denial is its own words.
	WebhookDenied Kind = "WebhookDenied"
	// PolicyDenied: a ValidatingAdmissionPolicy answered no (its CEL
	// validations), with its binding when the server names it.
	PolicyDenied Kind = "PolicyDenied"
	// WebhookNoDryRun: an admission webhook with side effects refuses a
	// dry run (only a dry run: the request itself would reach it).
	WebhookNoDryRun Kind = "WebhookNoDryRun"
	// ConversionFailed: a CRD's conversion webhook failed, so objects
	// stored in another version cannot be served.
	ConversionFailed Kind = "ConversionFailed"
	// StoreReadError: objects the API server cannot read from its
	// storage (undecryptable or undecodable), KEP-3926.
	StoreReadError Kind = "StoreReadError"
	// ServerError: a 500 that names no cause ns-doctor knows.
	ServerError Kind = "ServerError"
	// NotFound: the object or resource does not exist.
	NotFound Kind = "NotFound"
	// Conflict: the object changed since it was read.
	Conflict Kind = "Conflict"
	// Other: anything else (a bad request, an invalid object, an error
	// of ns-doctor's own).
	Other Kind = "Other"
)

// Cause says why a server could not be reached (Unreachable).
type Cause string

// Causes.
const (
	// CauseRefused: nothing listens (a server restarting, a wrong port).
	CauseRefused Cause = "ConnectionRefused"
	// CauseBroken: the connection broke mid-request (reset, EOF, an
	// HTTP/2 GOAWAY).
	CauseBroken Cause = "ConnectionBroken"
	// CauseUnknownHost: the name does not resolve.
	CauseUnknownHost Cause = "UnknownHost"
	// CauseTLS: the TLS handshake failed (a certificate the client does
	// not trust, or the server refused the client's).
	CauseTLS Cause = "TLS"
	// CauseNetwork: any other transport failure.
	CauseNetwork Cause = "Network"
)

// Error is what one error says. Kind is always set for a non-nil error;
// the other fields only where the answer carries them.
type Error struct {
	Kind Kind `json:"kind"`
	// Code and Reason are the Status's, when the answer was one.
	Code   int32               `json:"code,omitempty"`
	Reason metav1.StatusReason `json:"reason,omitempty"`
	// Cause: why the server could not be reached (Unreachable).
	Cause Cause `json:"cause,omitempty"`
	// User, Verb and Path: who was refused what (Forbidden; Path for a
	// non-resource URL).
	User string `json:"user,omitempty"`
	Verb string `json:"verb,omitempty"`
	Path string `json:"path,omitempty"`
	// Group, Resource, Subresource, Namespace and Name: the object the
	// answer is about (Forbidden, NamespaceTerminating, NotFound,
	// Conflict, StoreReadError; Group and Version with ObjectKind for
	// ConversionFailed).
	Group       string `json:"group,omitempty"`
	Version     string `json:"version,omitempty"`
	ObjectKind  string `json:"objectKind,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	// Webhook names the admission webhook (WebhookFailed, WebhookDenied,
	// WebhookNoDryRun); empty when a failure mentions a webhook without
	// naming it. Denial is a denial's own words.
	Webhook string `json:"webhook,omitempty"`
	Denial  string `json:"denial,omitempty"`
	// Policy and Binding name the ValidatingAdmissionPolicy that denied
	// (PolicyDenied); Denial is then its message.
	Policy  string `json:"policy,omitempty"`
	Binding string `json:"binding,omitempty"`
	// Keys are the storage keys of the objects that cannot be read
	// (StoreReadError), as far as the answer names them; Truncated when
	// the server named only the first ones.
	Keys      []string `json:"keys,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
}

// Classified is an error that knows what it is (a plan's predicted
// rejection): Classify asks it instead of reading it.
type Classified interface {
	error
	APIError() Error
}

// Classify says what err is; the zero Error for nil. It understands
// errors wrapped with %w, a Status anywhere in the chain, url.Error, net
// errors, context deadlines and TLS failures.
func Classify(err error) Error {
	if err == nil {
		return Error{}
	}
	var c Classified
	if errors.As(err, &c) {
		return c.APIError()
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fromStatus(err, status.Status())
	}
	if e, ok := fromTransport(err); ok {
		return e
	}
	return ClassifyMessage(err.Error())
}

// Transient tells whether asking again may get another answer. A webhook
// or conversion backend that cannot be called may come back (a rollout,
// a restarting pod): the pass loop stops sooner on its own when it knows
// the backend is gone. A 500 that names no cause is etcd's hiccup (a
// leader change) as often as a bug: one more backoff costs little, and
// --timeout bounds it. A certificate the client does not trust, a name
// that does not resolve, a denial, a refusal, objects storage cannot
// decode: the same request meets the same answer.
func (e Error) Transient() bool {
	switch e.Kind {
	case Transient, Timeout, ServerError, WebhookFailed, ConversionFailed:
		return true
	case Unreachable:
		return e.Cause != CauseTLS && e.Cause != CauseUnknownHost
	}
	return false
}

// QualifiedResource is the resource with its subresource, as
// kube-apiserver names it in a refusal ("namespaces/finalize").
func (e Error) QualifiedResource() string {
	if e.Subresource == "" {
		return e.Resource
	}
	return e.Resource + "/" + e.Subresource
}

// fromStatus reads a Status: its reason and code first, its message for
// what only the message carries.
func fromStatus(err error, s metav1.Status) Error {
	e := Error{Code: s.Code, Reason: s.Reason}
	if d := s.Details; d != nil {
		e.Group, e.Resource, e.Name = d.Group, d.Kind, d.Name
	}
	if s.Reason == metav1.StatusReasonStoreReadError {
		// From 1.37 (KEP-3926 on by default) an object a conversion
		// webhook could not convert is reported as one storage cannot
		// decode; it reads fine once the webhook answers, so it is the
		// webhook's failure, never a case for the unsafe delete.
		if w := actorOf(s.Message); w.Kind == ConversionFailed {
			return merge(e, w)
		}
		return storeReadError(e, s)
	}
	// Who refused is only in the words, whatever the code: a webhook
	// denies with the code it chooses (403 often).
	if w := actorOf(s.Message); w.Kind != "" {
		return merge(e, w)
	}
	switch {
	case apierrors.IsUnauthorized(err):
		e.Kind = Unauthorized
	case apierrors.IsForbidden(err):
		e = merge(e, forbiddenOf(s.Message))
		if terminating(s) {
			e.Kind = NamespaceTerminating
		}
	case apierrors.IsNotFound(err):
		e.Kind = NotFound
	case apierrors.IsConflict(err):
		e.Kind = Conflict
	case apierrors.IsServiceUnavailable(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsTooManyRequests(err):
		e.Kind = Transient
	case apierrors.IsInternalError(err):
		e.Kind = internalKind(s.Message)
	default:
		e.Kind = Other
	}
	return e
}

// terminating tells NamespaceLifecycle's refusal by its cause, or its
// words when a client dropped the details.
func terminating(s metav1.Status) bool {
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Type == "NamespaceTerminating" { // v1.NamespaceTerminatingCause
				return true
			}
		}
	}
	return terminatingAt.MatchString(s.Message)
}

// storeReadError reads KEP-3926's answer: each object that cannot be read
// is a cause whose field is its storage key.
func storeReadError(e Error, s metav1.Status) Error {
	e.Kind = StoreReadError
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			switch {
			case c.Type == metav1.CauseTypeTooMany:
				e.Truncated = true
			case c.Field != "":
				e.Keys = append(e.Keys, c.Field)
			}
		}
	}
	return e
}

// merge adds what the words say to what the Status says: the words' kind
// and the fields the Status did not fill.
func merge(e, w Error) Error {
	if w.Kind != "" {
		e.Kind = w.Kind
	}
	fill := func(dst *string, src string) {
		if src != "" {
			*dst = src
		}
	}
	fill(&e.User, w.User)
	fill(&e.Verb, w.Verb)
	fill(&e.Path, w.Path)
	fill(&e.Resource, w.Resource)
	fill(&e.Subresource, w.Subresource)
	fill(&e.Namespace, w.Namespace)
	fill(&e.Webhook, w.Webhook)
	fill(&e.Denial, w.Denial)
	fill(&e.Policy, w.Policy)
	fill(&e.Binding, w.Binding)
	fill(&e.Version, w.Version)
	fill(&e.ObjectKind, w.ObjectKind)
	fill(&e.Group, w.Group)
	e.Keys = append(e.Keys, w.Keys...)
	return e
}
