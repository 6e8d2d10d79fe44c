package purge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

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

// UsageError is bad input found only by reading the cluster (a webhook
// configuration that does not exist); nothing was changed.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// resolveBypass finds each configuration --bypass-webhook names and what it
// catches of purge's writes in the namespace. A name that is no
// configuration, or one that catches nothing there, is a usage error.
func (r *run) resolveBypass(ctx context.Context, obs diagnose.Observation) error {
	for _, name := range r.Opts.Escalations.BypassWebhooks {
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
				return &UsageError{fmt.Sprintf("--bypass-webhook=%s: %s %s catches nothing purge sends in namespace %s; drop it", name, strings.ToLower(k.kind), name, r.Opts.Namespace)}
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
	if err == nil {
		return false
	}
	for _, b := range r.report.Bypassed {
		if b.Status != BypassPlanned {
			continue
		}
		for _, wh := range b.Webhooks {
			if strings.Contains(err.Error(), fmt.Sprintf("failed calling webhook %q", wh)) || strings.Contains(err.Error(), fmt.Sprintf("admission webhook %q denied", wh)) {
				return true
			}
		}
	}
	return false
}

// applyBypass saves each named configuration, then excludes the namespace
// from its webhooks. It returns the restore to run when the run ends,
// whatever ends it.
func (r *run) applyBypass(ctx context.Context) (func(), error) {
	var applied []int
	restore := func() {
		// The run's context may be cancelled (Ctrl-C, SIGTERM, --timeout):
		// the restore gets its own.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for _, i := range applied {
			r.restoreBypass(ctx, &r.report.Bypassed[i], BypassRestored)
		}
	}
	for i := range r.report.Bypassed {
		b := &r.report.Bypassed[i]
		if b.Status != BypassPlanned {
			continue // a leftover, already restored
		}
		gvr := gvrOfKind(b.Kind)
		cfg, err := r.Clients.Dynamic.Resource(gvr).Get(ctx, b.Name, metav1.GetOptions{})
		if err == nil {
			var path string
			if path, err = r.bk.SaveCluster(gvr, cfg); err == nil {
				b.RestoreCommand = "kubectl replace -f " + path
				err = r.patchConfig(ctx, gvr, b.Name, func(c *unstructured.Unstructured) error { return excludeNamespace(c, r.Opts.Namespace) })
			}
		}
		if err != nil {
			b.Status, b.Error = BypassFailed, err.Error()
			restore()
			return func() {}, fmt.Errorf("excluding namespace %s from %s %s: %w", r.Opts.Namespace, strings.ToLower(b.Kind), b.Name, err)
		}
		applied = append(applied, i)
		r.change("excluded namespace %s from the webhooks of %s %s for this run (saved first)", r.Opts.Namespace, strings.ToLower(b.Kind), b.Name)
	}
	return restore, nil
}

// restoreBypass undoes this namespace's exclusion: it removes exactly the
// expressions and the annotation a bypass added, so a change someone else
// made meanwhile is kept.
func (r *run) restoreBypass(ctx context.Context, b *Bypass, done BypassStatus) {
	err := r.patchConfig(ctx, gvrOfKind(b.Kind), b.Name, func(c *unstructured.Unstructured) error { return includeNamespace(c, r.Opts.Namespace) })
	if err != nil && !apierrors.IsNotFound(err) {
		b.Status, b.Error = BypassRestoreFailed, err.Error()
		msg := fmt.Sprintf("%s %s still excludes namespace %s: restore it with: %s", strings.ToLower(b.Kind), b.Name, r.Opts.Namespace, b.RestoreCommand)
		if b.RestoreCommand == "" {
			msg = fmt.Sprintf("%s %s still excludes namespace %s: re-run purge --force on it, which restores it first", strings.ToLower(b.Kind), b.Name, r.Opts.Namespace)
		}
		r.report.Errors = appendNew(r.report.Errors, msg)
		return
	}
	b.Status = done
	r.change("restored %s %s (namespace %s no longer excluded)", strings.ToLower(b.Kind), b.Name, r.Opts.Namespace)
}

// restoreLeftovers undoes the bypasses of this namespace an earlier run
// left behind (it was killed before restoring), before anything else.
func (r *run) restoreLeftovers(ctx context.Context) error {
	// Both kinds are listed at once: over a slow link each round trip counts.
	lists := make([]*unstructured.UnstructuredList, len(webhookKinds))
	errs := make([]error, len(webhookKinds))
	var wg sync.WaitGroup
	for i, k := range webhookKinds {
		wg.Go(func() { lists[i], errs[i] = r.Clients.Dynamic.Resource(k.gvr).List(ctx, metav1.ListOptions{}) })
	}
	wg.Wait()
	for i, k := range webhookKinds {
		if err := errs[i]; err != nil {
			if apierrors.IsForbidden(err) && len(r.Opts.Escalations.BypassWebhooks) == 0 {
				continue // without the escalation, no run of this user could have left one
			}
			return fmt.Errorf("looking for webhook configurations a killed run left bypassed: %w", err)
		}
		for _, cfg := range lists[i].Items {
			if _, ok := cfg.GetAnnotations()[bypassAnnotation+r.Opts.Namespace]; !ok {
				continue
			}
			b := Bypass{Kind: k.kind, Name: cfg.GetName(), Webhooks: webhookNames(&cfg)}
			r.restoreBypass(ctx, &b, BypassLeftover)
			if b.Status == BypassRestoreFailed {
				return fmt.Errorf("restoring %s %s, left bypassed by an earlier run: %s", strings.ToLower(k.kind), b.Name, b.Error)
			}
			r.report.Warnings = appendNew(r.report.Warnings, fmt.Sprintf("%s %s still excluded namespace %s after an earlier run was killed: restored first", strings.ToLower(k.kind), b.Name, r.Opts.Namespace))
			r.report.Bypassed = append(r.report.Bypassed, b)
		}
	}
	return nil
}

// patchConfig changes a configuration's webhooks and annotations with a
// merge patch guarded by the resourceVersion it read, retried after a
// concurrent change.
func (r *run) patchConfig(ctx context.Context, gvr schema.GroupVersionResource, name string, change func(*unstructured.Unstructured) error) error {
	for range conflictRetries {
		cfg, err := r.Clients.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		before := cfg.GetAnnotations()
		if err := change(cfg); err != nil {
			if errors.Is(err, errUnchanged) {
				return nil
			}
			return err
		}
		// A merge patch removes an annotation by setting it to null.
		annotations := map[string]any{}
		for k := range before {
			annotations[k] = nil
		}
		for k, v := range cfg.GetAnnotations() {
			annotations[k] = v
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": cfg.GetResourceVersion(), "annotations": annotations},
			"webhooks": cfg.Object["webhooks"],
		})
		if err != nil {
			return err
		}
		_, err = r.Clients.Dynamic.Resource(gvr).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("%s kept changing (%d conflicts)", name, conflictRetries)
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

// noteLeftovers warns, in a plan, of the bypasses of this namespace an
// earlier run left behind: a force run restores them first.
func (r *run) noteLeftovers(ctx context.Context) {
	for _, k := range webhookKinds {
		list, err := r.Clients.Dynamic.Resource(k.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, cfg := range list.Items {
			if _, ok := cfg.GetAnnotations()[bypassAnnotation+r.Opts.Namespace]; ok {
				r.report.Warnings = appendNew(r.report.Warnings, fmt.Sprintf("%s %s still excludes namespace %s: an earlier run was killed before restoring it; purge --force restores it first",
					strings.ToLower(k.kind), cfg.GetName(), r.Opts.Namespace))
			}
		}
	}
}

// unlessBypassed turns a server dry run's refusal by a webhook of a
// bypassed configuration into a warning: during the run that webhook
// would not be called.
func (r *run) unlessBypassed(err error, what string) error {
	if !r.bypassedError(err) {
		return err
	}
	r.report.Warnings = appendNew(r.report.Warnings, fmt.Sprintf("%s: refused now by a webhook --bypass-webhook excludes the namespace from during the run (%v)", what, err))
	return nil
}

// bypassFilter passes a server dry run's content requests, answering the
// refusals of bypassed webhooks as a run with the bypass would be.
type bypassFilter struct {
	deletion.Operations
	r *run
}

func (f *bypassFilter) DeleteCollection(ctx context.Context, gvr schema.GroupVersionResource, ns string) error {
	return f.r.unlessBypassed(f.Operations.DeleteCollection(ctx, gvr, ns), "deletecollection "+deletion.ResourceName(gvr))
}

func (f *bypassFilter) Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	return f.r.unlessBypassed(f.Operations.Delete(ctx, gvr, ns, name), "delete "+deletion.ResourceName(gvr)+"/"+name)
}

// bypassFilterNs does the same for the finalize call.
type bypassFilterNs struct {
	deletion.NamespaceClient
	r *run
}

func (f *bypassFilterNs) Finalize(ctx context.Context, ns *v1.Namespace, opts metav1.UpdateOptions) (*v1.Namespace, error) {
	out, err := f.NamespaceClient.Finalize(ctx, ns, opts)
	if err = f.r.unlessBypassed(err, "finalize"); err == nil && out == nil {
		out = ns
	}
	return out, err
}
