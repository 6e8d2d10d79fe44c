package backup

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// serverOwned are the metadata fields a saved copy leaves out (see
// Reappliable for why each goes).
var serverOwned = []string{"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
	"managedFields", "generation", "selfLink", "namespace", "ownerReferences"}

// Object is one object ready to be saved: the line its type's file gets,
// and what callers read of its metadata.
type Object struct {
	// APIVersion and Kind are the object's (or its list's).
	APIVersion, Kind string
	// Meta holds the name, uid, creation and deletion timestamps,
	// finalizers, owner references, and the managers of managedFields;
	// nothing else.
	Meta metav1.ObjectMeta
	line []byte
}

// identity is the part of an object's metadata Meta holds. Decoding only
// these fields skips labels, annotations and the managed fields' contents,
// which make up most of a small object.
type identity struct {
	Name              string                  `json:"name"`
	UID               types.UID               `json:"uid"`
	CreationTimestamp metav1.Time             `json:"creationTimestamp"`
	DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
	Finalizers        []string                `json:"finalizers"`
	OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
	ManagedFields     []struct {
		Manager string `json:"manager"`
	} `json:"managedFields"`
}

// FromJSON prepares an object as the API server sent it. The copy is the
// server's own JSON minus what Reappliable removes, re-read only as far as
// that takes: no value below the top level and metadata is decoded, so a
// number or a string is saved exactly as it came. Items of a list of
// built-in types carry no apiVersion and kind; apiVersion and kind, when
// not empty, stand in for them.
func FromJSON(raw []byte, apiVersion, kind string) (*Object, error) {
	// Case-sensitive, as the API server reads objects: "Name" is not
	// "name".
	var top map[string]json.RawMessage
	if err := utiljson.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("reading object: %w", err)
	}
	o := &Object{}
	if m, ok := top["metadata"]; ok {
		var fields map[string]json.RawMessage
		if err := utiljson.Unmarshal(m, &fields); err != nil {
			return nil, fmt.Errorf("reading metadata: %w", err)
		}
		var id identity
		if err := utiljson.Unmarshal(m, &id); err != nil {
			return nil, fmt.Errorf("reading metadata: %w", err)
		}
		o.Meta = metav1.ObjectMeta{Name: id.Name, UID: id.UID, CreationTimestamp: id.CreationTimestamp,
			DeletionTimestamp: id.DeletionTimestamp, Finalizers: id.Finalizers, OwnerReferences: id.OwnerReferences}
		for _, mf := range id.ManagedFields {
			o.Meta.ManagedFields = append(o.Meta.ManagedFields, metav1.ManagedFieldsEntry{Manager: mf.Manager})
		}
		for _, f := range serverOwned {
			delete(fields, f)
		}
		kept, err := compact(fields)
		if err != nil {
			return nil, err
		}
		top["metadata"] = kept
	}
	delete(top, "status")
	for field, value := range map[string]*string{"apiVersion": &apiVersion, "kind": &kind} {
		if own, ok := top[field]; ok {
			_ = json.Unmarshal(own, value)
		} else if *value != "" {
			top[field], _ = json.Marshal(*value)
		}
	}
	o.APIVersion, o.Kind = apiVersion, kind
	line, err := compact(top)
	if err != nil {
		return nil, err
	}
	o.line = append(line, '\n')
	return o, nil
}

// compact encodes v on one line, keys sorted, leaving "<", ">" and "&" as
// they are: the files are read by people too.
func compact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// FromUnstructured prepares an object read through the dynamic client.
func FromUnstructured(obj *unstructured.Unstructured) (*Object, error) {
	raw, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return FromJSON(raw, "", "")
}
