package purge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/compat"

	"golang.org/x/sync/errgroup"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// A bypass excludes one namespace from a webhook configuration for the
// duration of a run: each of its webhooks gets the namespaceSelector
// expression kubernetes.io/metadata.name NotIn [NAMESPACE], the narrowest
// change (every other namespace stays protected), and the configuration an
// annotation that says so, so a run killed before it restored the
// configuration is found and undone by the next one.

// --bypass-webhook names the configurations bypassed for the run.
var bypassWebhookEscalation = Escalation{
	Flag: diagnose.FlagBypassWebhook, Value: "NAME", Example: "demo-validator",
	Help:    "Escalation: for the run only, exclude this namespace from the webhooks of this validating or mutating webhook configuration (repeatable); restored when the run ends",
	Leak:    "while the run lasts, the webhooks do not see what purge deletes or changes in the namespace (their policy or bookkeeping misses it)",
	Janitor: true,
	check: func(names []string) error {
		for _, name := range names {
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				return fmt.Errorf("invalid %s %q: %s", diagnose.FlagBypassWebhook, name, errs[0])
			}
		}
		return nil
	},
	consent: func(names []string) []string {
		return []string{fmt.Sprintf("and, until it ends, exclude the namespace from webhook configuration(s) %s", strings.Join(names, ", "))}
	},
	answers: func(names []string, a diagnose.Action) bool {
		return a.Flag == diagnose.FlagBypassWebhook && slices.Contains(names, a.Value)
	},
	complete:  webhookValues,
	start:     func(names []string) action { return &bypasser{names: names} },
	snapshot:  true,
	leftovers: undoBypasses,
	changes: map[ChangeKind]func(Change, string) string{
		ChangeExcludedFromWebhook: func(c Change, namespace string) string {
			return fmt.Sprintf("excluded namespace %s from the webhooks of %s %s for this run (saved first)", namespace, strings.ToLower(c.Resource), c.Name)
		},
		ChangeRestoredWebhook: func(c Change, namespace string) string {
			return fmt.Sprintf("restored %s %s (namespace %s no longer excluded)", strings.ToLower(c.Resource), c.Name, namespace)
		},
	},
}

// Changes of --bypass-webhook.
const (
	ChangeExcludedFromWebhook ChangeKind = "ExcludedFromWebhook" // the bypass
	ChangeRestoredWebhook     ChangeKind = "RestoredWebhook"     // the bypass undone
)

// RowBypass: a webhook configuration this namespace is (or would be)
// excluded from during the run.
const RowBypass RowKind = "Bypass"

// Bypass is what a bypass's row knows beyond the others.
type Bypass struct {
	// Kind is ValidatingWebhookConfiguration or MutatingWebhookConfiguration.
	Kind     string   `json:"kind"`
	Webhooks []string `json:"webhooks"`
	// Catches names what of purge's writes it catches in the namespace.
	Catches []string `json:"catches,omitempty"`
	// RestorePath is the configuration as it was, saved in the backup
	// before the run changed it: `kubectl replace -f` it to restore by hand.
	RestorePath    string `json:"-"`
	RestoreCommand string `json:"restoreCommand,omitempty"`
}

// Of is its row kind.
func (Bypass) Of() RowKind { return RowBypass }

func bypassOf(r Row) Bypass {
	b, _ := r.Extra.(Bypass)
	return b
}

// Why of a bypass row.
const (
	BypassRestoreFailed = "RestoreFailed"    // excluded, and not restored: see RestorePath
	BypassLeftover      = "LeftoverRestored" // a killed run's, restored first
)

var bypassShape = Shape{
	Kind: RowBypass, Section: "bypassed", Key: "configurations", Short: "BYPASSED",
	Title: "Webhooks bypassed for this namespace during the run (escalation)",
	Columns: []Column{
		{"CONFIGURATION", func(r Row) []string { return []string{strings.ToLower(bypassOf(r).Kind) + "/" + r.Name} }},
		{"CATCHES", func(r Row) []string { return bypassOf(r).Catches }},
	},
	Counted: "%d webhook configuration(s) bypassed", Done: "Restored",
	Extra: Bypass{}, Changes: []ChangeKind{ChangeExcludedFromWebhook, ChangeRestoredWebhook},
	Result: func(r Row) string {
		switch {
		case r.Why == BypassLeftover:
			return "left excluding the namespace by a killed run: restored first"
		case r.Why == BypassRestoreFailed:
			return "NOT restored: " + bypassOf(r).RestoreCommand
		case r.Status == RowPlanned:
			return "would exclude the namespace during the run, then restore"
		case r.Status == RowDone:
			return "excluded during the run, restored"
		case r.Status == RowFailed:
			return "failed: " + r.Error
		case r.Status == RowGone:
			return "deleted by someone else during the run: nothing to restore"
		}
		return ""
	},
	Fingerprint: func(r Row) string {
		return fmt.Sprintf("kind=%q webhooks=%q", bypassOf(r).Kind, sortedCopy(bypassOf(r).Webhooks))
	},
}

// bypassRow is a configuration of kind and name to bypass.
func bypassRow(kind, name string, b Bypass) Row {
	b.Kind = kind
	return Row{Kind: RowBypass, Resource: gvrOfKind(kind).Resource, Name: name, Status: RowPlanned, Extra: b}
}

// RestoreCommand restores a bypassed webhook configuration by hand from
// its saved copy.
func RestoreCommand(path string) string {
	if path == "" {
		return ""
	}
	return "kubectl replace -f " + path
}

// webhookValues are the webhook configurations whose webhooks a purge of
// the namespace would meet, with the writes they catch.
func webhookValues(obs diagnose.Observation) []Value {
	seen := map[string]bool{}
	var out []Value
	for _, wh := range obs.Webhooks {
		if seen[wh.Configuration] {
			continue
		}
		seen[wh.Configuration] = true
		caught := diagnose.WebhookCatches(obs, wh.Configuration)
		if len(caught) == 0 {
			continue
		}
		what := strings.Join(caught[:min(len(caught), 3)], ", ")
		if len(caught) > 3 {
			what += fmt.Sprintf(" and %d more", len(caught)-3)
		}
		out = append(out, Value{wh.Configuration, strings.ToLower(wh.Type) + ": catches " + what})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
}

// bypasser bypasses the named configurations for the run.
type bypasser struct {
	names []string
	// found are the configurations the names resolved to.
	found []Row
}

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

// precheck: each name is a validating or mutating webhook configuration.
func (b *bypasser) precheck(ctx context.Context, a actor) error {
	for _, name := range b.names {
		if compat.StaticName(name) {
			// From 1.37 the suffix is the API server's own: no API object
			// carries it, so there is nothing to patch, on any version.
			return &UsageError{fmt.Sprintf("--bypass-webhook=%s: a name ending in %s is a webhook loaded from kube-apiserver's disk (its staticManifestsDir): it has no API object to bypass; whoever runs the control plane can change it", name, compat.StaticSuffix)}
		}
		if _, err := configurations(ctx, a, name); err != nil {
			return err
		}
	}
	return nil
}

// configured is a webhook configuration read, and its kind.
type configured struct {
	kind string
	cfg  *unstructured.Unstructured
}

// configurations reads the validating and the mutating webhook
// configuration of that name; neither is a usage error.
func configurations(ctx context.Context, a actor, name string) ([]configured, error) {
	var out []configured
	for _, k := range webhookKinds {
		cfg, err := a.read(ctx, k.gvr, "", name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", strings.ToLower(k.kind), name, err)
		}
		out = append(out, configured{k.kind, cfg})
	}
	if len(out) == 0 {
		return nil, &UsageError{fmt.Sprintf("--bypass-webhook=%s: no validating or mutating webhook configuration of that name (kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations)", name)}
	}
	return out, nil
}

// resolve finds each configuration named and what it catches of purge's
// writes in the namespace. A name that is no configuration, or one that
// catches nothing there, is a usage error.
func (b *bypasser) resolve(ctx context.Context, a actor, s scope) error {
	b.found = nil
	for _, name := range b.names {
		found, err := configurations(ctx, a, name)
		if err != nil {
			return err
		}
		for _, c := range found {
			by := bypassRow(c.kind, name, Bypass{Webhooks: webhookNames(c.cfg), Catches: diagnose.WebhookCatches(*s.obs, name)})
			if len(bypassOf(by).Catches) == 0 {
				return &UsageError{fmt.Sprintf("--bypass-webhook=%s: %s %s catches nothing purge sends in namespace %s; drop it", name, strings.ToLower(c.kind), name, a.namespace())}
			}
			b.found = append(b.found, by)
			a.record(func(r *Report) { r.Rows = append(r.Rows, by) })
		}
	}
	return nil
}

// needs: reading each configuration found and patching it.
func (b *bypasser) needs(scope) []access.Permission {
	var out []access.Permission
	for _, by := range b.found {
		gvr := gvrOfKind(bypassOf(by).Kind)
		out = append(out, access.Permission{Verb: "list", Group: gvr.Group, Resource: gvr.Resource},
			access.Permission{Verb: "get", Group: gvr.Group, Resource: gvr.Resource, Name: by.Name},
			access.Permission{Verb: "patch", Group: gvr.Group, Resource: gvr.Resource, Name: by.Name})
	}
	return out
}

// spares: the configurations the run bypasses.
func (b *bypasser) spares() map[string]bool {
	out := map[string]bool{}
	for _, by := range b.found {
		out[by.Name] = true
	}
	return out
}

// spare turns a server dry run's refusal by a webhook of a bypassed
// configuration into a warning: a dry run cannot bypass (that would change
// the configuration), and during the run that webhook is not called.
func (b *bypasser) spare(a actor, err error, what string) error {
	by := apierror.Classify(err).Webhook // set only for a webhook's failure, denial or dry-run refusal
	if by == "" {
		return err
	}
	var rows []Row
	a.record(func(r *Report) { rows = r.RowsOf(RowBypass) })
	if !slices.ContainsFunc(rows, func(r Row) bool { return r.Status == RowPlanned && slices.Contains(bypassOf(r).Webhooks, by) }) {
		return err
	}
	a.warn(Warning{Kind: WarnBypassedRefusal, Request: what, Text: err.Error()})
	return nil
}

// before excludes the namespace from the webhooks of each configuration
// found, each saved first. The undo restores them when the run ends,
// whatever ends it.
func (b *bypasser) before(ctx context.Context, a actor, _ scope) (func(), error) {
	type bypassed struct {
		row  Row
		sent Sent
	}
	var applied []bypassed
	undo := func() {
		// The run's context may be cancelled (Ctrl-C, SIGTERM, --timeout):
		// the restore gets its own.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for _, by := range applied {
			b.restore(ctx, a, by.row, by.sent)
		}
	}
	var found []Row
	a.record(func(r *Report) { found = r.RowsOf(RowBypass) })
	for _, by := range found {
		if by.Status != RowPlanned {
			continue // a leftover, already restored
		}
		kind := bypassOf(by).Kind
		sent, err := patchConfig(ctx, a.read, a.send, gvrOfKind(kind), by.Name, func(c *unstructured.Unstructured) error { return excludeNamespace(c, a.namespace()) },
			&Change{Kind: ChangeExcludedFromWebhook, Resource: kind, Name: by.Name})
		if err != nil {
			updateBypass(a, by, func(row *Row, _ *Bypass) { row.Status, row.Error = RowFailed, err.Error() })
			undo()
			return func() {}, fmt.Errorf("excluding namespace %s from %s %s: %w", a.namespace(), strings.ToLower(kind), by.Name, err)
		}
		updateBypass(a, by, func(_ *Row, b *Bypass) { b.RestorePath, b.RestoreCommand = sent.Saved, RestoreCommand(sent.Saved) })
		applied = append(applied, bypassed{by, sent})
	}
	return undo, nil
}

// updateBypass changes the report's row of the configuration of by.
func updateBypass(a actor, by Row, fn func(*Row, *Bypass)) {
	a.record(func(r *Report) {
		for i := range r.Rows {
			row := &r.Rows[i]
			if row.Kind == RowBypass && row.Resource == by.Resource && row.Name == by.Name {
				extra := bypassOf(*row)
				fn(row, &extra)
				row.Extra = extra
			}
		}
	})
}

// restore undoes this namespace's exclusion from the configuration of by,
// excluded as applied says (made, or played).
func (b *bypasser) restore(ctx context.Context, a actor, by Row, applied Sent) {
	kind, path := bypassOf(by).Kind, applied.Saved
	_, err := patchConfig(ctx, a.read, a.send, gvrOfKind(kind), by.Name, func(c *unstructured.Unstructured) error { return includeNamespace(c, a.namespace()) },
		&Change{Kind: ChangeRestoredWebhook, Resource: kind, Name: by.Name})
	if err != nil && !apierrors.IsNotFound(err) {
		updateBypass(a, by, func(row *Row, _ *Bypass) {
			row.Status, row.Why, row.Error = RowFailed, BypassRestoreFailed, err.Error()
		})
		a.fail(ctx, gvrOfKind(kind), Failure{Verb: "restore", Resource: kind, Name: by.Name, Path: path}, err)
		return
	}
	status := pick(applied, RowDone, RowPlanned)
	if apierrors.IsNotFound(err) {
		status = RowGone
	}
	updateBypass(a, by, func(row *Row, _ *Bypass) { row.Status = status })
}

// patchConfig changes a configuration's webhooks and annotations with a
// merge patch guarded by the resourceVersion it read (saved first),
// retried after a concurrent change.
func patchConfig(ctx context.Context, read func(context.Context, schema.GroupVersionResource, string, string) (*unstructured.Unstructured, error),
	send func(context.Context, Write) (Sent, error), gvr schema.GroupVersionResource, name string, change func(*unstructured.Unstructured) error, c *Change) (Sent, error) {
	var sent Sent
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := read(ctx, gvr, "", name)
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
		sent, err = send(ctx, Write{Verb: "patch", Resource: gvr, Name: name, Patch: patch, Save: cfg, Change: c})
		return err
	})
	if errors.Is(err, errUnchanged) {
		return sent, nil
	}
	return sent, err
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

// undoBypasses undoes the bypasses of this namespace an earlier run left
// behind (it was killed before restoring), before anything else; a plan
// says it would.
func undoBypasses(ctx context.Context, t tidying) error {
	lists, errs := webhookConfigurations(ctx, t)
	for i, err := range errs {
		switch {
		case err == nil:
		case t.plan:
			lists[i] = nil // a plan only notes them
		case apierrors.IsForbidden(err) && !t.asked:
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
			if _, ok := cfg.GetAnnotations()[bypassAnnotation+t.ns]; ok {
				if err := undoBypass(ctx, t, k.kind, &cfg); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// undoBypass restores one configuration a killed run left bypassed (a
// plan only says so). It runs before the run has a writer or a backup: it
// removes only what purge itself added.
func undoBypass(ctx context.Context, t tidying, kind string, cfg *unstructured.Unstructured) error {
	if t.plan {
		t.l.warn(Warning{Kind: WarnBypassLeftover, Resource: kind, Name: cfg.GetName()})
		return nil
	}
	by := bypassRow(kind, cfg.GetName(), Bypass{Webhooks: webhookNames(cfg)})
	by.Status, by.Why = RowDone, BypassLeftover
	read := func(ctx context.Context, gvr schema.GroupVersionResource, _, name string) (*unstructured.Unstructured, error) {
		return t.clients.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	}
	send := func(ctx context.Context, wr Write) (Sent, error) {
		if err := (sender{clients: t.clients}).send(ctx, wr); err != nil {
			return Sent{}, err
		}
		t.l.changed(*wr.Change)
		return Sent{ForReal: true}, nil
	}
	_, err := patchConfig(ctx, read, send, gvrOfKind(kind), by.Name, func(c *unstructured.Unstructured) error { return includeNamespace(c, t.ns) },
		&Change{Kind: ChangeRestoredWebhook, Resource: kind, Name: by.Name})
	if err != nil && !apierrors.IsNotFound(err) {
		t.l.fail(Failure{Verb: "restore", Resource: kind, Name: by.Name, Error: err.Error()})
		return fmt.Errorf("restoring %s %s, left bypassed by an earlier run: %s", strings.ToLower(kind), by.Name, err)
	}
	t.l.warn(Warning{Kind: WarnBypassLeftover, Resource: kind, Name: by.Name, Restored: true})
	t.l.update(func(rep *Report) { rep.Rows = append(rep.Rows, by) })
	return nil
}

// configurationLists are both kinds of webhook configurations, as read.
type configurationLists struct {
	lists []*unstructured.UnstructuredList
	errs  []error
}

// webhookConfigurations lists both kinds of webhook configurations, at
// once (over a slow link each round trip counts). The namespaces purged
// together share one read: what a killed earlier run left is there
// before any of them starts, and each of them looks only for its own.
func webhookConfigurations(ctx context.Context, t tidying) ([]*unstructured.UnstructuredList, []error) {
	read := func() any {
		lists := make([]*unstructured.UnstructuredList, len(webhookKinds))
		errs := make([]error, len(webhookKinds))
		var g errgroup.Group
		for i, k := range webhookKinds {
			g.Go(func() error {
				lists[i], errs[i] = t.clients.Dynamic.Resource(k.gvr).List(ctx, metav1.ListOptions{})
				return nil
			})
		}
		_ = g.Wait()
		return configurationLists{lists, errs}
	}
	got := t.shared.get("webhook configurations", read).(configurationLists)
	return slices.Clone(got.lists), slices.Clone(got.errs)
}
