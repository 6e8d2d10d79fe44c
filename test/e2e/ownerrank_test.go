package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/owners"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// An operator uninstalled but for its RBAC: its Deployment is gone, its
// ServiceAccount (with a name that says nothing: "controller") and its
// ClusterRole stay. Other tools may update the same resource through
// broader grants (the whole API group, or the resource in every group).
// explain ranks them and names the one whose grant names the held
// resource itself, with its finalizers subresource, and whose role is
// named and labelled for the product of the finalizer's domain.

// leftRBAC is the RBAC an uninstall left behind: a ServiceAccount in its
// namespace, a ClusterRole with rules and labels, and its binding; all
// removed at the test's end.
func leftRBAC(t *testing.T, namespace, account, role string, labels map[string]string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	if err := cluster.CreateNamespace(ctx, namespace); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: namespace}}
	if _, err := cluster.Kube.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	_, err := cluster.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role, Labels: labels}, Rules: rules}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role + "-binding", Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: account}}}
	_, err = cluster.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() {
		_ = cluster.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = cluster.Kube.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{})
	})
}

// updates is a rule that may update and patch resources of groups.
func updates(groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: []string{"get", "list", "watch", "update", "patch"}}
}

// heldBy puts finalizer on a fresh object of gvr in a fresh namespace, set
// by a client named setter (a controller since uninstalled), and deletes
// the namespace: the object stays, held.
func heldBy(t *testing.T, gvr schema.GroupVersionResource, kind, finalizer, setter string) string {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	createObject(t, gvr, kind, name, "held")
	gone, err := cluster.As(setter + "/v0.3.1")
	plugintest.Must(t, err)
	finalize(t, &scenario.Operator{Client: gone}, gvr, name, "held", finalizer)
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	return name
}

// One candidate ranks first alone: the likely owner, with why, and that
// nothing runs as it (it was uninstalled).
func TestOwnerRankedFirstWhenUninstalled(t *testing.T) {
	ctx := context.Background()
	gvr, err := cluster.EnsureCRD(ctx, "acme.test", "Gadget", "gadgets")
	plugintest.Must(t, err)
	group := []string{"acme.test"}
	leftRBAC(t, "platform-rank", "controller", "acme-manager-role", map[string]string{owners.LabelPartOf: "acme"},
		updates(group, "gadgets", "gadgets/status"), rbacv1.PolicyRule{APIGroups: group, Resources: []string{"gadgets/finalizers"}, Verbs: []string{"update"}})
	leftRBAC(t, "storage-rank", "bucket-controller", "bucket-controller-role", nil, updates([]string{"acme.test", "storage.test"}, "*"))
	leftRBAC(t, "db-rank", "pg-operator", "pg-operator-role", nil, updates([]string{"*"}, "gadgets", "clusters"))
	leftRBAC(t, "ops-rank", "editor", "gadget-editor-role", map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true", owners.LabelPartOf: "acme"},
		updates(group, "gadgets"))
	name := heldBy(t, gvr, "Gadget", "acme.test/cleanup", "gadget-reconciler")

	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	f := finalizerDoc(t, e, "acme.test/cleanup")
	in := f.OwnerState.Inferred
	if in == nil {
		t.Fatalf("no inference: %+v\n%s", f, e.human)
	}
	switch {
	case in.Confidence != owners.Likely || in.Identity == nil || in.Identity.String() != "serviceaccount platform-rank/controller":
		t.Errorf("owner %s %v, want likely serviceaccount platform-rank/controller\n%s", in.Confidence, in.Identity, e.human)
	case in.Grant == nil || in.Grant.Scope != owners.ScopeResource || in.Grant.Role.Name != "acme-manager-role" || !in.FinalizersGrant || !in.WritesAPI:
		t.Errorf("grant %+v, finalizers %v, writes API %v", in.Grant, in.FinalizersGrant, in.WritesAPI)
	case !slices.Contains(in.Affinity, "acme-manager-role") || !slices.Contains(in.Affinity, "acme"):
		t.Errorf("affinity %q", in.Affinity)
	case in.CandidateCount != 3 || len(in.OneOf) != 0 || in.Workload != nil:
		// The role aggregated into edit is every editor's: not a candidate.
		t.Errorf("candidates %d %v, one of %v, workload %v", in.CandidateCount, in.Candidates, in.OneOf, in.Workload)
	}
	if f.Owner != "serviceaccount platform-rank/controller" || f.OwnerSource != diagnose.SourceInferred || f.OwnerState.State != diagnose.OwnerNotFound {
		t.Errorf("owner %q (%s), state %s", f.Owner, f.OwnerSource, f.OwnerState.State)
	}
	for _, want := range []string{"likely owner", "serviceaccount platform-rank/controller may update it through ClusterRole/acme-manager-role",
		"ranked first of 3 identities that may remove it: its grant names the held resource itself, it may update their finalizers subresource",
		"its names carry the finalizer's domain: acme-manager-role, acme", "no Deployment, StatefulSet or DaemonSet runs as it"} {
		if !strings.Contains(flat(e.human), want) {
			t.Errorf("human view lacks %q\n%s", want, e.human)
		}
	}
	e.blocker(t, diagnose.BlockerFinalizers, "acme.test/cleanup", "--remove-finalizers=acme.test/cleanup")
}

// The counter-example: two candidates rank first together (both name the
// resource itself, both hold its finalizers, both are named for the
// product): the owner is likely one of them, and explain does not guess.
func TestOwnerNotGuessedBetweenEquals(t *testing.T) {
	ctx := context.Background()
	gvr, err := cluster.EnsureCRD(ctx, "zeta.test", "Sprocket", "sprockets")
	plugintest.Must(t, err)
	group := []string{"zeta.test"}
	fin := rbacv1.PolicyRule{APIGroups: group, Resources: []string{"sprockets/finalizers"}, Verbs: []string{"update"}}
	part := map[string]string{owners.LabelPartOf: "zeta"}
	leftRBAC(t, "platform-tie", "controller", "zeta-manager-role", part, updates(group, "sprockets"), fin)
	leftRBAC(t, "platform-tie", "legacy-controller", "zeta-legacy-manager-role", part, updates(group, "sprockets"), fin)
	leftRBAC(t, "storage-tie", "bucket-controller", "bucket-tie-role", nil, updates([]string{"zeta.test"}, "*"))
	name := heldBy(t, gvr, "Sprocket", "zeta.test/cleanup", "sprocket-reconciler")

	e := explain(t, cp.Kubeconfig, name)
	f := finalizerDoc(t, e, "zeta.test/cleanup")
	in := f.OwnerState.Inferred
	if in == nil {
		t.Fatalf("no inference: %+v\n%s", f, e.human)
	}
	var oneOf []string
	for _, s := range in.OneOf {
		oneOf = append(oneOf, s.String())
	}
	slices.Sort(oneOf)
	want := []string{"serviceaccount platform-tie/controller", "serviceaccount platform-tie/legacy-controller"}
	if in.Confidence != owners.None || in.Identity != nil || in.Workload != nil || !slices.Equal(oneOf, want) || in.CandidateCount != 3 {
		t.Errorf("inference %s, identity %v, one of %q, %d candidates; want None, one of %q", in.Confidence, in.Identity, oneOf, in.CandidateCount, want)
	}
	if f.Owner != "" || f.OwnerState.State != diagnose.OwnerUnknown {
		t.Errorf("owner %q, state %s: a guess", f.Owner, f.OwnerState.State)
	}
	human := flat(e.human)
	if !strings.Contains(human, "likely one of serviceaccount platform-tie/") || !strings.Contains(human, "nothing tells them apart") ||
		strings.Contains(human, "likely owner") || strings.Contains(human, "bucket-controller") {
		t.Errorf("human view:\n%s", e.human)
	}
}
