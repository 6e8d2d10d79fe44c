package guard

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestGuardDenies: in deny mode a deletion the guard is sure would stick
// is refused, with the reasons (the warnings) and how to delete anyway;
// it goes with the annotation, or for a requester in an exempt group
// (who still gets the warnings); a prediction it is not sure of is only
// warned about.
func TestGuardDenies(t *testing.T) {
	ctx := context.Background()
	base := plugintest.UniqueName(t)
	refused, byAdmin, byDeveloper, unsure := base+"-refused", base+"-admin", base+"-dev", base+"-unsure"
	for _, ns := range []string{refused, byAdmin, byDeveloper} {
		heldNamespace(t, ns, ownerless)
	}
	heldNamespace(t, unsure, "example.com/unsure-"+base[len(base)-5:])
	// Two users allowed to delete namespaces, one in the exempt group.
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "delete"}}}
	admin, developer := "alice-"+base[len(base)-5:], "bob-"+base[len(base)-5:]
	must(t, cluster.GrantClusterRole(ctx, admin, rules))
	must(t, cluster.GrantClusterRole(ctx, developer, rules))
	_, adminConfig, err := cp.MintUser(admin, "platform-admins")
	must(t, err)
	_, developerConfig, err := cp.MintUser(developer, "developers")
	must(t, err)

	g := startGuard(t, cp.Kubeconfig, "--guard=deny", "--guard-exempt-groups=platform-admins,sre")

	r, took := deleteNamespace(t, cp.Kubeconfig, refused)
	t.Logf("kubectl delete namespace %s (%s):\n%s%s", refused, took.Round(time.Millisecond), r.Stdout, r.Stderr)
	checkRefused(t, r, refused)

	must(t, annotate(ctx, refused))
	r, took = deleteNamespace(t, cp.Kubeconfig, refused)
	t.Logf("kubectl delete namespace %s, annotated (%s):\n%s%s", refused, took.Round(time.Millisecond), r.Stdout, r.Stderr)
	checkWarned(t, r, refused, "would stick (FinalizersRemaining)")
	if !strings.Contains(r.Stderr, "Warning: ns-doctor: allowed in deny mode anyway: namespace "+refused+" carries ns-doctor.io/allow-stuck-deletion=true") {
		t.Errorf("the annotation's warning is missing:\n%s", r.Stderr)
	}

	r, _ = deleteNamespace(t, developerConfig, byDeveloper)
	checkRefused(t, r, byDeveloper)
	r, took = deleteNamespace(t, adminConfig, byAdmin)
	t.Logf("kubectl delete namespace %s as %s, in platform-admins (%s):\n%s%s", byAdmin, admin, took.Round(time.Millisecond), r.Stdout, r.Stderr)
	checkWarned(t, r, byAdmin, "would stick (FinalizersRemaining)")
	if !strings.Contains(r.Stderr, "allowed in deny mode anyway: "+admin+" is in the exempt group platform-admins (--guard-exempt-groups)") {
		t.Errorf("the exemption's warning is missing:\n%s", r.Stderr)
	}

	r, took = deleteNamespace(t, cp.Kubeconfig, unsure)
	t.Logf("kubectl delete namespace %s (%s):\n%s%s", unsure, took.Round(time.Millisecond), r.Stdout, r.Stderr)
	checkWarned(t, r, unsure, "its owner is not one ns-doctor knows, nor one the cluster names: make sure it runs")

	denied := g.metric(t, "nsdoctor_guard_admissions_total", `mode="deny"`, `resource="namespaces"`, `outcome="denied"`)
	warned := g.metric(t, "nsdoctor_guard_admissions_total", `mode="deny"`, `resource="namespaces"`, `outcome="warned"`)
	if denied != 2 || warned != 3 {
		t.Errorf("denied %v, warned %v; want 2 and 3", denied, warned)
	}
}

// checkRefused: kubectl could not delete the namespace, printed the
// guard's reasons and how to delete anyway, and the namespace is Active.
func checkRefused(t *testing.T, r plugintest.Result, ns string) {
	t.Helper()
	for _, want := range []string{
		`Error from server (Forbidden): admission webhook "guard.ns-doctor.io" denied the request: ns-doctor guard refuses to delete namespace ` + ns + ": it would stick in Terminating",
		"To delete it anyway: kubectl annotate namespace " + ns + " ns-doctor.io/allow-stuck-deletion=true",
		"Sure to hold it: FinalizersRemaining " + ownerless,
		"Warning: ns-doctor: namespace " + ns + " would stick (FinalizersRemaining): 1 configmaps (held) wait for " + ownerless,
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("kubectl delete namespace %s: no %q in\n%s", ns, want, r.Stderr)
		}
	}
	if r.Code != 1 || !active(t, ns) {
		t.Errorf("kubectl delete namespace %s: exit %d, namespace Active %v; want refused (1) and still Active", ns, r.Code, active(t, ns))
	}
}

func annotate(ctx context.Context, ns string) error {
	obj, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, ns, getOptions)
	if err != nil {
		return err
	}
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	obj.Annotations["ns-doctor.io/allow-stuck-deletion"] = "true"
	_, err = cluster.Kube.CoreV1().Namespaces().Update(ctx, obj, updateOptions)
	return err
}

// TestGuardNeverInTheControllersWay: a namespace deleted before the guard
// started, held by a finalizer the guard is sure of, still finishes with
// the guard in deny mode once released: kube-apiserver never asks the
// guard about what the namespace controller sends (the content's deletes,
// the finalize), nor about a DELETE of a namespace already terminating
// (kubectl delete again is allowed, with no warning).
func TestGuardNeverInTheControllersWay(t *testing.T) {
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	heldNamespace(t, ns, ownerless)
	must(t, cluster.CreateConfigMap(ctx, ns, "plain", nil))
	must(t, cluster.DeleteNamespace(ctx, ns))
	_, err := cluster.WaitForConditions(ctx, ns, time.Minute, v1.NamespaceContentRemaining, v1.NamespaceFinalizersRemaining)
	must(t, err)

	g := startGuard(t, cp.Kubeconfig, "--guard=deny")
	answered := g.metric(t, "nsdoctor_guard_admissions_total")
	called := apiserverMetric(t, "apiserver_admission_webhook_request_total", `name="guard.ns-doctor.io"`)
	if answered == 0 || called == 0 {
		// startGuard waits for a first call: both count it, or the
		// comparisons below read series that are not there.
		t.Fatalf("no call counted since the guard started: the guard's %v, kube-apiserver's %v", answered, called)
	}

	r, _ := deleteNamespace(t, cp.Kubeconfig, ns)
	if r.Code != 0 || strings.Contains(r.Stderr, "Warning") {
		t.Errorf("kubectl delete namespace %s, already terminating, in deny mode: exit %d\n%s%s", ns, r.Code, r.Stdout, r.Stderr)
	}
	must(t, cluster.ReleaseConfigMap(ctx, ns, "held"))
	gone(t, ns, 2*time.Minute)

	if got := g.metric(t, "nsdoctor_guard_admissions_total"); got != answered {
		t.Errorf("the guard answered %v requests while %s terminated, want none", got-answered, ns)
	}
	if got := apiserverMetric(t, "apiserver_admission_webhook_request_total", `name="guard.ns-doctor.io"`); got != called {
		t.Errorf("kube-apiserver called the guard %v times while %s terminated, want never", got-called, ns)
	}
	if strings.Contains(g.Stderr.String(), "namespace "+ns+" ") {
		t.Errorf("the guard was asked about %s:\n%s", ns, g.Stderr.String())
	}
}
