package purge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// A bypass excludes one namespace from a webhook configuration for the
// duration of a run: each of its webhooks gets the namespaceSelector
// expression kubernetes.io/metadata.name NotIn [NAMESPACE], the narrowest
// change (every other namespace stays protected), and the configuration an
// annotation that says so, so a run killed before it restored the
// configuration is found and undone by the next one.

// bypassAnnotation marks a configuration bypassed for one namespace.
const bypassAnnotation = "bypass.ns-doctor.dev/"

// namespaceNameLabel is set by the API server on every namespace.
const namespaceNameLabel = "kubernetes.io/metadata.name"

var webhookKinds = []struct {
	kind string
	gvr  schema.GroupVersionResource
}{
	{"ValidatingWebhookConfiguration", schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}},
	{"MutatingWebhookConfiguration", schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}},
}

func gvrOfKind(kind string) schema.GroupVersionResource {
	for _, k := range webhookKinds {
		if k.kind == kind {
			return k.gvr
		}
	}
	return schema.GroupVersionResource{}
}

// resolveBypass finds each configuration --bypass-webhook names and what it
// catches of purge's writes in the namespace. A name that is no
// configuration, or one that catches nothing there, is a usage error.
func (r *run) resolveBypass(ctx context.Context, obs diagnose.Observation) error {
	for _, name := range r.Opts.BypassWebhook {
		found := false
		for _, k := range webhookKinds {
			cfg, err := r.Clients.Dynamic.Resource(k.gvr).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("reading %s %s: %w", strings.ToLower(k.kind), name, err)
			}
			found = true
			b := Bypass{Kind: k.kind, Name: name, Webhooks: webhookNames(cfg), Catches: diagnose.WebhookCatches(obs, name), Status: BypassPlanned}
			if len(b.Catches) == 0 {
				return &UsageError{fmt.Sprintf("--bypass-webhook=%s: %s %s catches nothing purge sends in namespace %s; drop it", name, strings.ToLower(k.kind), name, r.ns())}
			}
			r.report.Bypassed = append(r.report.Bypassed, b)
		}
		if !found {
			return &UsageError{fmt.Sprintf("--bypass-webhook=%s: no validating or mutating webhook configuration of that name (kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations)", name)}
		}
	}
	return nil
}

// bypassedNames are the configurations the run bypasses.
func (r *run) bypassedNames() map[string]bool {
	out := map[string]bool{}
	for _, b := range r.report.Bypassed {
		if b.Status == BypassPlanned {
			out[b.Name] = true
		}
	}
	return out
}

// bypassedError tells whether err is a rejection by a webhook of a
// bypassed configuration: a server dry run cannot bypass (that would
// change the configuration), so it reports those as bypassed instead.
func (r *run) bypassedError(err error) bool {
	by := apierror.Classify(err).Webhook // set only for a webhook's failure, denial or dry-run refusal
	if by == "" {
		return false
	}
	for _, b := range r.report.Bypassed {
		if b.Status == BypassPlanned && slices.Contains(b.Webhooks, by) {
			return true
		}
	}
	return false
}

// applyBypass excludes the namespace from the webhooks of each named
// configuration, each saved first. It returns the restore to run when the
// run ends, whatever ends it.
func (r *run) applyBypass(ctx context.Context) (func(), error) {
	var applied []int
	restore := func() {
		// The run's context may be cancelled (Ctrl-C, SIGTERM, --timeout):
		// the restore gets its own.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for _, i := range applied {
			r.restoreBypass(ctx, &r.report.Bypassed[i], done(r, BypassRestored, BypassPlanned))
		}
	}
	for i := range r.report.Bypassed {
		b := &r.report.Bypassed[i]
		if b.Status != BypassPlanned {
			continue // a leftover, already restored
		}
		saved, err := r.patchConfig(ctx, gvrOfKind(b.Kind), b.Name, func(c *unstructured.Unstructured) error { return excludeNamespace(c, r.ns()) })
		if err != nil {
			b.Status, b.Error = BypassFailed, err.Error()
			restore()
			return func() {}, fmt.Errorf("excluding namespace %s from %s %s: %w", r.ns(), strings.ToLower(b.Kind), b.Name, err)
		}
		b.RestorePath = saved
		applied = append(applied, i)
		r.changed(Change{Kind: ChangeExcludedFromWebhook, Resource: b.Kind, Name: b.Name})
	}
	return restore, nil
}

// restoreBypass undoes this namespace's exclusion: it removes exactly the
// expressions and the annotation a bypass added, so a change someone else
// made meanwhile is kept.
func (r *run) restoreBypass(ctx context.Context, b *Bypass, status BypassStatus) {
	_, err := r.patchConfig(ctx, gvrOfKind(b.Kind), b.Name, func(c *unstructured.Unstructured) error { return includeNamespace(c, r.ns()) })
	if err != nil && !apierrors.IsNotFound(err) {
		b.Status, b.Error = BypassRestoreFailed, err.Error()
		r.fail(Failure{Verb: "restore", Resource: b.Kind, Name: b.Name, Error: err.Error(), Path: b.RestorePath})
		return
	}
	b.Status = status
	r.changed(Change{Kind: ChangeRestoredWebhook, Resource: b.Kind, Name: b.Name})
}

// leftovers undoes the bypasses of this namespace an earlier run left
// behind (it was killed before restoring), before anything else; a plan
// says it would.
func (r *run) leftovers(ctx context.Context) error {
	lists, errs := r.webhookConfigurations(ctx)
	for i, err := range errs {
		switch {
		case err == nil:
		case r.Opts.DryRun != DryRunNone:
			lists[i] = nil // a plan only notes them
		case apierrors.IsForbidden(err) && len(r.Opts.BypassWebhook) == 0:
			lists[i] = nil // without the escalation, no run of this user could have left one
		default:
			return fmt.Errorf("looking for webhook configurations a killed run left bypassed: %w", err)
		}
	}
	for i, k := range webhookKinds {
		if lists[i] == nil {
			continue
		}
		for _, cfg := range lists[i].Items {
			if _, ok := cfg.GetAnnotations()[bypassAnnotation+r.ns()]; ok {
				if err := r.leftover(ctx, k.kind, &cfg); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// leftover restores one configuration a killed run left bypassed (a plan
// only says so).
func (r *run) leftover(ctx context.Context, kind string, cfg *unstructured.Unstructured) error {
	if r.Opts.DryRun != DryRunNone {
		r.warn(Warning{Kind: WarnBypassLeftover, Resource: kind, Name: cfg.GetName()})
		return nil
	}
	b := Bypass{Kind: kind, Name: cfg.GetName(), Webhooks: webhookNames(cfg)}
	r.restoreBypass(ctx, &b, BypassLeftover)
	if b.Status == BypassRestoreFailed {
		return fmt.Errorf("restoring %s %s, left bypassed by an earlier run: %s", strings.ToLower(kind), b.Name, b.Error)
	}
	r.warn(Warning{Kind: WarnBypassLeftover, Resource: kind, Name: b.Name, Restored: true})
	r.report.Bypassed = append(r.report.Bypassed, b)
	return nil
}

// patchConfig changes a configuration's webhooks and annotations with a
// merge patch guarded by the resourceVersion it read (saved first),
// retried after a concurrent change. It returns where it was saved.
func (r *run) patchConfig(ctx context.Context, gvr schema.GroupVersionResource, name string, change func(*unstructured.Unstructured) error) (string, error) {
	saved := ""
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := r.readConfig(ctx, gvr, name)
		if err != nil {
			return err
		}
		after := cfg.DeepCopy()
		if err := change(after); err != nil {
			return err
		}
		patch, err := guardedPatch(cfg, after)
		if err != nil {
			return err
		}
		saved, err = r.sendConfig(ctx, Write{Verb: "patch", Resource: gvr, Name: name, Patch: patch, Save: cfg})
		return err
	})
	if errors.Is(err, errUnchanged) {
		return saved, nil
	}
	return saved, err
}

// readConfig and sendConfig read and patch a webhook configuration:
// through the writer once the run has one; before, while a force run
// restores a killed run's leftovers, directly: that removes only what
// purge itself added, and needs no backup.
func (r *run) readConfig(ctx context.Context, gvr schema.GroupVersionResource, name string) (*unstructured.Unstructured, error) {
	if r.w != nil {
		return r.w.read(ctx, gvr, "", name)
	}
	return r.Clients.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
}

func (r *run) sendConfig(ctx context.Context, wr Write) (string, error) {
	if r.w != nil {
		return r.w.send(ctx, wr)
	}
	return "", sender{clients: r.Clients}.send(ctx, wr)
}

var errUnchanged = errors.New("unchanged")

// excludeNamespace adds kubernetes.io/metadata.name NotIn [ns] to every
// webhook's namespaceSelector, and the annotation.
func excludeNamespace(cfg *unstructured.Unstructured, ns string) error {
	webhooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
	for i := range webhooks {
		wh, _ := webhooks[i].(map[string]any)
		sel, _, _ := unstructured.NestedMap(wh, "namespaceSelector")
		if sel == nil {
			sel = map[string]any{}
		}
		exprs, _, _ := unstructured.NestedSlice(sel, "matchExpressions")
		if slices.ContainsFunc(exprs, func(e any) bool { return isExclusion(e, ns) }) {
			continue
		}
		sel["matchExpressions"] = append(exprs, map[string]any{"key": namespaceNameLabel, "operator": "NotIn", "values": []any{ns}})
		wh["namespaceSelector"] = sel
	}
	if err := unstructured.SetNestedSlice(cfg.Object, webhooks, "webhooks"); err != nil {
		return err
	}
	annotations := cfg.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[bypassAnnotation+ns] = time.Now().UTC().Format(time.RFC3339)
	cfg.SetAnnotations(annotations)
	return nil
}

// includeNamespace removes what excludeNamespace added for ns.
func includeNamespace(cfg *unstructured.Unstructured, ns string) error {
	changed := false
	webhooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
	for i := range webhooks {
		wh, _ := webhooks[i].(map[string]any)
		sel, _, _ := unstructured.NestedMap(wh, "namespaceSelector")
		exprs, _, _ := unstructured.NestedSlice(sel, "matchExpressions")
		kept := slices.DeleteFunc(slices.Clone(exprs), func(e any) bool { return isExclusion(e, ns) })
		if len(kept) == len(exprs) {
			continue
		}
		changed = true
		if len(kept) == 0 {
			delete(sel, "matchExpressions")
		} else {
			sel["matchExpressions"] = kept
		}
		wh["namespaceSelector"] = sel
	}
	annotations := cfg.GetAnnotations()
	if _, ok := annotations[bypassAnnotation+ns]; ok {
		changed = true
		delete(annotations, bypassAnnotation+ns)
		cfg.SetAnnotations(annotations)
	}
	if !changed {
		return errUnchanged
	}
	return unstructured.SetNestedSlice(cfg.Object, webhooks, "webhooks")
}

// isExclusion tells whether a selector expression is the one a bypass adds.
func isExclusion(e any, ns string) bool {
	m, _ := e.(map[string]any)
	values, _ := m["values"].([]any)
	return m["key"] == namespaceNameLabel && m["operator"] == "NotIn" && len(values) == 1 && values[0] == ns
}

func webhookNames(cfg *unstructured.Unstructured) []string {
	var out []string
	webhooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
	for _, w := range webhooks {
		if m, ok := w.(map[string]any); ok {
			name, _ := m["name"].(string)
			out = append(out, name)
		}
	}
	return out
}

// unlessBypassed turns a server dry run's refusal by a webhook of a
// bypassed configuration into a warning: during the run that webhook
// would not be called.
func (r *run) unlessBypassed(err error, what string) error {
	if !r.bypassedError(err) {
		return err
	}
	r.warn(Warning{Kind: WarnBypassedRefusal, Request: what, Text: err.Error()})
	return nil
}

// bypassFilter passes a server dry run's content requests, answering the
// refusals of bypassed webhooks as a run with the bypass would be.
type bypassFilter struct {
	deletion.Operations
	filter func(err error, what string) error
}

func (f *bypassFilter) DeleteCollection(ctx context.Context, gvr schema.GroupVersionResource, ns string) error {
	return f.filter(f.Operations.DeleteCollection(ctx, gvr, ns), "deletecollection "+deletion.ResourceName(gvr))
}

func (f *bypassFilter) Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	return f.filter(f.Operations.Delete(ctx, gvr, ns, name), "delete "+deletion.ResourceName(gvr)+"/"+name)
}

// bypassFilterNs does the same for the finalize call.
type bypassFilterNs struct {
	deletion.NamespaceClient
	filter func(err error, what string) error
}

func (f *bypassFilterNs) Finalize(ctx context.Context, ns *v1.Namespace, opts metav1.UpdateOptions) (*v1.Namespace, error) {
	out, err := f.NamespaceClient.Finalize(ctx, ns, opts)
	if err = f.filter(err, "finalize"); err == nil && out == nil {
		out = ns
	}
	return out, err
}

// webhookConfigurations lists both kinds of webhook configurations, at
// once (over a slow link each round trip counts). The namespaces purged
// together share one read: what a killed earlier run left is there
// before any of them starts, and each of them looks only for its own.
func (r *run) webhookConfigurations(ctx context.Context) ([]*unstructured.UnstructuredList, []error) {
	read := func() ([]*unstructured.UnstructuredList, []error) {
		lists := make([]*unstructured.UnstructuredList, len(webhookKinds))
		errs := make([]error, len(webhookKinds))
		var g errgroup.Group
		for i, k := range webhookKinds {
			g.Go(func() error {
				lists[i], errs[i] = r.Clients.Dynamic.Resource(k.gvr).List(ctx, metav1.ListOptions{})
				return nil
			})
		}
		_ = g.Wait()
		return lists, errs
	}
	if r.webhooks == nil {
		return read()
	}
	r.webhooks.once.Do(func() { r.webhooks.lists, r.webhooks.errs = read() })
	return slices.Clone(r.webhooks.lists), slices.Clone(r.webhooks.errs)
}

// sharedWebhooks is the one read of webhook configurations the runs of
// RunMany share.
type sharedWebhooks struct {
	once  sync.Once
	lists []*unstructured.UnstructuredList
	errs  []error
}
