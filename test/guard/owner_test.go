package guard

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestGuardOperatorInItsOwnNamespace: the most common teardown-order
// mistake, caught at `kubectl delete namespace`. An operator nobody
// catalogued runs in the namespace it serves, its finalizer on its object
// put there by its own client; the cluster names it for sure (its field
// manager, and the ServiceAccount RBAC lets remove it, agree), so deny
// refuses, naming the owner that would go with the namespace; and the
// namespace stays Active, its operator running.
func TestGuardOperatorInItsOwnNamespace(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := "guard-ops-" + name[len(name)-5:] + ".example.com"
	finalizer := group + "/cleanup"
	gvr, err := cluster.EnsureCRD(ctx, group, "Gadget", "gadgets")
	must(t, err)
	must(t, cluster.CreateNamespace(ctx, name))
	op, err := cluster.InstallOperator(ctx, name, "gadget-operator", 1,
		rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"gadgets"}, Verbs: []string{"get", "list", "watch", "update", "patch"}})
	must(t, err)
	t.Cleanup(func() { op.Uninstall(context.Background(), cluster) })
	// With a spec, as users create them: an object created with nothing
	// but its name gets no managedFields, and kube-apiserver then records
	// none for later updates either (who set a finalizer is lost).
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "Gadget",
		"metadata": map[string]any{"name": "g1", "namespace": name}, "spec": map[string]any{"size": "small"}}}
	_, err = cluster.Dynamic.Resource(gvr).Namespace(name).Create(ctx, obj, metav1.CreateOptions{})
	must(t, err)
	_, err = op.Client.Dynamic.Resource(gvr).Namespace(name).Patch(ctx, "g1", types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, finalizer)), metav1.PatchOptions{})
	must(t, err)
	t.Cleanup(func() {
		_, _ = cluster.Dynamic.Resource(gvr).Namespace(name).Patch(context.Background(), "g1", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	startGuard(t, cp.Kubeconfig, "--guard=deny")
	r, took := deleteNamespace(t, cp.Kubeconfig, name)
	t.Logf("kubectl delete namespace %s (%s):\n%s%s", name, took.Round(time.Millisecond), r.Stdout, r.Stderr)
	for _, want := range []string{
		`admission webhook "guard.ns-doctor.io" denied the request: ns-doctor guard refuses to delete namespace ` + name,
		"Sure to hold it: OwnerDeletedWithNamespace " + finalizer,
		"Warning: ns-doctor: namespace " + name + " would stick (OwnerDeletedWithNamespace): 1 gadgets." + group + " (g1) wait for " + finalizer +
			"; its owner deployment " + name + "/gadget-operator (certain, from the cluster) runs in this namespace and would be deleted with it",
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("kubectl delete namespace %s: no %q in\n%s", name, want, r.Stderr)
		}
	}
	if r.Code == 0 {
		t.Errorf("kubectl delete namespace %s: exit 0, want refused", name)
	}
	ns, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, name, getOptions)
	must(t, err)
	if ns.DeletionTimestamp != nil {
		t.Errorf("namespace %s is being deleted", name)
	}
}
