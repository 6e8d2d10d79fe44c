package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// payload is what issue #24 found drawn on an admin's terminal: it sets
// the window title, clears the screen and prints a fake verdict in red.
const payload = "innocent \x1b]0;pwned\a\x1b[2J\x1b[31mFAKE all clear\x1b[0m"

// shown is the payload as the human view must show it: every control
// byte visible (ESC as kubectl shows it, ^[; BEL as \x07), none sent.
const shown = `innocent ^[]0;pwned\x07^[[2J^[[31mFAKE all clear^[[0m`

// terminalBytes lists the bytes of out that a terminal would act on:
// every control character but the newline, DEL, C1 controls and invalid
// UTF-8.
func terminalBytes(out string) []string {
	var found []string
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			found = append(found, fmt.Sprintf("invalid byte %#x at %d", out[i], i))
		case r == '\n':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			found = append(found, fmt.Sprintf("%q at %d", r, i))
		}
		i += size
	}
	return found
}

// human runs the plugin as a person would on a terminal without colour
// and fails the test if anything it printed would drive that terminal.
func human(t *testing.T, args ...string) plugintest.Result {
	t.Helper()
	r := plugin.Kubectl(t, cp.Kubeconfig, append([]string{"ns-doctor"}, args...)...)
	for stream, out := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr} {
		if bad := terminalBytes(out); len(bad) > 0 {
			t.Errorf("%s: %s reached the terminal: %v\n%s", strings.Join(args, " "), stream, bad, out)
		}
	}
	return r
}

// A custom resource held by a finalizer, whose status condition, Event,
// Helm release annotation and admission webhook all carry the payload;
// the namespace controller repeats the webhook's words in its
// conditions. The human views of explain and purge (plan, server dry run,
// forced run and its live progress) show every one of them escaped and
// send none of its bytes; -o json carries each exactly.
func TestClusterTextNeverDrivesTheTerminal(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("e%d.example.com", time.Now().UnixNano()%100000)
	gvr, err := cluster.EnsureCRD(ctx, group, "Tenant", "tenants")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateHolder(ctx, gvr, "Tenant", name, "t1", "example.com/cleanup", payload,
		map[string]string{"meta.helm.sh/release-name": payload}))
	plugintest.Must(t, cluster.CreateWarningEvent(ctx, name, "Tenant", "t1", "CleanupFailed", payload))
	hook, err := cluster.StartDenyingWebhook(ctx, "tenant-guard-"+name, name, payload, gvr, admissionregv1.Update, admissionregv1.Delete)
	plugintest.Must(t, err)
	t.Cleanup(func() { hook.Close(context.Background()) })
	// The controller deletes Events with the rest of the content: a second
	// policy keeps this one for explain to read.
	keep, err := cluster.StartDenyingWebhook(ctx, "event-guard-"+name, name, "events stay",
		schema.GroupVersionResource{Version: "v1", Resource: "events"}, admissionregv1.Delete)
	plugintest.Must(t, err)
	t.Cleanup(func() { keep.Close(context.Background()) })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	ns, err := cluster.WaitForConditionStatus(ctx, name, time.Minute, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)
	plugintest.Must(t, err)
	if !strings.Contains(conditionMessage(ns, v1.NamespaceDeletionContentFailure), "FAKE all clear") {
		t.Fatalf("the controller does not repeat the webhook's words: %+v", ns.Status.Conditions)
	}

	r := human(t, "explain", name)
	// The holder's condition, its release, the Event, the controller's
	// condition quoting the webhook, and the blocker naming its denial.
	if n := strings.Count(unwrap(r.Stdout), shown); r.Code != 3 || n < 5 {
		t.Errorf("explain shows the payload escaped %d times, want 5 or more; exit %d, want 3 (stuck)\n%s", n, r.Code, r.Stdout)
	}

	j := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", name, "-o", "json")
	if strings.ContainsRune(j.Stdout, 0x1b) || strings.ContainsRune(j.Stdout, '\a') {
		t.Errorf("-o json carries raw control bytes, not JSON escapes")
	}
	var doc printer.DiagnosisDocument
	plugintest.Must(t, json.Unmarshal([]byte(j.Stdout), &doc))
	exact := 0
	for _, h := range doc.Holders {
		for _, c := range h.Conditions {
			exact += b2i(c.Message == payload)
		}
		if h.ManagedBy != nil {
			exact += b2i(h.ManagedBy.Name == payload)
		}
	}
	for _, e := range doc.Events {
		exact += b2i(e.Message == payload)
	}
	if exact != 3 {
		t.Errorf("-o json: %d of the condition, release and event messages exact, want 3: %+v %+v", exact, doc.Holders, doc.Events)
	}

	for _, mode := range []string{"--dry-run=client", "--dry-run=server"} {
		r := human(t, "purge", name, mode, "--remove-finalizers=example.com/*")
		if mode == "--dry-run=server" && !strings.Contains(unwrap(r.Stdout+r.Stderr), shown) {
			t.Errorf("%s: the webhook's rejection is not shown escaped:\n%s\n%s", mode, r.Stdout, r.Stderr)
		}
	}
	// -o json reads the denial, typed: the webhook, and its words exactly.
	s := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "--dry-run=server", "--remove-finalizers=example.com/*", "-o", "json")
	var plan printer.PurgeDocument
	plugintest.Must(t, json.Unmarshal([]byte(s.Stdout), &plan))
	denied := 0
	for _, e := range plan.ErrorDetails {
		denied += b2i(e.Kind == apierror.WebhookDenied && e.APIError.Webhook == "deny.tenant-guard-"+name+".example.com" && e.APIError.Denial == payload)
	}
	if denied == 0 {
		t.Errorf("server dry run: no typed denial with the webhook's words: %+v", plan.ErrorDetails)
	}
	f := human(t, "purge", name, "--force", "--yes", "--remove-finalizers=example.com/*", "--backup-dir", t.TempDir(), "--timeout=2m")
	if f.Code != 5 || !strings.Contains(unwrap(f.Stdout), shown) || !strings.Contains(f.Stderr, "denied by webhook") {
		t.Errorf("forced purge: exit %d (want 5, held by the webhooks); the report must show the rejection escaped:\n%s\n%s", f.Code, f.Stdout, f.Stderr)
	}
}

// The one stderr line of a failed command escapes the API's error text:
// here a webhook denies deleting the namespace that explain --wait
// --delete-namespace was told to delete.
func TestErrorLineEscapesTheServersWords(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	hook, err := cluster.StartDenyingWebhook(ctx, "ns-guard-"+name, name, payload,
		schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, admissionregv1.Delete)
	plugintest.Must(t, err)
	t.Cleanup(func() { hook.Close(context.Background()) })

	r := human(t, "explain", name, "--wait=20s", "--delete-namespace")
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if r.Code == 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], shown) {
		t.Errorf("exit %d; want one error line with the webhook's words escaped:\n%s", r.Code, r.Stderr)
	}
}

// unwrap joins the lines the human view wraps, so a long message reads
// as one again.
func unwrap(out string) string { return wrapped.ReplaceAllString(out, " ") }

var wrapped = regexp.MustCompile(`\n\s*`)

func conditionMessage(ns *v1.Namespace, t v1.NamespaceConditionType) string {
	for _, c := range ns.Status.Conditions {
		if c.Type == t {
			return c.Message
		}
	}
	return ""
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
