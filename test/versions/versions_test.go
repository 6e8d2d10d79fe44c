package versions

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// decode reads a command's JSON document, failing the test with what the
// command printed when it is not one.
func decode[T any](t *testing.T, r plugintest.Result) T {
	t.Helper()
	var doc T
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("exit %d, not a JSON document: %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	return doc
}

// version reads `version -o json` against a bed: the server's version and
// each behaviour as assumed, read from the cluster.
func TestVersionNamesWhatIsAssumed(t *testing.T) {
	for _, b := range both() {
		doc := decode[printer.VersionReport](t, plugin.Kubectl(t, b.cp.Kubeconfig, "ns-doctor", "version", "-o", "json"))
		if doc.Server == nil || compat.For(doc.Server.Version).Minor() != b.minor || !doc.Server.Known {
			t.Fatalf("%s: server %+v", b.minor, doc.Server)
		}
		if got, want := doc.Server.Has(compat.UpdateWithoutNamespace), b == newer; got != want {
			t.Errorf("%s: UpdateWithoutNamespace assumed %v", b.minor, got)
		}
		if client := decode[printer.VersionReport](t, plugin.Kubectl(t, b.cp.Kubeconfig, "ns-doctor", "version", "--client", "-o", "json")); client.Server != nil {
			t.Errorf("%s: --client read the server: %+v", b.minor, client.Server)
		}
	}
}

// --ordered-deletion=off is refused on 1.37 (no controller of it has
// another order) before anything but /version is read, in one line naming
// the version, with the usage exit code; on 1.36 it is followed.
func TestOrderedDeletionOffFollowsTheVersion(t *testing.T) {
	for _, b := range both() {
		ns := plugintest.UniqueName(t) + "-" + strings.ReplaceAll(b.minor, ".", "")
		plugintest.Must(t, b.cluster.CreateNamespace(context.Background(), ns))
		for _, cmd := range [][]string{{"explain", ns}, {"purge", ns}} {
			r := plugin.Kubectl(t, b.cp.Kubeconfig, append([]string{"ns-doctor", "-v=6", "--ordered-deletion=off"}, cmd...)...)
			if b == older {
				if strings.Contains(r.Stderr, "removed in 1.37") {
					t.Errorf("1.36 %s refused --ordered-deletion=off: %s", cmd[0], errorLines(r.Stderr))
				}
				continue
			}
			lines := errorLines(r.Stderr)
			if r.Code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "v1.37.2") || !strings.Contains(lines[0], "removed in 1.37") {
				t.Errorf("1.37 %s --ordered-deletion=off: exit %d, error lines %q", cmd[0], r.Code, lines)
			}
			for _, l := range strings.Split(r.Stderr, "\n") {
				if strings.Contains(l, "/api/v1/namespaces") || strings.Contains(l, "/apis/") {
					t.Errorf("1.37 %s read more than /version before refusing: %s", cmd[0], l)
				}
			}
		}
	}
}

// errorLines are stderr's "error: " lines.
func errorLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "error: ") {
			out = append(out, l)
		}
	}
	return out
}

// A controller's pass that stopped at pods wrote "All content successfully
// removed" while a held ConfigMap remained; once the pod is gone and
// before the controller's next pass, explain's conditions disagree with
// it. On 1.37 the early return (upstream issue 138208) is named, never the
// gate, which no longer exists; on 1.36 the other order would not give the
// controller's conditions either, so the gate is not blamed there too.
func TestDisagreementNamesTheEarlyReturn(t *testing.T) {
	for _, b := range both() {
		ctx := context.Background()
		ns := plugintest.UniqueName(t) + "-" + strings.ReplaceAll(b.minor, ".", "")
		plugintest.Must(t, b.cluster.CreateNamespace(ctx, ns))
		plugintest.Must(t, b.cluster.CreateBoundPod(ctx, ns, "on-lost-node", 600))
		plugintest.Must(t, b.cluster.CreateConfigMap(ctx, ns, "held", nil, "example.com/hold"))
		t.Cleanup(func() { _ = b.cluster.ReleaseConfigMap(context.Background(), ns, "held") })
		plugintest.Must(t, b.cluster.DeleteNamespace(ctx, ns))
		_, err := b.cluster.WaitForConditionStatus(ctx, ns, time.Minute, v1.NamespaceDeletionDiscoveryFailure, v1.ConditionFalse)
		plugintest.Must(t, err)
		// The controller's requeue follows the pod's long grace period:
		// its next pass is minutes away once the pod is gone at once.
		plugintest.Must(t, b.cluster.Kube.CoreV1().Pods(ns).Delete(ctx, "on-lost-node", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}))
		r := plugin.Kubectl(t, b.cp.Kubeconfig, "ns-doctor", "explain", ns, "-o", "json")
		doc := decode[printer.DiagnosisDocument](t, r)
		if !doc.Ordering.PodsFirstEarlyReturn || doc.Ordering.OtherMatches {
			t.Errorf("%s: podsFirstEarlyReturn=%v otherOrderingMatches=%v; want the early return named, not the gate\n%s",
				b.minor, doc.Ordering.PodsFirstEarlyReturn, doc.Ordering.OtherMatches, r.Stdout)
		}
		human := plugin.Kubectl(t, b.cp.Kubeconfig, "ns-doctor", "explain", ns)
		if !strings.Contains(human.Stdout, "upstream issue 138208") || strings.Contains(human.Stdout, "--ordered-deletion") {
			t.Errorf("%s: the human view does not name the early return alone:\n%s", b.minor, human.Stdout)
		}
	}
}

// purge --orphans strips a former namespace's leftovers: on 1.37 in place
// (NamespaceLifecycle admits the PATCH), neither needing nor asking for
// create or delete on namespaces; on 1.36 only through the namespace
// re-created for it, which a user without those permissions is refused
// before any change.
func TestOrphansFollowTheVersion(t *testing.T) {
	for _, b := range both() {
		ctx := context.Background()
		ns := plugintest.UniqueName(t) + "-" + strings.ReplaceAll(b.minor, ".", "")
		plugintest.Must(t, b.cluster.CreateNamespace(ctx, ns))
		plugintest.Must(t, b.cluster.CreateConfigMap(ctx, ns, "held", nil, "example.com/keep"))
		plugintest.Must(t, b.cluster.CreateConfigMap(ctx, ns, "plain", nil))
		plugintest.Must(t, b.cluster.ForceFinalize(ctx, ns))
		user := "orphans-" + strings.ReplaceAll(b.minor, ".", "")
		kubeconfig := withoutNamespaceWrites(t, b, user)
		args := []string{"ns-doctor", "purge", "--orphans", ns, "--remove-finalizers=example.com/*", "-o", "json"}

		plan := decode[printer.PurgeDocument](t, plugin.Kubectl(t, kubeconfig, args...))
		revival := slices.ContainsFunc(plan.WarningDetails, func(w printer.WarningDetail) bool { return w.Kind == purge.WarnRevivalNeeded })
		if revival != (b == older) {
			t.Errorf("%s: the plan re-creates the namespace: %v\n%+v", b.minor, revival, plan.WarningDetails)
		}
		r := plugin.Kubectl(t, kubeconfig, append(args, "--force", "--yes", "--backup-dir", t.TempDir())...)
		if b == older {
			doc := decode[printer.PurgeDocument](t, r)
			if r.Code != 1 || !slices.Contains(doc.MissingPermissions, "create namespaces") {
				t.Errorf("1.36 without create namespaces: exit %d, missing %q\n%s", r.Code, doc.MissingPermissions, r.Stderr)
			}
			r = plugin.Kubectl(t, b.cp.Kubeconfig, append(args, "--force", "--yes", "--backup-dir", t.TempDir())...)
		}
		doc := decode[printer.PurgeDocument](t, r)
		created := slices.ContainsFunc(doc.ChangeDetails, func(c printer.ChangeDetail) bool { return c.Kind == purge.ChangeCreatedNamespace })
		if r.Code != 0 || doc.Outcome != purge.OutcomeGone || created != (b == older) {
			t.Errorf("%s: exit %d, outcome %s, namespace re-created %v\n%s", b.minor, r.Code, doc.Outcome, created, r.Stderr)
		}
		if cms, err := b.cluster.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil || len(cms.Items) != 0 {
			t.Errorf("%s: %d leftovers remain (%v)\n%s\n%s", b.minor, len(cms.Items), err, r.Stdout, r.Stderr)
		}
		if _, err := b.cluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: namespace %s exists after purge --orphans: %v", b.minor, ns, err)
		}
	}
}

// withoutNamespaceWrites mints a user who may do everything purge does to
// namespaced content, of every type the server serves, and only read
// namespaces: no create, delete or finalize.
func withoutNamespaceWrites(t *testing.T, b *bed, user string) string {
	t.Helper()
	lists, err := discovery.ServerPreferredNamespacedResources(b.cluster.Kube.Discovery())
	plugintest.Must(t, err)
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}}}
	for _, l := range lists {
		group := strings.Split(l.GroupVersion, "/")
		rule := rbacv1.PolicyRule{APIGroups: []string{""}, Verbs: []string{"get", "list", "watch", "patch", "update", "delete", "deletecollection"}}
		if len(group) == 2 {
			rule.APIGroups = []string{group[0]}
		}
		for _, res := range l.APIResources {
			rule.Resources = append(rule.Resources, res.Name)
		}
		rules = append(rules, rule)
	}
	plugintest.Must(t, b.cluster.GrantClusterRole(context.Background(), user, rules))
	_, kubeconfig, err := b.cp.MintUser(user)
	plugintest.Must(t, err)
	return kubeconfig
}

// On 1.37 a strip in place meets a webhook that selects namespaces by
// label: kube-apiserver cannot read a gone namespace's labels and answers
// 404 (namespaces "X" not found) without calling it. purge names that
// webhook as the refusal and finishes through a namespace re-created for
// the strips, as up to 1.36.
func TestOrphansMeetASelectingWebhook(t *testing.T) {
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	plugintest.Must(t, newer.cluster.CreateNamespace(ctx, ns))
	plugintest.Must(t, newer.cluster.CreateConfigMap(ctx, ns, "held", nil, "example.com/keep"))
	plugintest.Must(t, newer.cluster.ForceFinalize(ctx, ns))
	cfg := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:                    "tenants." + ns + ".example.com",
			ClientConfig:            admissionregv1.WebhookClientConfig{Service: &admissionregv1.ServiceReference{Namespace: "nowhere", Name: "tenants"}},
			FailurePolicy:           ptr.To(admissionregv1.Fail),
			SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}},
			Rules: []admissionregv1.RuleWithOperations{{Operations: []admissionregv1.OperationType{admissionregv1.Update},
				Rule: admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
		}},
	}
	_, err := newer.cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() { _ = newer.cluster.DeleteWebhook(context.Background(), ns) })

	r := plugin.Kubectl(t, newer.cp.Kubeconfig, "ns-doctor", "purge", "--orphans", ns, "--remove-finalizers=example.com/*",
		"--force", "--yes", "--backup-dir", t.TempDir(), "--timeout=2m", "-o", "json")
	doc := decode[printer.PurgeDocument](t, r)
	named := slices.ContainsFunc(doc.ErrorDetails, func(e printer.ErrorDetail) bool {
		return e.Refusal != nil && e.Refusal.NamespaceGone && e.Refusal.Configuration == ns
	})
	created := slices.ContainsFunc(doc.ChangeDetails, func(c printer.ChangeDetail) bool { return c.Kind == purge.ChangeCreatedNamespace })
	if r.Code != 0 || doc.Outcome != purge.OutcomeGone || !named || !created {
		t.Errorf("exit %d, outcome %s, the webhook named %v, namespace re-created %v\n%+v\n%s", r.Code, doc.Outcome, named, created, doc.ErrorDetails, r.Stderr)
	}
	if cms, err := newer.cluster.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil || len(cms.Items) != 0 {
		t.Errorf("leftovers remain: %v %v", cms, err)
	}
}
