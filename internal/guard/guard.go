// Package guard is the deletion guard: a validating admission webhook,
// served by `watch --guard`, that predicts at the moment of `kubectl delete
// namespace` (or of a CustomResourceDefinition) whether the deletion would
// stick, with explain --if-deleted's engine, and answers within a budget:
// allowed with a warning per predicted blocker (warn), or refused for the
// predictions ns-doctor is sure of (deny) unless the object carries
// AllowAnnotation or the requester is in an exempt group. It fails open:
// a prediction that errs or does not finish within the budget allows the
// deletion, saying so. Only a DELETE of an object not yet being deleted is
// looked at; the webhook configuration (Configuration) keeps everything
// else, the namespace controller's requests included, from reaching it.
// It returns data; the command layer gives the words (Words).
package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// Mode is what the guard does with what it predicts.
type Mode string

// Modes.
const (
	// ModeWarn allows every deletion, with a warning per predicted blocker.
	ModeWarn Mode = "warn"
	// ModeDeny refuses a deletion it is sure would stick, with the same
	// reasons; it warns about the rest.
	ModeDeny Mode = "deny"
)

// Modes is every mode, for flags and completion.
func Modes() []Mode { return []Mode{ModeWarn, ModeDeny} }

// AllowAnnotation, set to "true" on a namespace (or CRD), lets deny mode
// allow its deletion: someone decided it may stick.
const AllowAnnotation = "ns-doctor.io/allow-stuck-deletion"

// DefaultTimeout is --guard-timeout's default: the budget of one
// prediction.
const DefaultTimeout = 2 * time.Second

// defaultConcurrency bounds the predictions running at once: each sweeps
// a namespace, and a burst of deletions must not sweep the cluster at
// once. Waiting for a turn counts in the budget.
const defaultConcurrency = 4

// maxReviewBytes bounds an AdmissionReview read: a CRD's old object holds
// its schemas, which may be large.
const maxReviewBytes = 32 << 20

// Options are the guard's flags, as the engine needs them.
type Options struct {
	Mode Mode
	// Timeout is the budget of one answer; past it the guard fails open.
	Timeout time.Duration
	// ExemptGroups: a requester in one of them is never refused.
	ExemptGroups []string
	// Inspect applies to every prediction (grace, deletion order);
	// IfDeleted is the guard's to set.
	Inspect inspect.Options
	// Concurrency bounds the predictions at once (0: 4).
	Concurrency int
}

// Words say a verdict: the warnings (each one line, escaped and bounded
// within what kube-apiserver passes on) and the refusal's message. The
// command layer gives them (internal/printer).
type Words interface {
	Warnings(v Verdict) []string
	Denial(v Verdict) string
}

// Guard answers AdmissionReviews. Fill the exported fields, then serve
// it (it is an http.Handler).
type Guard struct {
	Clients *kube.Clients
	Opts    Options
	Words   Words
	// Metrics count the answers; nil counts none.
	Metrics *Metrics
	// OnVerdict hears every verdict (the watch logs it); nil: nobody.
	OnVerdict func(Verdict)
	// Reads, when running, are what predictions read with (reads.go); nil
	// or not warm yet: each prediction reads afresh.
	Reads *Reads

	once  sync.Once
	slots chan struct{}
}

// Outcome is what the guard answered.
type Outcome string

// Outcomes, as the metrics name them.
const (
	OutcomeAllowed    Outcome = "allowed"     // nothing predicted
	OutcomeWarned     Outcome = "warned"      // allowed, with warnings
	OutcomeDenied     Outcome = "denied"      // refused
	OutcomeFailedOpen Outcome = "failed_open" // no prediction in time, or an error: allowed unchecked
)

// Outcomes is every outcome.
func Outcomes() []Outcome {
	return []Outcome{OutcomeAllowed, OutcomeWarned, OutcomeDenied, OutcomeFailedOpen}
}

// Target is the kind of object a DELETE is for.
type Target string

// Targets.
const (
	TargetNamespace Target = "Namespace"
	TargetCRD       Target = "CustomResourceDefinition"
)

// Targets is every target, with the resource its rule names.
func Targets() map[Target]string {
	return map[Target]string{TargetNamespace: "namespaces", TargetCRD: "customresourcedefinitions"}
}

// Exemption says what let a deletion deny mode would refuse through.
type Exemption string

// Exemptions.
const (
	ExemptAnnotation Exemption = "Annotation"
	ExemptGroup      Exemption = "Group"
)

// Failure says why the guard failed open.
type Failure string

// Failures.
const (
	FailureTimeout Failure = "Timeout"
	FailureError   Failure = "Error"
)

// Verdict is the guard's answer to one DELETE, as data.
type Verdict struct {
	Mode    Mode
	Target  Target
	Name    string
	User    string
	DryRun  bool
	Outcome Outcome
	// Findings are the predicted blockers, the ones deny refuses on
	// marked Sure.
	Findings []Finding
	// Exempt (and ExemptGroup) say what let a deletion with sure
	// findings through in deny mode.
	Exempt      Exemption
	ExemptGroup string
	// Failure and Err say why it failed open.
	Failure Failure
	Err     error
	// Budget is the time it had; Took the time it took.
	Budget, Took time.Duration
}

// Sure tells whether a finding is one deny refuses on.
func (v Verdict) Sure() bool {
	return slices.ContainsFunc(v.Findings, func(f Finding) bool { return f.Sure })
}

// ServeHTTP answers one AdmissionReview (admission.k8s.io/v1).
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
	if err != nil || len(body) > maxReviewBytes {
		http.Error(w, "cannot read the AdmissionReview", http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Response: g.Review(r.Context(), review.Request),
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// Review answers one admission request.
func (g *Guard) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	v := g.Decide(ctx, req)
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: v.Outcome != OutcomeDenied}
	if v.Outcome != OutcomeAllowed {
		resp.Warnings = g.Words.Warnings(v)
	}
	if v.Outcome == OutcomeDenied {
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden,
			Reason: metav1.StatusReasonForbidden, Message: g.Words.Denial(v)}
	}
	if g.Metrics != nil && v.Target != "" {
		g.Metrics.admitted(v)
	}
	if g.OnVerdict != nil && v.Target != "" {
		g.OnVerdict(v)
	}
	return resp
}

// Decide is the verdict on one request. Anything but the DELETE of a
// namespace or CRD not yet being deleted is allowed at once, untouched
// (the webhook's rules and matchConditions send none; an older API
// server without matchConditions might).
func (g *Guard) Decide(ctx context.Context, req *admissionv1.AdmissionRequest) Verdict {
	v := Verdict{Mode: g.Opts.Mode, Name: req.Name, User: req.UserInfo.Username, DryRun: ptr.Deref(req.DryRun, false),
		Budget: g.Opts.Timeout, Outcome: OutcomeAllowed}
	target, ok := targetOf(req)
	if !ok {
		return v
	}
	obj, err := decodeOld(req)
	switch {
	case err != nil:
		v.Target = target
		return g.failOpen(v, FailureError, err, 0)
	case obj.DeletionTimestamp != nil:
		return v // deleting it again changes nothing
	}
	v.Target = target
	started := time.Now()
	ctx, cancel := context.WithTimeout(ctx, g.Opts.Timeout)
	defer cancel()
	in, reads := g.inspector()
	findings, err := g.predictWithin(ctx, target, req.OldObject.Raw, in, reads)
	took := time.Since(started)
	if g.Metrics != nil {
		g.Metrics.predicted(took, reads)
	}
	switch {
	case errors.Is(err, errTimeout):
		return g.failOpen(v, FailureTimeout, err, took)
	case err != nil:
		return g.failOpen(v, FailureError, err, took)
	}
	v.Findings, v.Took = findings, took
	return g.judge(v, obj, req.UserInfo.Groups)
}

// judge turns the findings into an outcome, by mode and exemptions.
func (g *Guard) judge(v Verdict, obj metav1.ObjectMeta, groups []string) Verdict {
	switch {
	case len(v.Findings) == 0:
		v.Outcome = OutcomeAllowed
		return v
	case g.Opts.Mode != ModeDeny || !v.Sure():
		v.Outcome = OutcomeWarned
		return v
	}
	v.Outcome = OutcomeWarned
	if obj.Annotations[AllowAnnotation] == "true" {
		v.Exempt = ExemptAnnotation
		return v
	}
	for _, grp := range groups {
		if slices.Contains(g.Opts.ExemptGroups, grp) {
			v.Exempt, v.ExemptGroup = ExemptGroup, grp
			return v
		}
	}
	v.Outcome = OutcomeDenied
	return v
}

func (g *Guard) failOpen(v Verdict, f Failure, err error, took time.Duration) Verdict {
	v.Outcome, v.Failure, v.Err, v.Took = OutcomeFailedOpen, f, err, took
	return v
}

var errTimeout = errors.New("no prediction within the budget")

// predictWithin runs the prediction and gives up when ctx ends (the
// budget): the prediction, which reads with ctx, stops soon after.
func (g *Guard) predictWithin(ctx context.Context, target Target, raw []byte, in *inspect.Inspector, reads ReadsFrom) ([]Finding, error) {
	select {
	case g.turns() <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w (%d predictions already running)", errTimeout, cap(g.turns()))
	}
	type result struct {
		findings []Finding
		err      error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-g.turns() }()
		f, err := g.predict(ctx, target, raw, in, reads)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		if r.err != nil && ctx.Err() != nil {
			return nil, errTimeout
		}
		return r.findings, r.err
	case <-ctx.Done():
		return nil, errTimeout
	}
}

// turns is the semaphore of the predictions at once, made on first use.
func (g *Guard) turns() chan struct{} {
	g.once.Do(func() {
		n := g.Opts.Concurrency
		if n <= 0 {
			n = defaultConcurrency
		}
		g.slots = make(chan struct{}, n)
	})
	return g.slots
}

// inspector is what a prediction reads with: the Reads kept ready (the
// content as the informers have it now, the rest at most a Refresh old),
// else a fresh inspector; and which.
func (g *Guard) inspector() (*inspect.Inspector, ReadsFrom) {
	if in := g.Reads.Inspector(); in != nil {
		return in, ReadsInformers
	}
	return inspect.New(g.Clients, inspect.Config{Compact: true}), ReadsLive
}

// predict reads what the deletion would meet with in.
func (g *Guard) predict(ctx context.Context, target Target, raw []byte, in *inspect.Inspector, reads ReadsFrom) ([]Finding, error) {
	if reads == ReadsInformers {
		// Kept reads go stale unseen when the API server cannot be
		// reached: one request proves it answers, else the guard fails
		// open as a fresh read would.
		if _, err := kube.ServerVersion(ctx, g.Clients.Discovery); err != nil {
			return nil, err
		}
	}
	switch target {
	case TargetNamespace:
		ns := &v1.Namespace{}
		if err := json.Unmarshal(raw, ns); err != nil {
			return nil, fmt.Errorf("reading the namespace: %w", err)
		}
		opts := g.Opts.Inspect
		opts.IfDeleted = true
		r, err := in.Explain(ctx, ns, opts)
		if err != nil {
			return nil, err
		}
		return Classify(r.Blocking()), nil
	default:
		crd, version, err := crdOf(raw)
		if err != nil {
			return nil, err
		}
		obs, err := in.ObserveCRDDeletion(ctx, crd, version)
		if err != nil {
			return nil, err
		}
		return Classify(diagnose.PredictCRDDeletion(obs)), nil
	}
}

// targetOf says whether the request is one the guard judges.
func targetOf(req *admissionv1.AdmissionRequest) (Target, bool) {
	if req.Operation != admissionv1.Delete || req.SubResource != "" {
		return "", false
	}
	switch {
	case req.Resource.Group == "" && req.Resource.Resource == "namespaces":
		return TargetNamespace, true
	case req.Resource.Group == "apiextensions.k8s.io" && req.Resource.Resource == "customresourcedefinitions":
		return TargetCRD, true
	}
	return "", false
}

// decodeOld reads the metadata of the object being deleted.
func decodeOld(req *admissionv1.AdmissionRequest) (metav1.ObjectMeta, error) {
	var obj struct {
		metav1.ObjectMeta `json:"metadata"`
	}
	if len(req.OldObject.Raw) == 0 {
		return obj.ObjectMeta, errors.New("the API server sent no oldObject to judge")
	}
	if err := json.Unmarshal(req.OldObject.Raw, &obj); err != nil {
		return obj.ObjectMeta, fmt.Errorf("reading the object being deleted: %w", err)
	}
	return obj.ObjectMeta, nil
}
