package apierror

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// kube-apiserver's and client-go's wordings at v1.36.3 (k8s.io/apiserver,
// k8s.io/apiextensions-apiserver, k8s.io/apimachinery, k8s.io/client-go
// v0.36.3), read where the Status carries nothing better. Names are
// quoted with %q: quoted reads one.
const quoted = `"((?:[^"\\]|\\.)*)"`

var (
	// apiserver pkg/util/webhook/error.go, ErrCallingWebhook.Error: a
	// webhook that could not be called (no endpoints, TLS, timeout, an
	// invalid answer), wrapped in a 500 by the validating and mutating
	// dispatchers when its failure policy is Fail.
	failedCalling = regexp.MustCompile(`failed calling webhook ` + quoted)
	// apiserver pkg/admission/plugin/webhook/errors/statuserror.go,
	// ToStatusErr: a webhook's denial, followed by ": " and its message,
	// or " without explanation".
	deniedBy = regexp.MustCompile(`admission webhook ` + quoted + ` denied the request`)
	// apiserver pkg/admission/plugin/policy/validating/dispatcher.go,
	// Dispatch: a ValidatingAdmissionPolicy's denial, with its binding or
	// without, followed by ": " and its message.
	policyDeniedBy = regexp.MustCompile(`ValidatingAdmissionPolicy '([^']*)'(?: with binding '([^']*)')? denied request: `)
	// apimachinery pkg/api/errors NewInternalError, and NewForbidden of
	// an object: where the next of the controller's joined errors starts.
	internalError = regexp.MustCompile(`, Internal error occurred: `)
	objectRefused = regexp.MustCompile(`, \S+ "[^"]*" is forbidden: `)
	// the same file as deniedBy, NewDryRunUnsupportedErr: a 400 for a dry run a
	// webhook with side effects cannot take.
	noDryRun = regexp.MustCompile(`admission webhook ` + quoted + ` does not support dry run`)
	// apiserver pkg/admission/plugin/webhook/mutating/dispatcher.go,
	// callAttrMutatingHook: a mutating webhook that patched a request it
	// may not change (a DELETE).
	mutatedWrongly = regexp.MustCompile(`admission webhook ` + quoted + ` attempted to modify the object`)
	// apiserver .../webhook/validating/dispatcher.go, Dispatch: a webhook
	// call that panicked inside kube-apiserver.
	panicked = regexp.MustCompile(`ValidatingAdmissionWebhook/(\S+) has panicked`)
	// apiextensions-apiserver pkg/apiserver/conversion/webhook_converter.go,
	// Convert: "conversion webhook for %v failed: %v" and its siblings
	// ("returned ...") print a GroupVersionKind as "group/version,
	// Kind=Kind".
	conversionFor = regexp.MustCompile(`conversion webhook for ([^\s,/]*)/([^\s,]+), Kind=([^\s,:]+)`)
	// apiserver pkg/storage/etcd3/store.go, GetList: a value the
	// transformer (encryption at rest) cannot read, with the gate off.
	transformKey = regexp.MustCompile(`unable to transform key ` + quoted)
	// apiserver pkg/storage/errors.go, StorageError.Error for
	// ErrCodeCorruptObj: an object storage cannot decode, interpreted as
	// a 500 by pkg/storage/errors InterpretListError/InterpretGetError.
	corruptKey = regexp.MustCompile(`StorageError: corrupt object, Code: \d+, Key: (\S+),`)
	// apiserver pkg/endpoints/handlers/responsewriters/errors.go,
	// forbiddenMessage: the authorizer's refusal, for a resource in a
	// namespace, at the cluster scope, or of a non-resource path.
	forbiddenResource = regexp.MustCompile(`User ` + quoted + ` cannot (\S+) resource ` + quoted + `(?: in API group ` + quoted + `(?: in the namespace ` + quoted + `)?)?`)
	forbiddenPath     = regexp.MustCompile(`User ` + quoted + ` cannot (\S+) path ` + quoted)
	// apiserver pkg/admission/plugin/namespace/lifecycle/admission.go,
	// Validate: a create in a terminating namespace.
	terminatingAt = regexp.MustCompile(`unable to create new content in namespace (\S+) because it is being terminated`)
	// apimachinery pkg/api/errors/errors.go: NewForbidden ("forbidden:
	// %v", "%s is forbidden: %v", "%s %q is forbidden: %v"), NewNotFound
	// ("%s %q not found"), NewConflict ("Operation cannot be fulfilled on
	// %s %q: %v").
	forbiddenAt = regexp.MustCompile(`(?:^|\s)forbidden: `)
	notFoundAt  = regexp.MustCompile(`(?:^|: )(\S+) ` + quoted + ` not found$`)
	conflictOn  = regexp.MustCompile(`Operation cannot be fulfilled on (\S+) ` + quoted)
)

// storeWords are the other words of objects storage cannot read:
// apiserver pkg/storage/etcd3/corrupt_obj_deleter.go (aggregatedStorageError,
// and NewAPIStatusError's message when a client kept only the words).
var storeWords = []string{"unable to transform or decode", "failed to read one or more"}

// storageHiccups are the words of a 500 that is the storage's passing
// trouble, not what it holds: etcd's own errors
// (go.etcd.io/etcd/api/v3/v3rpc/rpctypes, "etcdserver: request timed
// out", "etcdserver: leader changed"), the storage's timeouts, a backend
// that refused a connection.
var storageHiccups = []string{"etcdserver:", "timeout", "timed out", "deadline", "connection refused"}

// actorOf reads who answered, from words any code may carry: a webhook, a
// conversion webhook, the storage. The first one the message names wins:
// a denial may quote another error.
func actorOf(msg string) Error {
	best, at := Error{}, len(msg)+1
	try := func(re *regexp.Regexp, kind Kind) {
		m := re.FindStringSubmatchIndex(msg)
		if m == nil || m[0] >= at {
			return
		}
		best, at = Error{Kind: kind, Webhook: unquote(msg[m[2]:m[3]])}, m[0]
		if kind == WebhookDenied {
			best = Denials(msg[m[0]:])[0]
		}
	}
	try(failedCalling, WebhookFailed)
	try(deniedBy, WebhookDenied)
	try(noDryRun, WebhookNoDryRun)
	try(mutatedWrongly, WebhookFailed)
	if m := panicked.FindStringSubmatchIndex(msg); m != nil && m[0] < at {
		best, at = Error{Kind: WebhookFailed, Webhook: msg[m[2]:m[3]]}, m[0]
	}
	if i := strings.Index(msg, "conversion webhook for "); i >= 0 && i < at {
		best, at = Error{Kind: ConversionFailed}, i
		if m := conversionFor.FindStringSubmatch(msg[i:]); m != nil {
			best.Group, best.Version, best.ObjectKind = m[1], m[2], m[3]
		}
	}
	if ps := PolicyDenials(msg); len(ps) > 0 && strings.Index(msg, "ValidatingAdmissionPolicy '") < at {
		best = ps[0]
	}
	if best.Kind != "" {
		return best
	}
	return storeOf(msg)
}

// storeOf reads objects storage cannot read, with their keys where the
// words name them.
func storeOf(msg string) Error {
	e := Error{Kind: StoreReadError}
	for _, m := range transformKey.FindAllStringSubmatch(msg, -1) {
		e.Keys = append(e.Keys, unquote(m[1]))
	}
	for _, m := range corruptKey.FindAllStringSubmatch(msg, -1) {
		e.Keys = append(e.Keys, m[1])
	}
	if len(e.Keys) > 0 || containsAny(msg, storeWords) {
		return e
	}
	return Error{}
}

// StorageKeys are the storage keys of the objects a message says storage
// cannot read (a value the transformer cannot read, an object that cannot
// be decoded or converted), whatever else it says first.
func StorageKeys(msg string) []string { return storeOf(msg).Keys }

// denialWords are a denial's own words: what follows ": ", or "without
// explanation" (ToStatusErr's words when the webhook gave none).
func denialWords(rest string) string {
	return strings.TrimPrefix(strings.TrimSuffix(strings.TrimSpace(rest), ","), ": ")
}

// forbiddenOf reads a 403's words: who may not do what, or the namespace
// a create was refused in.
func forbiddenOf(msg string) Error {
	e := Error{Kind: Forbidden}
	if m := terminatingAt.FindStringSubmatch(msg); m != nil {
		return Error{Kind: NamespaceTerminating, Namespace: m[1]}
	}
	if m := forbiddenResource.FindStringSubmatch(msg); m != nil {
		e.User, e.Verb, e.Group, e.Namespace = unescape(unquote(m[1])), m[2], unquote(m[4]), unquote(m[5])
		e.Resource, e.Subresource, _ = strings.Cut(unquote(m[3]), "/")
		return e
	}
	if m := forbiddenPath.FindStringSubmatch(msg); m != nil {
		e.User, e.Verb, e.Path = unescape(unquote(m[1])), m[2], unescape(unquote(m[3]))
	}
	return e
}

// internalKind sorts a 500 that names no webhook, conversion or storage
// key: the storage's passing trouble, a webhook's failure that does not
// name it, or an error of the server's own.
func internalKind(msg string) Kind {
	switch {
	case containsAny(msg, storageHiccups):
		return Transient
	case strings.Contains(msg, "webhook"):
		return WebhookFailed
	}
	return ServerError
}

// ClassifyMessage says what an error's text alone says: a condition's
// message, a holder's status, an owner's log line, an answer a report
// kept as text. Classify reads an error itself better.
func ClassifyMessage(msg string) Error {
	if msg == "" {
		return Error{}
	}
	if e := actorOf(msg); e.Kind != "" {
		return e
	}
	if e, ok := apiWords(msg); ok {
		return e
	}
	if e, ok := transportWords(msg); ok {
		return e
	}
	return Error{Kind: Other}
}

// apiWords reads apimachinery's and client-go's wordings of a Status
// whose reason was lost.
func apiWords(msg string) (Error, bool) {
	switch {
	case strings.Contains(msg, "Internal error occurred: "), strings.Contains(msg, "has prevented the request from succeeding"):
		// NewInternalError; client-go's NewGenericServerResponse for a 500.
		return Error{Kind: internalKind(msg)}, true
	case forbiddenAt.MatchString(msg) || forbiddenResource.MatchString(msg) || terminatingAt.MatchString(msg):
		return forbiddenOf(msg), true
	case msg == "Unauthorized" || strings.Contains(msg, "the server has asked for the client to provide credentials"):
		// authentication filter's NewUnauthorized("Unauthorized");
		// NewGenericServerResponse for a 401.
		return Error{Kind: Unauthorized}, true
	case conflictOn.MatchString(msg):
		m := conflictOn.FindStringSubmatch(msg)
		e := Error{Kind: Conflict, Name: unquote(m[2])}
		e.Resource, e.Group, _ = strings.Cut(m[1], ".")
		return e, true
	case notFoundAt.MatchString(msg):
		m := notFoundAt.FindStringSubmatch(msg)
		e := Error{Kind: NotFound, Name: unquote(m[2])}
		e.Resource, e.Group, _ = strings.Cut(m[1], ".")
		return e, true
	case strings.Contains(msg, "the server could not find the requested resource"):
		return Error{Kind: NotFound}, true
	}
	// NewGenericServerResponse for a 503, 504 and 429; NewTimeoutError
	// ("Timeout: %s"), NewTooManyRequests ("Too many requests: %s"),
	// NewServerTimeout.
	for _, w := range []string{"the server is currently unable to handle the request", "the server was unable to return a response in the time allotted",
		"has asked us to try again later", "Timeout: request did not complete", "Too many requests: ", "could not be completed at this time, please try again"} {
		if strings.Contains(msg, w) {
			return Error{Kind: Transient}, true
		}
	}
	return Error{}, false
}

// unquote reads a %q-quoted name (its quotes already cut).
func unquote(s string) string {
	if u, err := strconv.Unquote(`"` + s + `"`); err == nil {
		return u
	}
	return s
}

// unescape undoes responsewriters' sanitizer, which writes &, < and > of
// a forbidden message as HTML entities.
func unescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// FailedWebhooks are the webhooks a message says could not be called, in
// order, once each.
func FailedWebhooks(msg string) []string {
	var out []string
	for _, m := range failedCalling.FindAllStringSubmatch(msg, -1) {
		if name := unquote(m[1]); !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// PolicyDenials are every ValidatingAdmissionPolicy denial a message
// quotes, in order, each with its policy, binding and words, which end
// where the next denial starts (the namespace controller joins its errors
// with ", ").
func PolicyDenials(msg string) []Error {
	idx := policyDeniedBy.FindAllStringSubmatchIndex(msg, -1)
	out := make([]Error, 0, len(idx))
	for _, m := range idx {
		e := Error{Kind: PolicyDenied, Policy: msg[m[2]:m[3]], Denial: denialWords(msg[m[1]:nextError(msg, m[1])])}
		if m[4] >= 0 {
			e.Binding = msg[m[4]:m[5]]
		}
		out = append(out, e)
	}
	return out
}

// nextError is where the next error the controller joined starts after
// from: another denial, a webhook that could not be called, an internal
// error, or an object's refusal ("configmaps "x" is forbidden: ...").
func nextError(msg string, from int) int {
	end := len(msg)
	for _, re := range []*regexp.Regexp{policyDeniedBy, deniedBy, failedCalling, internalError, objectRefused} {
		if loc := re.FindStringIndex(msg[from:]); loc != nil && from+loc[0] < end {
			end = from + loc[0]
		}
	}
	return end
}

// Denials are every webhook denial a message quotes, in order, each with
// its webhook and words: the namespace controller joins its errors with
// ", ", so a denial's words end where the next one starts.
func Denials(msg string) []Error {
	idx := deniedBy.FindAllStringSubmatchIndex(msg, -1)
	out := make([]Error, 0, len(idx))
	for i, m := range idx {
		end := len(msg)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out = append(out, Error{Kind: WebhookDenied, Webhook: unquote(msg[m[2]:m[3]]), Denial: denialWords(msg[m[1]:end])})
	}
	return out
}
