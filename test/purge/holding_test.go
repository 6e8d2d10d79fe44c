package purge_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// When purge cannot finish, its report ends with what holds the namespace
// and the exact next step; a refusal only an outside action clears ends a
// forced run at once (exit 5), not at --timeout; and running the printed
// step finishes the namespace. The control plane runs no namespace
// controller: purge alone acts.

// holdStep is the step the report gives past a hold of kind: the purge
// command line naming flag, or (flag "") the outside fix.
func holdStep(t *testing.T, rep printer.PurgeDocument, kind diagnose.BlockerKind, flag string) string {
	t.Helper()
	for _, h := range rep.Holding {
		if h.Kind != kind {
			continue
		}
		if flag == "" && h.Step == nil {
			return h.NextStep
		}
		if h.Step != nil && h.Step.Flag == flag && h.NextStep == h.Step.Step && strings.Contains(h.NextStep, flag) {
			return h.NextStep
		}
	}
	t.Fatalf("no %s hold with step %q; holding: %+v", kind, flag, rep.Holding)
	return ""
}

// followStep runs a printed purge command line, as a user pastes it (with
// --yes, since no terminal asks), and returns its report.
func followStep(t *testing.T, step string) printer.PurgeDocument {
	t.Helper()
	args := shellWords(t, strings.TrimPrefix(step, "kubectl "))
	rep, r := purgeJSON(t, append(args[2:], "--yes", "--backup-dir", t.TempDir(), "--timeout=2m")...)
	if r.Code != 0 {
		t.Fatalf("the printed step %q: exit %d\n%s", step, r.Code, r.Stderr)
	}
	return rep
}

// shellWords splits a command line the way a POSIX shell does for the
// single quotes ns-doctor prints.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	var word strings.Builder
	quoted, inWord := false, false
	for _, c := range line {
		switch {
		case c == '\'':
			quoted, inWord = !quoted, true
		case c == ' ' && !quoted:
			if inWord {
				out = append(out, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quotes in %q", line)
	}
	if inWord {
		out = append(out, word.String())
	}
	return out
}

// A fail-closed webhook whose Service is gone refuses the DELETE and the
// strip of a custom resource: the plan and the server dry run name the
// webhook and its configuration and end with --bypass-webhook; --force
// stops as soon as a pass changes nothing, without waiting out a long
// --timeout; the printed command finishes the namespace.
func TestWebhookRefusalNamesWhoAndStopsEarly(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("h%d.example.com", time.Now().UnixNano()%100000)
	gvr, err := cluster.EnsureCRD(ctx, group, "Guarded", "guardeds")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Guarded", name, "g1", "example.com/cleanup"))
	cfg := "policy-guard-" + name
	plugintest.Must(t, cluster.FailClosedWebhook(ctx, cfg, name, "policy", "guard", gvr))
	t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), cfg) })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	webhook := "deny." + cfg + ".example.com"
	who := "refused by webhook " + webhook + " of validatingwebhookconfiguration/" + cfg

	for _, mode := range []string{"--dry-run=client", "--dry-run=server"} {
		rep, r := purgeJSON(t, name, mode, "--remove-finalizers=example.com/*")
		if r.Code != 0 || rep.Finalize.Would {
			t.Fatalf("%s: exit %d, finalize %+v", mode, r.Code, rep.Finalize)
		}
		if errs := strings.Join(rep.Errors, "\n"); !strings.Contains(errs, who) {
			t.Errorf("%s: errors do not name the webhook and its configuration:\n%s", mode, errs)
		}
		// Typed too: a plan's predicted refusal and the server's alike.
		typedErrors(t, mode, rep, apierror.WebhookFailed, func(e printer.ErrorDetail) bool { return e.APIError.Webhook == webhook })
		step := holdStep(t, rep, diagnose.BlockerWebhook, diagnose.FlagBypassWebhook)
		if !strings.Contains(step, "--remove-finalizers='example.com/*'") || !strings.Contains(step, "--bypass-webhook="+cfg) {
			t.Errorf("%s: step %q", mode, step)
		}
		human := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, mode, "--remove-finalizers=example.com/*")
		if !strings.Contains(human.Stdout, "What would hold the namespace") || !strings.Contains(human.Stdout, "next: "+step) {
			t.Errorf("%s: the human plan does not end with the step:\n%s", mode, human.Stdout)
		}
	}

	rep, r := purgeJSON(t, name, "--force", "--yes", "--remove-finalizers=example.com/*", "--backup-dir", t.TempDir(), "--timeout=10m")
	if r.Code != 5 || rep.Stop == nil || rep.Stop.Reason != purge.StopBlocked {
		t.Fatalf("force: exit %d, stop %+v\n%s", r.Code, rep.Stop, r.Stderr)
	}
	if !strings.Contains(r.Stderr, who) || strings.Contains(r.Stderr, "no content remains") || !strings.Contains(r.Stderr, "nothing deleted") {
		t.Errorf("the pass lines do not tell the truth:\n%s", r.Stderr)
	}
	for _, f := range rep.Failures {
		if f.Refusal == nil || f.Refusal.Configuration != cfg || !f.Refusal.Outside || f.Count < 2 {
			t.Errorf("failure %+v: want the configuration, an outside fix, and one entry for every pass it came back", f)
		}
	}
	if len(rep.Errors) != len(rep.Failures) || len(rep.Failures) == 0 {
		t.Errorf("errors %q: each refusal once", rep.Errors)
	}
	typedErrors(t, "--force", rep, apierror.WebhookFailed, func(e printer.ErrorDetail) bool {
		return e.APIError.Webhook == webhook && e.Refusal != nil && e.Refusal.Configuration == cfg && e.Count >= 2
	})
	obj, err := cluster.Dynamic.Resource(gvr).Namespace(name).Get(ctx, "g1", metav1.GetOptions{})
	if err != nil || len(obj.GetFinalizers()) != 1 {
		t.Fatalf("the refused strip changed the object: %v, %v", obj, err)
	}
	step := holdStep(t, rep, diagnose.BlockerWebhook, diagnose.FlagBypassWebhook)
	done := followStep(t, step)
	if bypassed := done.RowsOf(purge.RowBypass); done.Outcome != purge.OutcomeGone || len(bypassed) != 1 || bypassed[0].Status != purge.RowDone {
		t.Fatalf("the printed step %q: outcome %s, bypassed %+v", step, done.Outcome, bypassed)
	}
	kinds := map[purge.ChangeKind]bool{}
	for i, c := range done.ChangeDetails {
		kinds[c.Kind] = true
		if c.Message != done.Changes[i] {
			t.Errorf("change %d: %q, in words %q", i, c.Message, done.Changes[i])
		}
	}
	if len(done.ChangeDetails) != len(done.Changes) || !kinds[purge.ChangeExcludedFromWebhook] || !kinds[purge.ChangeRestoredWebhook] || !kinds[purge.ChangeStrippedFinalizers] {
		t.Errorf("changes, typed: %+v", done.ChangeDetails)
	}
}

// typedErrors checks a report's errors typed: one per entry, the same
// words, each of kind and as ok says.
func typedErrors(t *testing.T, mode string, rep printer.PurgeDocument, kind apierror.Kind, ok func(printer.ErrorDetail) bool) {
	t.Helper()
	if len(rep.ErrorDetails) != len(rep.Errors) || len(rep.Errors) == 0 {
		t.Fatalf("%s: %d errors, %d typed", mode, len(rep.Errors), len(rep.ErrorDetails))
	}
	for i, e := range rep.ErrorDetails {
		if e.Message != rep.Errors[i] || e.Kind != kind || e.APIError.Kind != kind || !ok(e) {
			t.Errorf("%s: error %d, typed: %+v", mode, i, e)
		}
	}
}

// A CRD whose conversion webhook's Service is gone: its objects cannot be
// listed. No purge flag gets past it: the step is the outside fix (the CRD
// patch), and following it lets purge finish.
func TestConversionDownNamesTheCRDAndStopsEarly(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("v%d.example.com", time.Now().UnixNano()%100000)
	crd, v1GVR, err := cluster.BrokenConversionCRD(ctx, group, "Conv", "convs", "conv-system", "converter")
	t.Cleanup(func() {
		_ = cluster.Dynamic.Resource(crdsGVR).Delete(context.Background(), crd, metav1.DeleteOptions{})
	})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, v1GVR, "Conv", name, "old"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))

	plan, r := purgeJSON(t, name)
	if r.Code != 0 || plan.Finalize.Would {
		t.Fatalf("plan: exit %d, finalize %+v", r.Code, plan.Finalize)
	}
	fix := holdStep(t, plan, diagnose.BlockerConversionWebhook, "")
	if !strings.Contains(fix, "restore service conv-system/converter") || !strings.Contains(fix, "kubectl patch crd "+crd) {
		t.Errorf("plan: the outside fix %q", fix)
	}

	rep, r := purgeJSON(t, name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=10m")
	if r.Code != 5 || rep.Stop == nil || rep.Stop.Reason != purge.StopBlocked {
		t.Fatalf("force: exit %d, stop %+v\n%s", r.Code, rep.Stop, r.Stderr)
	}
	if !slices.ContainsFunc(rep.ErrorDetails, func(e printer.ErrorDetail) bool {
		return e.Refusal != nil && e.Refusal.By == diagnose.RefusedByConversion && e.Refusal.CRD == crd
	}) {
		t.Errorf("errors do not name the CRD: %q", rep.Errors)
	}
	typedErrors(t, "--force", rep, apierror.ConversionFailed, func(e printer.ErrorDetail) bool {
		return e.Refusal != nil && e.Refusal.CRD == crd && e.APIError.Group == group && e.APIError.ObjectKind == "Conv"
	})
	fix = holdStep(t, rep, diagnose.BlockerConversionWebhook, "")
	_, patch, ok := strings.Cut(fix, "; or: ")
	if !ok {
		t.Fatalf("no command in %q", fix)
	}
	p := plugintest.Command(t, plugin.Dir, time.Minute, []string{"KUBECONFIG=" + cp.Kubeconfig}, "sh", "-c", patch)
	if p.Code != 0 {
		t.Fatalf("%s: exit %d\n%s", patch, p.Code, p.Stderr)
	}
	if done, r := purgeJSON(t, name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=2m"); done.Outcome != purge.OutcomeGone {
		t.Fatalf("after the fix: exit %d, outcome %s\n%s", r.Code, done.Outcome, r.Stderr)
	}
}

// An APIService whose Service is gone fails discovery: the controller
// never finalizes then. purge stops as soon as a pass changes nothing and
// names the escalation that deletes it; the printed line finishes.
func TestUnavailableAPIServiceStopsEarly(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("u%d.example.com", time.Now().UnixNano()%100000)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	svc, err := cluster.BrokenAPIService(ctx, group, "v1", "kube-system", "gone-"+name)
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), svc) })
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))

	rep, r := purgeJSON(t, name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=10m")
	if r.Code != 5 || rep.Stop == nil || rep.Stop.Reason != purge.StopBlocked {
		t.Fatalf("force: exit %d, stop %+v\n%s", r.Code, rep.Stop, r.Stderr)
	}
	step := holdStep(t, rep, diagnose.BlockerAPIServiceUnavailable, diagnose.FlagDeleteAPIService)
	if !strings.Contains(step, "--delete-apiservice="+svc) {
		t.Fatalf("the step %q does not name the APIService", step)
	}
	if done := followStep(t, step); done.Outcome != purge.OutcomeGone {
		t.Fatalf("the printed step %q does not finish the namespace: %+v", step, done.Outcome)
	}
}

// A pod on a lost node without --force-delete-pods, and an orphaned
// finalizer without --remove-finalizers: the plan ends with the flag that
// gets past each (with its value), and running that line finishes.
func TestHoldsNameTheFlagThatGetsPast(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(ns string)
		kind  diagnose.BlockerKind
		flag  string
		value string
	}{
		{"pod on a lost node", func(ns string) { plugintest.Must(t, cluster.CreateBoundPod(ctx, ns, "on-lost-node", 1)) },
			diagnose.BlockerPods, diagnose.FlagForceDeletePods, ""},
		{"orphaned finalizer", func(ns string) {
			plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "held", nil, "example.com/uninstalled"))
		}, diagnose.BlockerFinalizers, diagnose.FlagRemoveFinalizers, "example.com/uninstalled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := plugintest.UniqueName(t)
			plugintest.Must(t, cluster.CreateNamespace(ctx, name))
			tc.setup(name)
			plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
			// The pod's grace period (1 s) is over before purge looks.
			time.Sleep(2 * time.Second)
			rep, r := purgeJSON(t, name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=12s")
			if r.Code != 5 || rep.Outcome != purge.OutcomeRemaining {
				t.Fatalf("exit %d, outcome %s\n%s", r.Code, rep.Outcome, r.Stderr)
			}
			step := holdStep(t, rep, tc.kind, tc.flag)
			if tc.value != "" && !strings.Contains(step, tc.flag+"="+tc.value) {
				t.Errorf("step %q lacks %s=%s", step, tc.flag, tc.value)
			}
			if done := followStep(t, step); done.Outcome != purge.OutcomeGone {
				t.Fatalf("the printed step %q: outcome %s", step, done.Outcome)
			}
		})
	}
}

// The API server's warnings on purge's writes are shown once each on
// stderr, as kubectl shows them, and kept in the report.
func TestServerWarningsShownOnce(t *testing.T) {
	ctx := context.Background()
	agg := startAggregated(t)
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, agg.Create(ctx, name, "w1"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	agg.Warn(name, "gadgets in this namespace are archived before deletion")

	rep, r := purgeJSON(t, name, "--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=1m")
	if r.Code != 0 || rep.Outcome != purge.OutcomeGone {
		t.Fatalf("exit %d, outcome %s\n%s", r.Code, rep.Outcome, r.Stderr)
	}
	line := "Warning: gadgets in this namespace are archived before deletion"
	if strings.Count(r.Stderr, line) != 1 {
		t.Errorf("stderr shows the warning %d times, want once:\n%s", strings.Count(r.Stderr, line), r.Stderr)
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "gadgets in this namespace are archived before deletion") {
		t.Errorf("the report does not keep the warning: %q", rep.Warnings)
	}
	if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there: %v", err)
	}
}

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
