package inspect

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

var widgets = schema.GroupVersionResource{Group: "acme.example.com", Version: "v1", Resource: "widgets"}

// operator is an operator the catalogue does not know, as installed: a
// ClusterRole over its widgets, bound to its ServiceAccount, and its
// Deployment running as it, ready.
func operator(ns, name string, ready int32) []runtime.Object {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list", "watch", "update", "patch"}, APIGroups: []string{"acme.example.com"}, Resources: []string{"widgets", "widgets/status"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{ServiceAccountName: name, Containers: []v1.Container{{Name: "manager"}}}}},
		Status: appsv1.DeploymentStatus{ReadyReplicas: ready}}
	return []runtime.Object{role, binding, d}
}

// heldWidget is a widget its operator put a finalizer on, with its own
// field manager.
func heldWidget(ns, name, finalizer, manager string) *unstructured.Unstructured {
	u := kubetest.Object("Widget", ns, name, finalizer)
	at := metav1.NewTime(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	u.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:size":{}}}`)},
		{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &at, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{".":{},"v:\"` + finalizer + `\"":{}}}}`)},
	})
	return u
}

// Over many namespaces, owner inference reads RBAC once per type and the
// operator's workloads once, however many namespaces it explains: the
// reads are shared by the inspector, and each namespace's diagnosis names
// the same owner, certain (its field manager and its ServiceAccount's
// rights agree), running.
func TestInferenceReadsInBulk(t *testing.T) {
	counts := map[int]map[string]int{}
	for _, n := range []int{10, 60} {
		c := kubetest.New()
		c.Serve(widgets, "Widget", kubetest.AllVerbs)
		c.AddNamespace("acme-system", 0)
		var nss []v1.Namespace
		for k := range n {
			name := fmt.Sprintf("team-%03d", k)
			nss = append(nss, *c.AddNamespace(name, time.Hour))
			c.Add(widgets, heldWidget(name, "w", "acme.example.com/cleanup", "acme-operator"))
		}
		in := New(c.Clients(operator("acme-system", "acme-operator", 1)...), Config{Compact: true})
		reports, err := in.ExplainAll(context.Background(), nss, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reports {
			f := finalizerInfo(t, r, "acme.example.com/cleanup")
			inf := f.OwnerState.Inferred
			if f.OwnerState.State != diagnose.OwnerRunningReady || inf == nil || inf.Confidence != owners.Certain ||
				inf.Workload == nil || inf.Workload.String() != "deployment acme-system/acme-operator" || len(inf.SetBy) == 0 || inf.SetBy[0].Name != "acme-operator" {
				t.Fatalf("%s: owner %+v, inferred %+v", r.Namespace.Name, f.OwnerState, inf)
			}
		}
		counts[n] = map[string]int{}
		for _, req := range c.Requests {
			verb, rest, _ := strings.Cut(req, " ")
			res, _, _ := strings.Cut(rest, " ")
			if slices.Contains([]string{"clusterroles", "clusterrolebindings", "roles", "rolebindings", "deployments", "statefulsets", "daemonsets"}, res) {
				counts[n][verb+" "+res]++
			}
		}
	}
	t.Logf("inference's requests over 10 namespaces: %v; over 60: %v", counts[10], counts[60])
	for _, res := range []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"} {
		if counts[60]["list "+res] != 1 {
			t.Errorf("%s listed %d times over 60 namespaces, want once", res, counts[60]["list "+res])
		}
	}
	for k, v := range counts[60] {
		if counts[10][k] != v {
			t.Errorf("%s: %d requests over 10 namespaces, %d over 60: inference's reads grow with the namespaces", k, counts[10][k], v)
		}
	}
	if counts[60]["list deployments"] > 2 {
		t.Errorf("deployments listed %d times: want the operator's namespace and its field manager's name, once each", counts[60]["list deployments"])
	}
}

// The walk reads RBAC as the in-memory cluster serves it: an aggregated
// ClusterRole holds what it selects, a wildcard is told apart,
// resourceNames limit a rule, a RoleBinding to the group of a namespace's
// ServiceAccounts grants in its namespace only.
func TestRBACWalkOverTheInMemoryCluster(t *testing.T) {
	c := kubetest.New()
	objects := []runtime.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "acme-widgets", Labels: map[string]string{"acme/aggregate": "true"}},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"patch"}, APIGroups: []string{"acme.example.com"}, Resources: []string{"widgets"}}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, AggregationRule: &rbacv1.AggregationRule{
			ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"acme/aggregate": "true"}}}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "all"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "one"}, Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"update"}, APIGroups: []string{"acme.example.com"}, Resources: []string{"widgets"}, ResourceNames: []string{"w1"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "acme"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "acme-system", Name: "acme"}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "all"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "all"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "tools", Name: "all"}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "one"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "one"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ops", Name: "one"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "watchers", Namespace: "team-a"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "acme-widgets"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:watchers"}}},
	}
	in := New(c.Clients(objects...), Config{})
	rbac := in.readRBAC(context.Background())
	if !rbac.read || len(rbac.unchecked) > 0 {
		t.Fatalf("RBAC read %v, unchecked %+v", rbac.read, rbac.unchecked)
	}
	ask := func(ns, name string) []string {
		var out []string
		for _, g := range rbac.index.Who(owners.Access{Verbs: removeVerbs, Group: "acme.example.com", Resource: "widgets", Namespace: ns, Names: []string{name}}) {
			s := g.Subject.String() + " via " + g.Role.String()
			if !g.Specific() {
				s += " (not specific)"
			}
			out = append(out, s)
		}
		slices.Sort(out)
		return out
	}
	if got, want := ask("team-a", "w1"), []string{
		"group system:serviceaccounts:watchers via ClusterRole/acme-widgets",
		"serviceaccount acme-system/acme via ClusterRole/acme",
		"serviceaccount ops/one via ClusterRole/one",
		"serviceaccount tools/all via ClusterRole/all (not specific)",
	}; !slices.Equal(got, want) {
		t.Errorf("w1 in team-a:\n%q\nwant\n%q", got, want)
	}
	if got, want := ask("team-b", "w2"), []string{
		"serviceaccount acme-system/acme via ClusterRole/acme",
		"serviceaccount tools/all via ClusterRole/all (not specific)",
	}; !slices.Equal(got, want) {
		t.Errorf("w2 in team-b:\n%q\nwant\n%q", got, want)
	}
}

// A tenant may read none of it: each refused read is one unchecked line,
// the owner stays unknown (nothing is guessed), and explain goes on.
func TestInferenceWithoutPermission(t *testing.T) {
	c := kubetest.New()
	c.Serve(widgets, "Widget", kubetest.AllVerbs)
	ns := c.AddNamespace("team-a", time.Hour)
	c.Add(widgets, heldWidget("team-a", "w", "acme.example.com/cleanup", "acme-operator"))
	c.Fail = func(verb string, gvr schema.GroupVersionResource, _, _ string) error {
		switch gvr.Resource {
		case "clusterroles", "clusterrolebindings", "roles", "rolebindings", "deployments", "statefulsets", "daemonsets":
			return apierrors.NewForbidden(gvr.GroupResource(), "", fmt.Errorf("tenant"))
		}
		return nil
	}
	in := New(c.Clients(operator("acme-system", "acme-operator", 1)...), Config{})
	r, err := in.Explain(context.Background(), ns, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := finalizerInfo(t, r, "acme.example.com/cleanup")
	if f.OwnerState.State != diagnose.OwnerUnknown || f.OwnerState.Inferred == nil || f.OwnerState.Inferred.Confidence != owners.None || f.OwnerState.Inferred.RBACRead {
		t.Errorf("owner %+v, inferred %+v", f.OwnerState, f.OwnerState.Inferred)
	}
	var unchecked []string
	for _, u := range r.Unchecked {
		if u.Subject == diagnose.UncheckedRBAC || u.Subject == diagnose.UncheckedWorkloads {
			unchecked = append(unchecked, string(u.Subject)+" "+u.Name)
		}
	}
	slices.Sort(unchecked)
	if want := []string{"RBAC clusterrolebindings", "RBAC clusterroles", "RBAC rolebindings", "RBAC roles", "Workloads named acme-operator"}; !slices.Equal(unchecked, want) {
		t.Errorf("unchecked %q, want %q", unchecked, want)
	}
}

func finalizerInfo(t *testing.T, r diagnose.Report, name string) diagnose.FinalizerInfo {
	t.Helper()
	for _, f := range r.Finalizers {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("%s: no finalizer %s in %+v", r.Namespace.Name, name, r.Finalizers)
	return diagnose.FinalizerInfo{}
}

// The nodes of pods past their grace period are read from their table
// rows (never their spec), each node once: one NotReady since when, one
// gone; a pod still within its grace period is not asked about.
func TestStuckPodsNodes(t *testing.T) {
	c := kubetest.New()
	ns := c.AddNamespace("demo", time.Hour)
	since := metav1.NewTime(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lost"}, Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
		{Type: v1.NodeReady, Status: v1.ConditionUnknown, LastTransitionTime: since}}}}
	grace := int64(30)
	for name, on := range map[string]string{"a": "lost", "b": "lost", "c": "gone", "fresh": "lost"} {
		p := kubetest.Pod("demo", name, on, grace)
		at := metav1.NewTime(time.Now().Add(-time.Minute))
		if name == "fresh" {
			at = metav1.NewTime(time.Now().Add(time.Minute))
		}
		p.SetDeletionTimestamp(&at)
		p.SetDeletionGracePeriodSeconds(&grace)
		c.Add(kubetest.Pods, p)
	}
	in := New(c.Clients(node), Config{})
	r, err := in.Explain(context.Background(), ns, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var stuck []diagnose.StuckPod
	for _, b := range r.Blockers {
		if f, ok := b.Facts.(*diagnose.PodFacts); ok {
			stuck = f.Stuck
		}
	}
	if len(stuck) != 3 || stuck[0].Node != "lost" || stuck[0].NodeState != diagnose.NodeNotReady || !stuck[0].NodeSince.Equal(since.Time) ||
		stuck[2].Node != "gone" || stuck[2].NodeState != diagnose.NodeMissing {
		t.Errorf("stuck pods %+v", stuck)
	}
	if got := c.RequestsMatching("table get"); len(got) != 3 || slices.Contains(got, "table get pods demo/fresh") {
		t.Errorf("table reads %q", got)
	}
	if got := c.RequestsMatching("get nodes"); len(got) != 2 {
		t.Errorf("node reads %q, want each node once", got)
	}
}

// A finalizer the catalogue knows, whose owner's usual workload runs,
// needs no inference: nothing of RBAC is read (explain of a healthy
// operator's namespaces costs what it cost before inference).
func TestNoInferenceWhenTheCatalogueOwnerRuns(t *testing.T) {
	c := kubetest.New()
	c.Serve(widgets, "Widget", kubetest.AllVerbs)
	c.AddNamespace("default", 0)
	ns := c.AddNamespace("team-a", time.Hour)
	c.Add(widgets, heldWidget("team-a", "w", "monitoring.coreos.com/status-cleanup", "prometheus-operator"))
	objects := operator("default", "prometheus-operator", 1)
	in := New(c.Clients(objects...), Config{})
	r, err := in.Explain(context.Background(), ns, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := finalizerInfo(t, r, "monitoring.coreos.com/status-cleanup"); f.OwnerState.State != diagnose.OwnerRunningReady || f.OwnerState.Inferred != nil {
		t.Fatalf("owner %+v", f.OwnerState)
	}
	for _, req := range c.Requests {
		if _, rest, _ := strings.Cut(req, " "); strings.HasPrefix(rest, "clusterrole") || strings.HasPrefix(rest, "role") {
			t.Errorf("RBAC read for an owner the catalogue found running: %s", req)
		}
	}
}

// A finalizer the catalogue knows but whose entry names no workload to
// look for: the cluster shows the one identity that may remove it and
// the Deployment running as it, ready. That is its owner's state
// (Running, from the inference: likely, as a manifest set the finalizer),
// no longer NotChecked; the owner stays the catalogue's.
func TestCatalogueWithoutWorkloadsTakesTheInferredState(t *testing.T) {
	const finalizer = "finalizer.managedresource.crossplane.io"
	c := kubetest.New()
	c.Serve(widgets, "Widget", kubetest.AllVerbs)
	c.AddNamespace("crossplane-system", 0)
	ns := c.AddNamespace("team-a", time.Hour)
	c.Add(widgets, heldWidget("team-a", "w", finalizer, "helm"))
	in := New(c.Clients(operator("crossplane-system", "provider-aws-s3", 1)...), Config{})
	r, err := in.Explain(context.Background(), ns, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := finalizerInfo(t, r, finalizer)
	s := f.OwnerState
	switch {
	case s.State != diagnose.OwnerRunningReady || s.Source() != diagnose.SourceInferred || s.CatalogueState() != diagnose.OwnerNotChecked:
		t.Errorf("state %s from %q (the catalogue's %s), want Running from the inference", s.State, s.Source(), s.CatalogueState())
	case s.Inferred == nil || s.Inferred.Confidence != owners.Likely || s.Workload() == nil || s.Workload().Name != "provider-aws-s3":
		t.Errorf("inferred %+v", s.Inferred)
	case !f.Known || f.OwnerSource != diagnose.SourceCatalogue || f.Owner == "":
		t.Errorf("owner %q from %q, want the catalogue's", f.Owner, f.OwnerSource)
	}
}

// A controller's field manager is often its binary's name: the base name
// of each container's command[0] is read with the workload.
func TestWorkloadOfReadsBinaries(t *testing.T) {
	pod := v1.PodSpec{Containers: []v1.Container{
		{Name: "main", Command: []string{"/usr/local/bin/lockbox-reaper", "--leader-elect"}},
		{Name: "sidecar", Args: []string{"--proxy"}},
	}}
	w := workloadOf("Deployment", metav1.ObjectMeta{Namespace: "ops", Name: "lockbox"}, pod, 1, 1, nil)
	if !slices.Equal(w.Containers, []string{"main", "sidecar"}) || !slices.Equal(w.Binaries, []string{"lockbox-reaper"}) {
		t.Errorf("containers %v, binaries %v", w.Containers, w.Binaries)
	}
}
