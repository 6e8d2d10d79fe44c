package rescue

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// Volume is a PersistentVolume bound to a claim of the namespace.
type Volume struct {
	Name  string `json:"name"`
	Claim string `json:"claim"`
	// Before is the reclaim policy it had before the rescue.
	Before string `json:"reclaimPolicyBefore"`
	// Now is its reclaim policy after this run.
	Now string `json:"reclaimPolicy"`
}

// RestoreCommand gives the volume its old reclaim policy back and drops
// the marks rescue left on it.
func (v Volume) RestoreCommand() string {
	return fmt.Sprintf(`kubectl patch pv %s --type=merge -p '{"spec":{"persistentVolumeReclaimPolicy":"%s"},"metadata":{"annotations":{"%s":null,"%s":null}}}'`,
		v.Name, v.Before, ReclaimAnnotation, RescuedAnnotation)
}

// boundVolumes lists the PersistentVolumes whose claimRef is in namespace,
// sorted by name.
func boundVolumes(ctx context.Context, c *kube.Clients, namespace string) ([]corev1.PersistentVolume, error) {
	list, err := c.Kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	var out []corev1.PersistentVolume
	for _, pv := range list.Items {
		if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == namespace {
			out = append(out, pv)
		}
	}
	slices.SortFunc(out, func(a, b corev1.PersistentVolume) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// volumeOf says what rescue does, or did, to pv: the policy it had before
// comes from the annotation an earlier run left, so a second run does not
// take Retain for the original.
func volumeOf(pv corev1.PersistentVolume) Volume {
	v := Volume{Name: pv.Name, Before: string(pv.Spec.PersistentVolumeReclaimPolicy), Now: string(corev1.PersistentVolumeReclaimRetain)}
	if pv.Spec.ClaimRef != nil {
		v.Claim = pv.Spec.ClaimRef.Name
	}
	if before, ok := pv.Annotations[ReclaimAnnotation]; ok {
		v.Before = before
	}
	return v
}

// retainPatch sets Retain and records the old policy and the namespace;
// an annotation an earlier run left is kept as it is (VolumeOf read it).
func retainPatch(v Volume, namespace string) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{ReclaimAnnotation: v.Before, RescuedAnnotation: namespace}},
		"spec":     map[string]any{"persistentVolumeReclaimPolicy": corev1.PersistentVolumeReclaimRetain},
	})
}

// retainVolume sets pv's reclaim policy to Retain, keeping the old one in an
// annotation, and returns it as changed.
func retainVolume(ctx context.Context, c *kube.Clients, pv corev1.PersistentVolume, namespace string) (Volume, *corev1.PersistentVolume, error) {
	v := volumeOf(pv)
	patch, err := retainPatch(v, namespace)
	if err != nil {
		return v, nil, err
	}
	got, err := c.Kube.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return v, nil, fmt.Errorf("setting PersistentVolume %s to Retain: %w", pv.Name, err)
	}
	return v, got, nil
}

// retainedVolumes are the volumes an earlier rescue of namespace retained
// (release names them, with how to give their policy back).
func retainedVolumes(ctx context.Context, c *kube.Clients, namespace string) ([]Volume, error) {
	list, err := c.Kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	var out []Volume
	for _, pv := range list.Items {
		if pv.Annotations[RescuedAnnotation] == namespace {
			v := volumeOf(pv)
			v.Now = string(pv.Spec.PersistentVolumeReclaimPolicy)
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b Volume) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
