package rescue

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Re-applied in dependency order: identities and their rights, then
// configuration, claims, services, workloads, then everything else.
func TestRestoreOrder(t *testing.T) {
	files := []string{"objects/widgets.example.com.json", "objects/deployments.apps.json", "objects/secrets.core.json",
		"objects/rolebindings.rbac.authorization.k8s.io.json", "objects/serviceaccounts.core.json", "objects/persistentvolumeclaims.core.json"}
	slices.SortStableFunc(files, func(a, b string) int { return rank(a) - rank(b) })
	want := []string{"objects/serviceaccounts.core.json", "objects/rolebindings.rbac.authorization.k8s.io.json", "objects/secrets.core.json",
		"objects/persistentvolumeclaims.core.json", "objects/deployments.apps.json", "objects/widgets.example.com.json"}
	if !slices.Equal(files, want) {
		t.Errorf("order %v, want %v", files, want)
	}
	if r, g := typeOf("x/objects/configmaps.core.json"); r != "configmaps" || g != "" {
		t.Errorf("core: %q %q", r, g)
	}
	if r, g := typeOf("widgets.example.com.json"); r != "widgets" || g != "example.com" {
		t.Errorf("group: %q %q", r, g)
	}
}

// What the server set on the saved copy, and would refuse or give another
// value, is dropped; the rest stays.
func TestWithoutServerSet(t *testing.T) {
	svc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"clusterIP": "10.0.0.7", "clusterIPs": []any{"10.0.0.7"}, "ports": []any{map[string]any{"port": int64(80)}}}}}
	withoutServerSet("services", svc)
	if _, ok := svc.Object["spec"].(map[string]any)["clusterIP"]; ok || svc.Object["spec"].(map[string]any)["ports"] == nil {
		t.Errorf("service %v", svc.Object)
	}
	pvc := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		"pv.kubernetes.io/bind-completed": "yes", "team": "a"}}, "spec": map[string]any{"volumeName": "pv-1"}}}
	withoutServerSet("persistentvolumeclaims", pvc)
	if a := pvc.GetAnnotations(); a["team"] != "a" || a["pv.kubernetes.io/bind-completed"] != "" || pvc.Object["spec"].(map[string]any)["volumeName"] != "pv-1" {
		t.Errorf("claim %v", pvc.Object)
	}
	r := &RestoreReport{Objects: []RestoredObject{{Status: Restored}, {Status: Failed}, {Status: LeftOut}, {Status: Failed}}}
	if r.Failed() != 2 {
		t.Errorf("failed %d", r.Failed())
	}
}
