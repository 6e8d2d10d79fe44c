package rescue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// BackupAnnotation names, on a hold's policy, the folder rescue saved the
// namespace to: --restore finds it there while the hold stands.
const BackupAnnotation = "ns-doctor.io/backup-dir"

// ErrNotABackup: --restore's folder holds no rescue's copy of the
// namespace.
var ErrNotABackup = errors.New("not a rescue's backup")

// ErrStillTerminating: the namespace is still being deleted when restore's
// wait ends; nothing was re-created.
var ErrStillTerminating = errors.New("namespace still terminating")

// RestoreStatus is what became of one saved object.
type RestoreStatus string

// Restore statuses.
const (
	Restored RestoreStatus = "Restored"
	LeftOut  RestoreStatus = "LeftOut"
	Failed   RestoreStatus = "Failed"
)

// RestoredObject is one saved object and what became of it.
type RestoredObject struct {
	Resource string        `json:"resource"`
	Name     string        `json:"name"`
	Status   RestoreStatus `json:"status"`
	// Why says why it was left out, or the API server's answer.
	Why string `json:"why,omitempty"`
}

// RestoreReport is what --restore did.
type RestoreReport struct {
	Namespace string `json:"namespace"`
	Dir       string `json:"dir"`
	// WasHeld: the hold was there, and was released first.
	WasHeld bool `json:"wasHeld"`
	// Recreated: the namespace was created again with its labels and
	// annotations.
	Recreated bool             `json:"recreated"`
	Objects   []RestoredObject `json:"objects"`
	// Volumes are the retained volumes, bound again and given their old
	// reclaim policy back.
	Volumes []Volume `json:"volumes"`
}

// Failed counts the objects that could not be restored.
func (r *RestoreReport) Failed() int {
	n := 0
	for _, o := range r.Objects {
		if o.Status == Failed {
			n++
		}
	}
	return n
}

// BackupDirOf is the folder the hold of namespace names, empty when there
// is no hold (or it names none).
func BackupDirOf(ctx context.Context, c *kube.Clients, namespace string) string {
	p, err := c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, HoldName(namespace), metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return p.Annotations[BackupAnnotation]
}

// PrepareRestore checks what restore needs before anything changes: the
// backup is a rescue's of namespace, and the caller may do every write
// restore sends (a *access.MissingError names what it may not). It returns
// the report RestoreSteps fills.
func PrepareRestore(ctx context.Context, c *kube.Clients, namespace, dir string) (*RestoreReport, error) {
	if _, err := savedNamespace(dir, namespace); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotABackup, err)
	}
	needs, err := restoreNeeds(dir, namespace)
	if err != nil {
		return nil, err
	}
	if err := check(ctx, c, needs); err != nil {
		return nil, err
	}
	return &RestoreReport{Namespace: namespace, Dir: dir, Objects: []RestoredObject{}}, nil
}

// restoreNeeds are restore's writes: the hold's removal, the namespace,
// the volumes, and a server-side apply (create and patch) of every type
// the backup holds, in the namespace.
func restoreNeeds(dir, namespace string) ([]access.Permission, error) {
	needs := policyPermissions("delete")
	for _, v := range []string{"get", "create", "patch"} {
		needs = append(needs, access.Permission{Verb: v, Resource: "namespaces"})
	}
	needs = append(needs, access.Permission{Verb: "list", Resource: "persistentvolumes"}, access.Permission{Verb: "patch", Resource: "persistentvolumes"})
	files, err := filepath.Glob(filepath.Join(dir, "objects", "*.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		resource, group := typeOf(f)
		for _, v := range []string{"create", "patch"} {
			needs = append(needs, access.Permission{Verb: v, Group: group, Resource: resource, Namespace: namespace})
		}
	}
	return needs, nil
}

// RestoreStep is a stage of a restore, told as it ends: a restore killed
// half-way has said how far it got, and the next run finishes it.
type RestoreStep string

// The steps, in order.
const (
	// StepReleased: the hold is gone (or was not there).
	StepReleased RestoreStep = "Released"
	// StepRecreated: the namespace is there again, with its labels and
	// annotations.
	StepRecreated RestoreStep = "Recreated"
	// StepReapplied: every saved object was applied (Objects says how).
	StepReapplied RestoreStep = "Reapplied"
	// StepGivenBack: the volumes have their reclaim policy back.
	StepGivenBack RestoreStep = "GivenBack"
)

// RestoreSteps releases the hold, waits up to wait for the namespace to be
// gone, creates it again and re-applies what rescue saved in dir, in
// dependency order, then gives the volumes their old reclaim policy back.
// Every step can run again: a restore killed half-way is finished by the
// next.
// It fills r, PrepareRestore's; step (when not nil) is called as each step
// ends, with the report so far.
func RestoreSteps(ctx context.Context, c *kube.Clients, r *RestoreReport, wait time.Duration, step func(RestoreStep, *RestoreReport)) error {
	namespace, dir := r.Namespace, r.Dir
	done := func(s RestoreStep) {
		if step != nil {
			step(s, r)
		}
	}
	ns, err := savedNamespace(dir, namespace)
	if err != nil {
		return err
	}
	if r.WasHeld, err = removePolicy(ctx, c, HoldName(namespace)); err != nil {
		return err
	}
	done(StepReleased)
	if err := waitGone(ctx, c, namespace, wait); err != nil {
		return err
	}
	if r.Recreated, err = recreateNamespace(ctx, c, ns); err != nil {
		return err
	}
	done(StepRecreated)
	if err := rebindVolumes(ctx, c, namespace); err != nil {
		return err
	}
	if r.Objects, err = reapply(ctx, c, namespace, dir); err != nil {
		return err
	}
	done(StepReapplied)
	if r.Volumes, err = giveBackPolicies(ctx, c, namespace); err != nil {
		return err
	}
	done(StepGivenBack)
	return nil
}

// savedNamespace reads the namespace rescue saved: its labels and
// annotations come back with it.
func savedNamespace(dir, namespace string) (*unstructured.Unstructured, error) {
	path := filepath.Join(dir, "cluster", "namespaces.core_"+namespace+".yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the saved namespace (is %s a rescue's backup of %s?): %w", dir, namespace, err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// waitGone waits until the namespace is gone; a namespace that is there
// and not terminating is one someone made again: restore goes on into it.
func waitGone(ctx context.Context, c *kube.Clients, namespace string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("reading namespace %s: %w", namespace, err)
		case ns.DeletionTimestamp == nil:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%w after %s: the hold is released; see what holds it with 'kubectl ns-doctor explain %s', then run --restore again", ErrStillTerminating, wait, namespace)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// recreateNamespace creates the namespace with its saved labels and
// annotations (server-side apply: a second restore changes nothing).
func recreateNamespace(ctx context.Context, c *kube.Clients, saved *unstructured.Unstructured) (bool, error) {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
	obj.SetName(saved.GetName())
	obj.SetLabels(saved.GetLabels())
	obj.SetAnnotations(saved.GetAnnotations())
	_, err := apply(ctx, c, corev1.SchemeGroupVersion.WithResource("namespaces"), "", obj)
	if err != nil {
		return false, fmt.Errorf("creating namespace %s again: %w", saved.GetName(), err)
	}
	return true, nil
}

// rebindVolumes lets each volume rescue retained for namespace bind again:
// its claimRef still names the deleted claim's uid, which no new claim
// has; without it the PV binder binds the claim of that name.
func rebindVolumes(ctx context.Context, c *kube.Clients, namespace string) error {
	list, err := c.Kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	for _, pv := range list.Items {
		ref := pv.Spec.ClaimRef
		if pv.Annotations[RescuedAnnotation] != namespace || ref == nil || ref.UID == "" {
			continue
		}
		patch := []byte(`{"spec":{"claimRef":{"uid":null,"resourceVersion":null}}}`)
		if _, err := c.Kube.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("letting PersistentVolume %s bind again: %w", pv.Name, err)
		}
	}
	return nil
}

// giveBackPolicies gives each retained volume its old reclaim policy back
// and drops rescue's marks.
func giveBackPolicies(ctx context.Context, c *kube.Clients, namespace string) ([]Volume, error) {
	vols, err := retainedVolumes(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	out := []Volume{}
	for _, v := range vols {
		patch, err := json.Marshal(map[string]any{
			"spec":     map[string]any{"persistentVolumeReclaimPolicy": v.Before},
			"metadata": map[string]any{"annotations": map[string]any{ReclaimAnnotation: nil, RescuedAnnotation: nil}},
		})
		if err != nil {
			return out, err
		}
		if _, err := c.Kube.CoreV1().PersistentVolumes().Patch(ctx, v.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return out, fmt.Errorf("giving PersistentVolume %s its reclaim policy %s back: %w", v.Name, v.Before, err)
		}
		v.Now = v.Before
		out = append(out, v)
	}
	return out, nil
}

// restoreOrder is the order types are re-applied in: what others refer to
// first (identities and their rights, configuration, claims, services),
// then what runs, then everything else (custom resources).
var restoreOrder = []string{
	"serviceaccounts", "roles.rbac.authorization.k8s.io", "rolebindings.rbac.authorization.k8s.io",
	"configmaps", "secrets", "persistentvolumeclaims", "services",
	"deployments.apps", "statefulsets.apps", "daemonsets.apps", "replicasets.apps", "jobs.batch", "cronjobs.batch", "pods",
}

// madeByTheCluster are objects a namespace gets without anyone applying
// them: applying the saved copy would fight their controller.
var madeByTheCluster = map[string]string{
	"serviceaccounts/default":     "the ServiceAccount controller creates it in every namespace",
	"configmaps/kube-root-ca.crt": "the root CA publisher creates it in every namespace",
}

// reapply applies every saved object of dir/objects in restoreOrder, and
// says what became of each, and of what dir/record holds (left out).
func reapply(ctx context.Context, c *kube.Clients, namespace, dir string) ([]RestoredObject, error) {
	files, err := filepath.Glob(filepath.Join(dir, "objects", "*.json"))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b string) int { return rank(a) - rank(b) })
	out := []RestoredObject{}
	for _, f := range files {
		resource, group := typeOf(f)
		objs, err := backup.ObjectsIn(f)
		if err != nil {
			return out, err
		}
		for _, obj := range objs {
			out = append(out, restoreOne(ctx, c, namespace, resource, group, obj))
		}
	}
	return append(out, recordOnlyObjects(dir)...), nil
}

func restoreOne(ctx context.Context, c *kube.Clients, namespace, resource, group string, obj *unstructured.Unstructured) RestoredObject {
	name := strings.TrimSuffix(resource+"."+group, ".")
	o := RestoredObject{Resource: name, Name: obj.GetName()}
	if why, ok := madeByTheCluster[name+"/"+obj.GetName()]; ok {
		o.Status, o.Why = LeftOut, why
		return o
	}
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		o.Status, o.Why = Failed, err.Error()
		return o
	}
	clean := &unstructured.Unstructured{Object: backup.Reappliable(obj)}
	withoutServerSet(name, clean)
	clean.SetNamespace(namespace)
	if _, err := apply(ctx, c, gv.WithResource(resource), namespace, clean); err != nil {
		o.Status, o.Why = Failed, err.Error()
		return o
	}
	o.Status = Restored
	return o
}

// withoutServerSet drops what the API server set on the saved copy and
// would refuse, or give another value, on a new object.
func withoutServerSet(resource string, obj *unstructured.Unstructured) {
	switch resource {
	case "services":
		// A new Service gets an address of its own; the old one may be
		// taken already.
		unstructured.RemoveNestedField(obj.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(obj.Object, "spec", "clusterIPs")
	case "persistentvolumeclaims":
		// The binder's marks: the claim binds its volume (spec.volumeName)
		// again and sets them anew.
		for _, a := range []string{"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller"} {
			unstructured.RemoveNestedField(obj.Object, "metadata", "annotations", a)
		}
	case "pods":
		unstructured.RemoveNestedField(obj.Object, "spec", "nodeName")
	}
}

// recordOnlyObjects are what rescue saved for the record only: left out.
func recordOnlyObjects(dir string) []RestoredObject {
	files, _ := filepath.Glob(filepath.Join(dir, "record", "objects", "*.json"))
	var out []RestoredObject
	for _, f := range files {
		resource, group := typeOf(f)
		objs, err := backup.ObjectsIn(f)
		if err != nil {
			continue
		}
		for _, obj := range objs {
			why := "a controller owns it and makes it again"
			if len(obj.GetOwnerReferences()) == 0 {
				why = "its writer (a kubelet, a controller) makes it again"
			}
			out = append(out, RestoredObject{Resource: strings.TrimSuffix(resource+"."+group, "."), Name: obj.GetName(), Status: LeftOut, Why: why})
		}
	}
	return out
}

// apply is a server-side apply as ns-doctor's field manager.
func apply(ctx context.Context, c *kube.Clients, gvr schema.GroupVersionResource, namespace string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	if namespace == "" {
		return c.Dynamic.Resource(gvr).Apply(ctx, obj.GetName(), obj, opts)
	}
	return c.Dynamic.Resource(gvr).Namespace(namespace).Apply(ctx, obj.GetName(), obj, opts)
}

// typeOf reads a backup file's resource and group (backup.FileName).
func typeOf(path string) (resource, group string) {
	base := strings.TrimSuffix(filepath.Base(path), ".json")
	resource, group, _ = strings.Cut(base, ".")
	if group == "core" {
		group = ""
	}
	return resource, group
}

// rank is a backup file's place in restoreOrder; the others after.
func rank(path string) int {
	resource, group := typeOf(path)
	if i := slices.Index(restoreOrder, strings.TrimSuffix(resource+"."+group, ".")); i >= 0 {
		return i
	}
	return len(restoreOrder)
}
