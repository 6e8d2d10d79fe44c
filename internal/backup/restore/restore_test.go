package restore

import (
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/backup"
)

// The API server's refusal of a node port another Service holds names the
// port's field; restore reads which ports to give up from it, and from
// nothing else.
func TestTakenNodePorts(t *testing.T) {
	path := field.NewPath("spec", "ports")
	taken := apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web", field.ErrorList{
		field.Invalid(path.Index(1).Child("nodePort"), 30080, "provided port is already allocated"),
		field.Invalid(path.Index(0).Child("port"), 0, "must be between 1 and 65535"),
	})
	if got := takenNodePorts(taken); !reflect.DeepEqual(got, []int{1}) {
		t.Errorf("taken ports %v, want [1]", got)
	}
	other := apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web", field.ErrorList{
		field.Invalid(path.Index(0).Child("nodePort"), 80, "provided port is not in the valid range"),
	})
	for _, err := range []error{nil, other, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "web", nil)} {
		if got := takenNodePorts(err); len(got) != 0 {
			t.Errorf("%v: taken ports %v, want none", err, got)
		}
	}
	svc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"ports": []any{
		map[string]any{"port": int64(80), "nodePort": int64(30080)}, map[string]any{"port": int64(443), "nodePort": int64(30443)}}}}}
	dropNodePorts(svc, []int{1})
	if got := nodePorts(svc); !reflect.DeepEqual(got, []int64{30080, 0}) {
		t.Errorf("node ports after dropping the second: %v", got)
	}
}

// An owner reference points at the restored owner's new uid; one whose
// owner was not applied is dropped and said.
func TestMapOwners(t *testing.T) {
	a := &applier{uids: map[string]types.UID{"old-db": "new-db"}}
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetOwnerReferences([]metav1.OwnerReference{
		{Kind: "Database", Name: "main", UID: "old-db", Controller: ptr.To(true)},
		{Kind: "Widget", Name: "w", UID: "old-widget"},
	})
	notes := a.mapOwners(obj)
	refs := obj.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != "new-db" || len(notes) != 1 {
		t.Errorf("owners %+v, notes %v", refs, notes)
	}
}

// What runs, and what is applied onto the default account, waits for the
// ServiceAccount controller; nothing else does.
func TestNeedsAccount(t *testing.T) {
	for step, want := range map[string]bool{"pods": true, "deployments.apps": true, "configmaps": false, "widgets.example.com": false} {
		gr := schema.ParseGroupResource(step)
		s := backup.Step{Entry: backup.Entry{Group: gr.Group, Resource: gr.Resource}, Rule: "as-saved"}
		if got := needsAccount(s); got != want {
			t.Errorf("%s waits: %v, want %v", step, got, want)
		}
	}
	if !needsAccount(backup.Step{Entry: backup.Entry{Resource: "serviceaccounts"}, Rule: "default-serviceaccount-additions"}) {
		t.Error("the default account's additions do not wait for it")
	}
}

// Runs applied together: one stage of the order each, cut before a step
// whose owner is in the run; every step once, in the plan's order.
func TestBatchesKeepTheOrderAndOwnersFirst(t *testing.T) {
	step := func(resource, name, uid, owner string) backup.Step {
		s := backup.Step{Entry: backup.Entry{Resource: resource, Name: name, UID: uid}, Verdict: backup.Restore,
			Object: &unstructured.Unstructured{Object: map[string]any{}}}
		if owner != "" {
			s.Object.SetOwnerReferences([]metav1.OwnerReference{{Kind: "ConfigMap", Name: owner, UID: types.UID(owner)}})
		}
		return s
	}
	steps := []backup.Step{
		step("serviceaccounts", "app", "sa", ""),
		step("configmaps", "a", "a", ""), step("secrets", "s", "s", ""), step("configmaps", "b", "b", ""),
		step("configmaps", "owned-by-a", "c", "a"), step("secrets", "t", "t", ""),
		step("services", "web", "web", ""),
		step("pods", "p", "p", ""),
	}
	var got [][]string
	for _, run := range batches(steps) {
		var names []string
		for _, s := range run {
			names = append(names, s.Name)
		}
		got = append(got, names)
	}
	want := [][]string{{"app"}, {"a", "s", "b"}, {"owned-by-a", "t"}, {"web"}, {"p"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}
