package backup

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// serverOwned are the metadata fields a saved copy leaves out (see
// Reappliable for why each goes).
var serverOwned = []string{"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
	"managedFields", "generation", "selfLink", "namespace", "ownerReferences"}

// Object is one object ready to be saved: the line its type's file gets,
// and its metadata as the server sent it, for the caller to read.
type Object struct {
	Meta metav1.ObjectMeta
	line []byte
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
		if err := utiljson.Unmarshal(m, &o.Meta); err != nil {
			return nil, fmt.Errorf("reading metadata: %w", err)
		}
		for _, f := range serverOwned {
			delete(fields, f)
		}
		kept, err := json.Marshal(fields)
		if err != nil {
			return nil, err
		}
		top["metadata"] = kept
	}
	delete(top, "status")
	for field, value := range map[string]string{"apiVersion": apiVersion, "kind": kind} {
		if _, ok := top[field]; !ok && value != "" {
			top[field], _ = json.Marshal(value)
		}
	}
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false) // "<" stays "<": the file is read by people too
	if err := enc.Encode(top); err != nil {
		return nil, err
	}
	o.line = line.Bytes()
	return o, nil
}

// FromUnstructured prepares an object read through the dynamic client.
func FromUnstructured(obj *unstructured.Unstructured) (*Object, error) {
	raw, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return FromJSON(raw, "", "")
}
