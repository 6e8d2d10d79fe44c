package rescue

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pv(policy corev1.PersistentVolumeReclaimPolicy, annotations map[string]string) corev1.PersistentVolume {
	return corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1", Annotations: annotations},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: policy, ClaimRef: &corev1.ObjectReference{Namespace: "shop", Name: "data"}}}
}

// A second rescue finds Retain, which the first one set: the policy
// before is the one the first run kept.
func TestVolumeOfKeepsThePolicyBeforeTheFirstRescue(t *testing.T) {
	first := volumeOf(pv(corev1.PersistentVolumeReclaimDelete, nil))
	if first.Before != "Delete" || first.Now != "Retain" || first.Claim != "data" {
		t.Errorf("first run: %+v", first)
	}
	again := volumeOf(pv(corev1.PersistentVolumeReclaimRetain, map[string]string{ReclaimAnnotation: "Delete"}))
	if again.Before != "Delete" {
		t.Errorf("second run takes %s for the policy before, want Delete", again.Before)
	}
	patch, err := retainPatch(again, "shop")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata struct{ Annotations map[string]string }
		Spec     struct{ PersistentVolumeReclaimPolicy string }
	}
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.PersistentVolumeReclaimPolicy != "Retain" || got.Metadata.Annotations[ReclaimAnnotation] != "Delete" || got.Metadata.Annotations[RescuedAnnotation] != "shop" {
		t.Errorf("patch %s", patch)
	}
}

func TestRestoreCommandGivesBackTheOldPolicy(t *testing.T) {
	v := Volume{Name: "pv-1", Before: "Recycle"}
	want := `kubectl patch pv pv-1 --type=merge -p '{"spec":{"persistentVolumeReclaimPolicy":"Recycle"},"metadata":{"annotations":{"` + ReclaimAnnotation + `":null,"` + RescuedAnnotation + `":null}}}'`
	if got := v.RestoreCommand(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
