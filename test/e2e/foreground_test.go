package e2e

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// fleetMember makes a cluster-scoped Fleet, and in a new namespace a
// ConfigMap held by its own finalizer whose owner reference names the
// fleet (blocking its deletion or not); then deletes the fleet in the
// foreground and the namespace, and waits for the controller to count
// what remains. It returns the namespace and the fleet's name.
func fleetMember(t *testing.T, blocks bool) (string, string) {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	fleets, err := cluster.EnsureClusterCRD(ctx, "fleet.example.org", "Fleet", "fleets")
	plugintest.Must(t, err)
	fleet := "f-" + name
	f, err := cluster.Dynamic.Resource(fleets).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fleet.example.org/v1", "kind": "Fleet", "metadata": map[string]any{"name": fleet}}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() {
		_, _ = cluster.Dynamic.Resource(fleets).Patch(context.Background(), fleet, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	_, err = cluster.Kube.CoreV1().ConfigMaps(name).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "member", Finalizers: []string{"example.com/hold"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "fleet.example.org/v1", Kind: "Fleet", Name: fleet, UID: f.GetUID(), BlockOwnerDeletion: ptr.To(blocks)}},
	}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), name, "member") })
	plugintest.Must(t, cluster.Dynamic.Resource(fleets).Delete(ctx, fleet, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	return name, fleet
}

// Class 10: a held ConfigMap blocks a cluster-scoped owner deleted in the
// foreground (blockOwnerDeletion): the owner is not in the namespace, and
// waits on it too. The report says so, and that releasing it lets the
// owner go: the whole chain, not only the namespace's end of it.
func TestOwnerDeletedInTheForegroundWaitsOnAHeldObject(t *testing.T) {
	name, fleet := fleetMember(t, true)
	e := explain(t, cp.Kubeconfig, name)
	e.agrees(t)
	e.blocker(t, diagnose.BlockerFinalizers, "fleets.fleet.example.org/"+fleet+" (cluster-scoped, not deleted with the namespace) is being deleted in the foreground and waits on configmaps/member too (blockOwnerDeletion): releasing it lets fleets.fleet.example.org/"+fleet+" go as well",
		"--remove-finalizers=example.com/hold")
}

// The counter-example: the same owner deleted in the foreground, but the
// ConfigMap's reference does not block its deletion: the owner does not
// wait on it, and nothing says it does.
func TestOwnerNotBlockedByAHeldObject(t *testing.T) {
	name, fleet := fleetMember(t, false)
	e := explain(t, cp.Kubeconfig, name)
	b := e.blocker(t, diagnose.BlockerFinalizers, "example.com/hold on 1 of 1 configmaps", "--remove-finalizers=example.com/hold")
	if strings.Contains(strings.Join(b.Evidence, "\n"), "is being deleted in the foreground") || strings.Contains(e.human, fleet) {
		t.Errorf("an owner said to wait on what does not block it: %+v", b.Evidence)
	}
}
