package distribution

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// userWithRole applies docs/rbac/<file> as it is and returns the
// kubeconfig of a new user bound to that ClusterRole and nothing else
// (besides what every authenticated user has).
func userWithRole(t *testing.T, file string) string {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "rbac", file))
	plugintest.Must(t, err)
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatalf("docs/rbac/%s: %v", file, err)
	}
	roles := cluster.Kube.RbacV1().ClusterRoles()
	if _, err := roles.Create(ctx, &role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		existing, err := roles.Get(ctx, role.Name, metav1.GetOptions{})
		plugintest.Must(t, err)
		role.ResourceVersion = existing.ResourceVersion
		_, err = roles.Update(ctx, &role, metav1.UpdateOptions{})
		plugintest.Must(t, err)
	} else {
		plugintest.Must(t, err)
	}
	user := plugintest.UniqueName(t)
	_, err = cluster.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	_, kubeconfig, err := cp.MintUser(user)
	plugintest.Must(t, err)
	return kubeconfig
}

// comparable is what explain's verdict and evidence rest on, without
// wording that carries ages (which move between two runs).
type comparable struct {
	State     diagnose.State         `json:"state"`
	Blockers  []diagnose.BlockerKind `json:"blockers"`
	Content   []json.RawMessage      `json:"content"`
	Discovery json.RawMessage        `json:"discovery"`
	Unchecked []string               `json:"unchecked"`
	// Owners are each finalizer's owner state (name=state: evidence).
	Owners []string `json:"owners"`
	// Holders and Events are what the report quotes of them.
	Holders json.RawMessage `json:"holders"`
	Events  []string        `json:"events"`
}

func explainJSON(t *testing.T, kubeconfig, name string) (comparable, plugintest.Result) {
	t.Helper()
	r := plugin.Kubectl(t, kubeconfig, "ns-doctor", "explain", name, "-o", "json")
	var raw struct {
		Verdict struct {
			State diagnose.State `json:"state"`
		} `json:"verdict"`
		Blockers []struct {
			Kind diagnose.BlockerKind `json:"kind"`
		} `json:"blockers"`
		Content    []map[string]any `json:"content"`
		Discovery  json.RawMessage  `json:"discovery"`
		Unchecked  []string         `json:"unchecked"`
		Finalizers []struct {
			Name       string `json:"name"`
			OwnerState struct {
				State    string `json:"state"`
				Evidence string `json:"evidence"`
			} `json:"ownerState"`
		} `json:"finalizers"`
		Holders json.RawMessage `json:"holders"`
		Events  []struct {
			Object  string `json:"object"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &raw); err != nil {
		t.Fatalf("explain %s -o json: exit %d, %v\nstdout:\n%s\nstderr:\n%s", name, r.Code, err, r.Stdout, r.Stderr)
	}
	c := comparable{State: raw.Verdict.State, Discovery: raw.Discovery, Unchecked: raw.Unchecked, Holders: raw.Holders}
	for _, b := range raw.Blockers {
		c.Blockers = append(c.Blockers, b.Kind)
	}
	slices.Sort(c.Blockers)
	for _, f := range raw.Finalizers {
		c.Owners = append(c.Owners, fmt.Sprintf("%s=%s: %s", f.Name, f.OwnerState.State, f.OwnerState.Evidence))
	}
	for _, e := range raw.Events {
		c.Events = append(c.Events, e.Object+" "+e.Reason+": "+e.Message)
	}
	for _, item := range raw.Content {
		delete(item, "oldestDeletion")
		line, err := json.Marshal(item)
		plugintest.Must(t, err)
		c.Content = append(c.Content, line)
	}
	return c, r
}

func (c comparable) String() string {
	b, _ := json.MarshalIndent(c, "", "  ")
	return string(b)
}

// A user bound only to docs/rbac/explain-clusterrole.yaml gets the report an
// admin gets on a namespace stuck in every way explain reads about: custom
// resources and ConfigMaps held by finalizers (counted in the content, the
// custom resources' status read), one of them a catalogued finalizer whose
// owner is looked for among StatefulSets, a Warning event, an aggregated API
// whose Service is missing, and a fail-closed webhook on the namespace's
// content. --wait (a watch on namespaces) and --orphans (every namespaced
// type listed in all namespaces) run without a permission error.
func TestExplainClusterRoleSuffices(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "example.com", "Widget", "widgets")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Widget", name, "held", "example.com/cleanup"))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Widget", name, "app", "resources-finalizer.argocd.argoproj.io"))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
	event := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "held.1", Namespace: name}, Type: v1.EventTypeWarning, Reason: "CleanupFailed",
		Message: "widget held: access denied", InvolvedObject: v1.ObjectReference{Kind: "Widget", Name: "held", Namespace: name}, Count: 2,
		LastTimestamp: metav1.Now()}
	_, err = cluster.Kube.CoreV1().Events(name).Create(ctx, event, metav1.CreateOptions{})
	plugintest.Must(t, err)
	apiService, err := cluster.BrokenAPIService(ctx, name+".example.org", "v1", "kube-system", "gone-"+name)
	plugintest.Must(t, err)
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), apiService) })
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	plugintest.Must(t, cluster.FailClosedWebhook(ctx, name, name, "kube-system", "guard-"+name, configMaps))
	t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), name) })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))

	kubeconfig := userWithRole(t, "explain-clusterrole.yaml")
	// The verdict may move with time (grace periods): accept the user's
	// report once an admin's report just before and just after agree.
	var admin, user comparable
	var userRun plugintest.Result
	for attempt := 0; attempt < 3; attempt++ {
		before, _ := explainJSON(t, cp.Kubeconfig, name)
		user, userRun = explainJSON(t, kubeconfig, name)
		admin, _ = explainJSON(t, cp.Kubeconfig, name)
		if before.String() == admin.String() {
			break
		}
	}
	if user.String() != admin.String() {
		t.Errorf("the explain role's report differs from an admin's:\nuser:\n%s\nadmin:\n%s\nuser's stderr:\n%s", user, admin, userRun.Stderr)
	}
	for _, res := range []string{"widgets", "configmaps"} {
		if !strings.Contains(fmt.Sprintf("%s", user.Content), `"resource":"`+res+`"`) {
			t.Errorf("the report does not count %s:\n%s", res, user)
		}
	}
	for _, want := range []diagnose.BlockerKind{diagnose.BlockerAPIServiceUnavailable, diagnose.BlockerWebhook} {
		if !slices.Contains(admin.Blockers, want) {
			t.Errorf("the scenario does not exercise %s: blockers %v", want, admin.Blockers)
		}
	}
	if slices.Contains(user.Blockers, diagnose.BlockerForbidden) || len(user.Unchecked) > 0 || strings.Contains(userRun.Stdout, "forbidden") {
		t.Errorf("the explain role misses permissions:\n%s", userRun.Stdout)
	}
	if user.State != diagnose.StateStuck || userRun.Code != 3 {
		t.Errorf("verdict %q, exit %d; want stuck, 3", user.State, userRun.Code)
	}
	if !strings.Contains(strings.Join(admin.Owners, "\n"), "resources-finalizer.argocd.argoproj.io="+string(diagnose.OwnerNotFound)) || len(admin.Events) != 1 {
		t.Errorf("the scenario does not exercise owner detection or events: owners %v, events %v", admin.Owners, admin.Events)
	}

	// --wait watches the namespaces; it ends with the report, exit 3.
	w := plugin.Kubectl(t, kubeconfig, "ns-doctor", "explain", name, "--wait=3s")
	if w.Code != 3 || !strings.Contains(w.Stderr, "still there after --wait=3s") || strings.Contains(w.Stderr, "forbidden") {
		t.Errorf("explain --wait as the explain role: exit %d\n%s", w.Code, w.Stderr)
	}
	// --orphans lists every namespaced type in all namespaces.
	orphans := func(kubeconfig string) (diagnose.OrphanReport, plugintest.Result) {
		r := plugin.Kubectl(t, kubeconfig, "ns-doctor", "explain", "--orphans", "-o", "json")
		var out diagnose.OrphanReport
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || (r.Code != 0 && r.Code != 3) {
			t.Fatalf("explain --orphans: exit %d, %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
		}
		return out, r
	}
	userOrphans, r := orphans(kubeconfig)
	adminOrphans, _ := orphans(cp.Kubeconfig)
	if len(userOrphans.Unchecked) > 0 || len(userOrphans.Namespaces) != len(adminOrphans.Namespaces) {
		t.Errorf("explain --orphans as the explain role: %d former namespaces (admin: %d), unchecked %v\n%s",
			len(userOrphans.Namespaces), len(adminOrphans.Namespaces), userOrphans.Unchecked, r.Stderr)
	}
}

// A user bound only to docs/rbac/purge-clusterrole.yaml finishes deletions
// on a cluster with no namespace controller: a terminating namespace whose
// content is held by finalizers, an Active one (--delete-namespace), and
// the leftovers of a namespace finalized by hand (--orphans, whose strips
// re-create the namespace). The explain role alone is refused before
// anything changes, so the test does prove the purge role's grants.
func TestPurgeClusterRoleSuffices(t *testing.T) {
	ctx := context.Background()
	gvr, err := cluster.EnsureCRD(ctx, "example.com", "Widget", "widgets")
	plugintest.Must(t, err)
	content := func(name string) {
		plugintest.Must(t, cluster.CreateNamespace(ctx, name))
		plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Widget", name, "held", "example.com/cleanup"))
		plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
		plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "plain", nil))
		plugintest.Must(t, cluster.CreateBoundPod(ctx, name, "orphan", 0))
	}
	stuck, active, former := plugintest.UniqueName(t)+"-stuck", plugintest.UniqueName(t)+"-active", plugintest.UniqueName(t)+"-former"
	content(stuck)
	content(active)
	plugintest.Must(t, cluster.DeleteNamespace(ctx, stuck))
	plugintest.Must(t, cluster.CreateNamespace(ctx, former))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, former, "held", nil, "example.com/hold"))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, former, "plain", nil))
	plugintest.Must(t, cluster.ForceFinalize(ctx, former))

	reader := userWithRole(t, "explain-clusterrole.yaml")
	for _, ns := range []string{stuck, former} {
		args := []string{"ns-doctor", "purge", ns, "--force", "--yes", "--remove-all-finalizers", "--backup-dir", t.TempDir()}
		if ns == former {
			args = append(args, "--orphans")
		}
		r := plugin.Kubectl(t, reader, args...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "permission(s)") {
			t.Fatalf("the explain role alone was not refused (%s): exit %d\n%s\n%s", ns, r.Code, r.Stdout, r.Stderr)
		}
	}

	purger := userWithRole(t, "purge-clusterrole.yaml")
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{stuck, nil},
		{active, []string{"--delete-namespace"}},
		{former, []string{"--orphans"}},
	} {
		backup := t.TempDir()
		args := append([]string{"ns-doctor", "purge", tc.name, "--force", "--yes", "--remove-all-finalizers", "--backup-dir", backup, "--timeout", "2m"}, tc.extra...)
		r := plugin.Kubectl(t, purger, args...)
		if r.Code != 0 {
			t.Errorf("purge %s as the purge role: exit %d\nstdout:\n%s\nstderr:\n%s", tc.name, r.Code, r.Stdout, r.Stderr)
			continue
		}
		if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, tc.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s still there after purge: %v", tc.name, err)
		}
		if entries, err := os.ReadDir(backup); err != nil || len(entries) == 0 {
			t.Errorf("nothing backed up in %s: %v", backup, err)
		}
	}
	if left := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", "--orphans", former); left.Code != 0 {
		t.Errorf("leftovers of %s after purge --orphans as the purge role: exit %d\n%s", former, left.Code, left.Stdout)
	}
}
