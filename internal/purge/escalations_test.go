package purge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

// The namespace's own metadata.finalizers: without the escalation a plan
// ends there and a force run stops at once, naming the flag; with it, the
// patch goes (planned, or sent) and the namespace is gone.
func TestNamespaceMetadataFinalizers(t *testing.T) {
	for _, mode := range []DryRun{DryRunClient, DryRunNone} {
		for _, escalate := range []bool{false, true} {
			c := kubetest.New()
			c.AddNamespace("ns", time.Minute)
			c.SetNamespaceFinalizers("ns", "example.com/meta")
			r, err := purger(c, Options{DryRun: mode, BackupDir: t.TempDir(), Escalations: askedIf(escalate, diagnose.FlagRemoveNamespaceFinalizers)}).Run(context.Background())
			if err != nil {
				t.Fatalf("mode %s, escalate %v: %v", mode, escalate, err)
			}
			switch {
			case !escalate && (r.Finalize.Cause != FinalizeNamespaceHeld || !holds(r, diagnose.BlockerNamespaceFinalizer, diagnose.FlagRemoveNamespaceFinalizers)):
				t.Errorf("mode %s, no escalation: finalize %+v, holding %+v", mode, r.Finalize, r.Holding)
			case !escalate && mode == DryRunNone && (r.Stop == nil || r.Stop.Reason != StopBlocked):
				t.Errorf("force without the flag: stop %+v", r.Stop)
			case escalate && mode == DryRunNone && (r.Outcome != OutcomeGone || c.Namespace("ns") != nil || r.Changes[len(r.Changes)-1].Kind != ChangeRemovedNamespaceFinalizers):
				t.Errorf("force with the flag: outcome %s, changes %+v", r.Outcome, r.Changes)
			case escalate && mode == DryRunClient && (len(writes(c)) != 0 || r.Steps[len(r.Steps)-1].Resource != "namespaces" || r.Steps[len(r.Steps)-1].Status != StepPlanned):
				t.Errorf("plan with the flag: writes %v, steps %+v", writes(c), r.Steps)
			}
		}
	}
}

// guarded is a namespace whose widget a fail-closed webhook (configuration
// "guard", its Service gone) catches.
func guarded(t *testing.T) (*kubetest.Cluster, *admissionregv1.ValidatingWebhookConfiguration) {
	t.Helper()
	c := kubetest.New()
	c.Serve(widgetsGVR, "Widget", kubetest.AllVerbs)
	c.AddNamespace("ns", time.Minute)
	c.Add(widgetsGVR, kubetest.Object("Widget", "ns", "w1"))
	cfg := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name: "deny.guard", FailurePolicy: ptr.To(admissionregv1.Fail),
			ClientConfig: admissionregv1.WebhookClientConfig{Service: &admissionregv1.ServiceReference{Namespace: "policy", Name: "gone"}},
			Rules: []admissionregv1.RuleWithOperations{{Operations: []admissionregv1.OperationType{admissionregv1.Delete},
				Rule: admissionregv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}},
		}},
	}
	return c, cfg
}

// --bypass-webhook: the configuration is saved, the namespace excluded for
// the run, and restored after it; a plan only says it would.
func TestBypassAppliedAndRestored(t *testing.T) {
	c, cfg := guarded(t)
	clients := c.Clients(cfg)
	plan, err := (&Purger{Clients: clients, Opts: Options{Escalations: Asked{diagnose.FlagBypassWebhook: {"guard"}}}}).Run(context.Background(), "ns")
	if bypassed := plan.RowsOf(RowBypass); err != nil || len(bypassed) != 1 || bypassed[0].Status != RowPlanned || len(writes(c)) != 0 {
		t.Fatalf("plan: %v, bypassed %+v, writes %v", err, bypassed, writes(c))
	}
	r, err := (&Purger{Clients: clients, Opts: Options{DryRun: DryRunNone, BackupDir: t.TempDir(), Timeout: time.Minute, Escalations: Asked{diagnose.FlagBypassWebhook: {"guard"}}}}).Run(context.Background(), "ns")
	if bypassed := r.RowsOf(RowBypass); err != nil || r.Outcome != OutcomeGone || len(bypassed) != 1 || bypassed[0].Status != RowDone || !strings.HasSuffix(bypassOf(bypassed[0]).RestorePath, ".yaml") {
		t.Fatalf("force: %v, outcome %s, bypassed %+v", err, r.Outcome, bypassed)
	}
	kinds := map[ChangeKind]bool{}
	for _, ch := range r.Changes {
		kinds[ch.Kind] = true
	}
	if !kinds[ChangeExcludedFromWebhook] || !kinds[ChangeRestoredWebhook] {
		t.Errorf("changes %+v", r.Changes)
	}
	live := c.Get(kubetest.ValidatingWebhooks, "", "guard")
	if _, left := live.GetAnnotations()[bypassAnnotation+"ns"]; left || strings.Contains(strings.Join(webhookNames(live), ","), "NotIn") {
		t.Errorf("not restored: %v", live.Object)
	}
	if len(c.RequestsMatching("full patch validatingwebhookconfigurations")) != 2 {
		t.Errorf("patches %v, want the exclusion and its undoing", c.RequestsMatching("full patch"))
	}
}

// A configuration a killed run left bypassed is restored by the next force
// run before anything else, and only noted by a plan.
func TestBypassLeftoverRestoredFirst(t *testing.T) {
	c, cfg := guarded(t)
	cfg.Annotations = map[string]string{bypassAnnotation + "ns": "2026-11-24T00:00:00Z"}
	cfg.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: namespaceNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ns"}}}}
	clients := c.Clients(cfg)
	plan, err := (&Purger{Clients: clients, Opts: Options{}}).Run(context.Background(), "ns")
	if err != nil || !hasWarning(plan, WarnBypassLeftover) || len(writes(c)) != 0 {
		t.Fatalf("plan: %v, warnings %+v, writes %v", err, plan.Warnings, writes(c))
	}
	r, err := (&Purger{Clients: clients, Opts: Options{DryRun: DryRunNone, BackupDir: t.TempDir(), Timeout: 2 * time.Second}}).Run(context.Background(), "ns")
	if bypassed := r.RowsOf(RowBypass); err != nil || len(bypassed) != 1 || bypassed[0].Status != RowDone || bypassed[0].Why != BypassLeftover {
		t.Fatalf("force: %v, bypassed %+v", err, bypassed)
	}
	if live := c.Get(kubetest.ValidatingWebhooks, "", "guard"); len(live.GetAnnotations()) != 0 {
		t.Errorf("leftover not restored: %v", live.GetAnnotations())
	}
}

// Several namespaces: a result each, in the order named, a backup folder
// each.
func TestRunMany(t *testing.T) {
	c := kubetest.New()
	for _, n := range []string{"a", "b", "c"} {
		c.AddNamespace(n, time.Minute)
		c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", n, "plain"))
	}
	dir := t.TempDir()
	p := &Purger{Clients: c.Clients(), Opts: Options{DryRun: DryRunNone, BackupDir: dir, Timeout: time.Minute}}
	results := p.RunMany(context.Background(), []string{"a", "b", "missing", "c"})
	for i, want := range []string{"a", "b", "missing", "c"} {
		res := results[i]
		switch {
		case want == "missing" && res.Err != ErrNotFound:
			t.Errorf("missing: %v", res.Err)
		case want != "missing" && (res.Err != nil || res.Report.Outcome != OutcomeGone || !strings.HasPrefix(res.Report.BackupDir, dir+"/"+want)):
			t.Errorf("%s: %v, %+v", want, res.Err, res.Report)
		}
	}
}

// Precheck refuses what an escalation's values name and cannot act on,
// before anyone is asked to confirm, reading only (no namespace, no write):
// an APIService that does not exist, is local or is Available, and a
// webhook configuration that does not exist.
func TestPrecheckRefusesBeforeTheConfirmation(t *testing.T) {
	c, cfg := guarded(t)
	c.Serve(apiServicesGVR, "APIService", kubetest.AllVerbs)
	apiService := func(name string, service bool, available string) {
		obj := kubetest.Object("APIService", "", name)
		if service {
			_ = unstructured.SetNestedMap(obj.Object, map[string]any{"namespace": "kube-system", "name": "metrics-server"}, "spec", "service")
		}
		_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"type": "Available", "status": available, "reason": "ServiceNotFound"}}, "status", "conditions")
		c.Add(apiServicesGVR, obj)
	}
	apiService("v1beta1.down.example.com", true, "False")
	apiService("v1beta1.up.example.com", true, "True")
	apiService("v1.local.example.com", false, "True")
	clients := c.Clients(cfg)
	for _, tc := range []struct {
		asked Asked
		want  string // empty: accepted
	}{
		{Asked{diagnose.FlagDeleteAPIService: {"v1beta1.down.example.com"}}, ""},
		{Asked{diagnose.FlagDeleteAPIService: {"v1beta1.nothing.example.com"}}, "no APIService of that name"},
		{Asked{diagnose.FlagDeleteAPIService: {"v1beta1.down.example.com", "v1beta1.up.example.com"}}, "is Available"},
		{Asked{diagnose.FlagDeleteAPIService: {"v1.local.example.com"}}, "served by kube-apiserver itself"},
		{Asked{diagnose.FlagBypassWebhook: {"guard"}}, ""},
		{Asked{diagnose.FlagBypassWebhook: {"guard", "nothing"}}, "--bypass-webhook=nothing: no validating or mutating webhook configuration"},
		{Asked{diagnose.FlagForceDeletePods: nil}, ""},
	} {
		before := len(c.Requests)
		err := (&Purger{Clients: clients, Opts: Options{DryRun: DryRunNone, Escalations: tc.asked}}).Precheck(context.Background())
		var usage *UsageError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v, want accepted", tc.asked, err)
		case tc.want != "" && (!errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want a UsageError saying %q", tc.asked, err, tc.want)
		}
		for _, r := range c.Requests[before:] {
			if !strings.HasPrefix(r, "get") && !strings.HasPrefix(r, "full get") {
				t.Errorf("%v: Precheck sent %s", tc.asked, r)
			}
		}
	}
}
