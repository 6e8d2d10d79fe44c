package rescue

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// Saved is one resource type's objects in the backup.
type Saved struct {
	Resource string `json:"resource"`
	// Count are the objects saved for re-applying (Dir/objects).
	Count int `json:"count"`
	// Record are the objects saved for the record only (Dir/record):
	// owned by a controller that re-creates them, or Events and
	// EndpointSlices, which their writers re-create.
	Record int `json:"record,omitempty"`
	// Going are the saved objects already being deleted
	// (deletionTimestamp set): the hold does not stop what the API server
	// or a kubelet finishes, so they will be gone.
	Going []string `json:"going,omitempty"`
}

// Backup is what Save wrote.
type Backup struct {
	Dir   string  `json:"dir"`
	Types []Saved `json:"types"`
	// Secrets is how many Secrets the backup holds, in clear (files 0600
	// in folders 0700).
	Secrets int `json:"secrets"`
	// Failed names each type that could not be read, with why.
	Failed []string `json:"failed,omitempty"`
	// Lost are the objects what was saved names but that were already
	// gone (lost.go): what can be known of what the deletion took before
	// the hold.
	Lost []Lost `json:"lost"`
}

// seen is what Save gathers across types to tell what was lost.
type seen struct {
	saved      map[string]bool // "Kind/name"
	refs       []ref
	namespaced map[string]bool // the kinds of namespaced types
}

// savedMeta is what Save reads of an object's metadata to sort it.
type savedMeta struct {
	Metadata struct {
		Name              string  `json:"name"`
		DeletionTimestamp *string `json:"deletionTimestamp"`
	} `json:"metadata"`
}

// save copies every object of namespace, of every namespaced type
// discovery lists, into dir, a backup folder (internal/backup: objects/
// what `kubectl apply --server-side -n NAMESPACE -f` re-creates, record/
// what a restore leaves out, the namespace and the volumes). Objects saved
// by an earlier run into the same dir are kept as they were.
func save(ctx context.Context, c *kube.Clients, ns *corev1.Namespace, volumes []*corev1.PersistentVolume, dir string) (Backup, error) {
	out := Backup{Dir: dir}
	main, err := backup.New(dir, "rescue")
	if err != nil {
		return out, err
	}
	if err := saveCluster(main, ns, volumes); err != nil {
		return out, err
	}
	d, err := kube.Discover(ctx, c.Discovery)
	if err != nil {
		return out, err
	}
	for gv, gerr := range d.Failed {
		out.Failed = append(out.Failed, fmt.Sprintf("%s: %v", gv, gerr))
	}
	types := d.DeletableResources()
	sn := &seen{saved: map[string]bool{}, namespaced: map[string]bool{}}
	for _, r := range types {
		sn.namespaced[r.Kind] = true
	}
	for _, pv := range volumes {
		sn.refs = append(sn.refs, ref{kind: "PersistentVolumeClaim", name: pv.Spec.ClaimRef.Name, by: "PersistentVolume/" + pv.Name})
	}
	for gvr := range types {
		saved, err := saveType(ctx, c, gvr, ns.Name, main, sn)
		if err != nil {
			out.Failed = append(out.Failed, fmt.Sprintf("%s: %v", resourceName(gvr), err))
			continue
		}
		if saved.Count+saved.Record > 0 {
			out.Types = append(out.Types, saved)
		}
		if gvr.Group == "" && gvr.Resource == "secrets" {
			out.Secrets = saved.Count + saved.Record
		}
	}
	slices.SortFunc(out.Types, func(a, b Saved) int { return strings.Compare(a.Resource, b.Resource) })
	slices.Sort(out.Failed)
	out.Lost = lost(sn.refs, sn.saved)
	return out, nil
}

func saveType(ctx context.Context, c *kube.Clients, gvr schema.GroupVersionResource, namespace string, w *backup.Writer, sn *seen) (Saved, error) {
	s := Saved{Resource: resourceName(gvr)}
	err := c.Collections.EachObjectJSON(ctx, gvr, namespace, 500, func(raw []byte, apiVersion, kind string) error {
		var m savedMeta
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("reading an object's metadata: %w", err)
		}
		obj, err := backup.FromJSON(raw, apiVersion, kind)
		if err != nil {
			return err
		}
		if m.Metadata.DeletionTimestamp != nil {
			s.Going = append(s.Going, m.Metadata.Name)
		}
		sn.saved[kind+"/"+m.Metadata.Name] = true
		// A list's items may lack their kind: it is the list's.
		full := &unstructured.Unstructured{}
		if err := json.Unmarshal(raw, &full.Object); err == nil {
			full.SetAPIVersion(apiVersion)
			full.SetKind(kind)
			sn.refs = append(sn.refs, references(full, sn.namespaced)...)
		}
		record, err := w.SavePlaced(gvr, obj)
		if record {
			s.Record++
		} else {
			s.Count++
		}
		return err
	})
	return s, err
}

// saveCluster writes the namespace (its labels and annotations; status
// and identity left out) and the volumes as they are after Retain.
func saveCluster(w *backup.Writer, ns *corev1.Namespace, volumes []*corev1.PersistentVolume) error {
	u, err := toUnstructured(ns, "Namespace")
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "spec")
	if err := w.SaveNamespace(u); err != nil {
		return err
	}
	for _, pv := range volumes {
		u, err := toUnstructured(pv, "PersistentVolume")
		if err != nil {
			return err
		}
		if _, err := w.SaveCluster(corev1.SchemeGroupVersion.WithResource("persistentvolumes"), u); err != nil {
			return err
		}
	}
	return nil
}

func toUnstructured(obj runtime.Object, kind string) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", kind, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	return u, nil
}

func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}
