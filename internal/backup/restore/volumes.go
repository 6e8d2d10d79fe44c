package restore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// claimVolumes are the saved claims' volumes: claim name to volume name.
func claimVolumes(objs []backup.SavedObject) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		if o.Record || o.GroupResource() != (corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims").GroupResource()) {
			continue
		}
		if v, _, _ := unstructured.NestedString(o.Object.Object, "spec", "volumeName"); v != "" {
			out[o.Name] = v
		}
	}
	return out
}

// volumeFacts reads what the cluster says of each volume a saved claim
// names: gone, or held by a claim other than the one restored into into.
func volumeFacts(ctx context.Context, c *kube.Clients, f *backup.Folder, into string) (map[string]backup.VolumeFact, error) {
	out := map[string]backup.VolumeFact{}
	for claim, volume := range claimVolumes(f.Objects) {
		pv, err := c.Kube.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			out[volume] = backup.VolumeFact{Unusable: "is gone"}
			continue
		case err != nil:
			return nil, fmt.Errorf("reading PersistentVolume %s (claim %s): %w", volume, claim, err)
		case pv.DeletionTimestamp != nil:
			out[volume] = backup.VolumeFact{Unusable: "is being deleted"}
			continue
		case pv.Status.Phase == corev1.VolumeFailed:
			out[volume] = backup.VolumeFact{Unusable: "failed (" + pv.Status.Message + ")"}
			continue
		}
		holder, err := holderOf(ctx, c, pv)
		if err != nil {
			return nil, err
		}
		if holder != "" && holder != into+"/"+claim {
			out[volume] = backup.VolumeFact{Unusable: "is bound to " + holder}
		}
	}
	return out, nil
}

// holderOf is the live claim ("namespace/name") a volume is bound to, or
// "" when the claim its claimRef names is gone (a Released volume).
func holderOf(ctx context.Context, c *kube.Clients, pv *corev1.PersistentVolume) (string, error) {
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return "", nil
	}
	claim, err := c.Kube.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the claim %s/%s of PersistentVolume %s: %w", ref.Namespace, ref.Name, pv.Name, err)
	}
	if ref.UID != "" && claim.UID != ref.UID {
		return "", nil // another claim of that name: the volume's is gone
	}
	return ref.Namespace + "/" + ref.Name, nil
}

// rebind lets each volume a restored claim names bind to it: its claimRef
// still names the old claim (its uid, and for a clone its namespace),
// which no new claim matches; pointed at the new claim's name with no
// uid, the PV binder binds them.
func (r *Restorer) rebind(ctx context.Context, p *backup.Plan) error {
	for _, s := range p.Steps {
		if s.Verdict != backup.Restore || s.Resource != "persistentvolumeclaims" || s.Group != "" {
			continue
		}
		volume, _, _ := unstructured.NestedString(s.Object.Object, "spec", "volumeName")
		if volume == "" {
			continue
		}
		pv, err := r.Clients.Kube.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading PersistentVolume %s: %w", volume, err)
		}
		ref := pv.Spec.ClaimRef
		if ref != nil && ref.Namespace == p.Into && ref.Name == s.Name && (ref.UID == "" || pv.Status.Phase == corev1.VolumeBound) {
			continue // ready to bind, or bound: a restore run again
		}
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"claimRef": map[string]any{
			"namespace": p.Into, "name": s.Name, "uid": nil, "resourceVersion": nil}}})
		if err != nil {
			return err
		}
		if _, err := r.Clients.Kube.CoreV1().PersistentVolumes().Patch(ctx, volume, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("letting PersistentVolume %s bind to %s/%s: %w", volume, p.Into, s.Name, err)
		}
	}
	return nil
}

// givePoliciesBack gives each volume a rescue retained for the saved
// namespace its old reclaim policy back, once its claim is bound to it
// again (waiting up to Wait): a volume whose claim is not bound stays
// Retain, with why and the command for later, so its data is never one
// step from deletion while no claim holds it.
func (r *Restorer) givePoliciesBack(ctx context.Context, p *backup.Plan) ([]Volume, error) {
	list, err := r.Clients.Kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	out := []Volume{}
	for _, pv := range list.Items {
		if pv.Annotations[backup.RetainedForAnnotation] != p.From || pv.Spec.ClaimRef == nil {
			continue
		}
		v := Volume{Name: pv.Name, Claim: p.Into + "/" + pv.Spec.ClaimRef.Name, Before: pv.Annotations[backup.ReclaimAnnotation],
			Now: string(pv.Spec.PersistentVolumeReclaimPolicy)}
		if v.Before == "" {
			v.Before = v.Now
		}
		phase, bound := r.waitBound(ctx, p.Into, pv.Spec.ClaimRef.Name, pv.Name)
		if !bound {
			v.Why = fmt.Sprintf("its claim %s is not bound to it (%s): it stays %s so its data is not deleted", v.Claim, phase, v.Now)
			v.Command = GiveBackCommand(pv.Name, v.Before)
			out = append(out, v)
			continue
		}
		v.Bound = true
		if err := giveBack(ctx, r.Clients, pv.Name, v.Before); err != nil {
			return out, err
		}
		v.Now = v.Before
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Volume) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// waitBound waits until claim namespace/name is Bound to volume, and
// says its phase when it is not.
func (r *Restorer) waitBound(ctx context.Context, namespace, name, volume string) (string, bool) {
	phase := "not there"
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, r.Wait, true, func(ctx context.Context) (bool, error) {
		claim, err := r.Clients.Kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = string(claim.Status.Phase)
		if claim.Spec.VolumeName != volume && claim.Spec.VolumeName != "" {
			phase = "bound to " + claim.Spec.VolumeName
			return true, nil // bound elsewhere: waiting will not change it
		}
		return claim.Status.Phase == corev1.ClaimBound && claim.Spec.VolumeName == volume, nil
	})
	if err != nil || phase != string(corev1.ClaimBound) {
		return phase, false
	}
	return phase, true
}

// giveBack sets a volume's reclaim policy and drops rescue's marks.
func giveBack(ctx context.Context, c *kube.Clients, name, policy string) error {
	patch, err := json.Marshal(map[string]any{
		"spec":     map[string]any{"persistentVolumeReclaimPolicy": policy},
		"metadata": map[string]any{"annotations": map[string]any{backup.ReclaimAnnotation: nil, backup.RetainedForAnnotation: nil}},
	})
	if err != nil {
		return err
	}
	if _, err := c.Kube.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("giving PersistentVolume %s its reclaim policy %s back: %w", name, policy, err)
	}
	return nil
}

// GiveBackCommand gives a volume its old reclaim policy back by hand and
// drops the marks rescue left on it.
func GiveBackCommand(volume, policy string) string {
	return fmt.Sprintf(`kubectl patch pv %s --type=merge -p '{"spec":{"persistentVolumeReclaimPolicy":"%s"},"metadata":{"annotations":{"%s":null,"%s":null}}}'`,
		volume, policy, backup.ReclaimAnnotation, backup.RetainedForAnnotation)
}
