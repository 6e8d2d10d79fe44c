package backup

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// The folder every ns-doctor backup is (purge's, rescue's, the janitor's):
//
//	DIR/backup.json              the manifest: which namespace, made by which command, when
//	DIR/namespace.yaml           the namespace (as JSON, which YAML readers read): its labels and annotations come back with it
//	DIR/index.jsonl              a line per saved object: its type, name, uid and owner references
//	DIR/objects/RES.GROUP.json   what `kubectl apply --server-side -n NS -f DIR/objects/` re-creates
//	DIR/record/RES.GROUP.json    kept for the record: what a restore leaves out (Rules says why)
//	DIR/cluster/RES.GROUP_NAME.yaml  cluster-scoped objects ns-doctor changed (volumes, webhooks)
//
// Earlier layouts are read too: rescue's before it (the namespace in
// cluster/namespaces.core_NAME.yaml, record/objects/) and purge's (no
// manifest, no index).
const (
	ManifestFile  = "backup.json"
	NamespaceFile = "namespace.yaml"
	IndexFile     = "index.jsonl"
	ObjectsDir    = "objects"
	RecordDir     = "record"
	ClusterDir    = "cluster"
)

// Manifest says what a backup folder is.
type Manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace is the namespace saved, and UID its uid then.
	Namespace string `json:"namespace"`
	UID       string `json:"uid,omitempty"`
	// MadeBy is the command that saved it: purge, rescue or watch (the
	// janitor).
	MadeBy string `json:"madeBy"`
	// Created is when the first run saving into it started.
	Created time.Time `json:"created"`
}

// Entry is one saved object as the index knows it: enough to order a
// restore and map its owner references, without reading the object.
type Entry struct {
	Group    string `json:"group,omitempty"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	UID      string `json:"uid,omitempty"`
	// Owners are the object's owner references as they were (the saved
	// copy has none: their uids would not exist).
	Owners []metav1.OwnerReference `json:"owners,omitempty"`
	// File is the file holding the object, relative to the folder.
	File string `json:"file"`
}

// GroupResource is the entry's type.
func (e Entry) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: e.Group, Resource: e.Resource}
}

// GroupVersionResource is the entry's type at its saved version.
func (e Entry) GroupVersionResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: e.Group, Version: e.Version, Resource: e.Resource}
}

// TypeName is "resource.group", or "resource" for the core group, as
// kubectl names types.
func (e Entry) TypeName() string {
	if e.Group == "" {
		return e.Resource
	}
	return e.Resource + "." + e.Group
}

// SavedObject is one object of a folder, with its entry.
type SavedObject struct {
	Entry
	Object *unstructured.Unstructured
	// Record: saved for the record only (DIR/record).
	Record bool
}

// Folder is a backup folder, read.
type Folder struct {
	Dir      string
	Manifest Manifest
	// Namespace is the saved namespace (its labels and annotations).
	Namespace *unstructured.Unstructured
	// Objects are every saved object, of objects/ and record/.
	Objects []SavedObject
	// Cluster are the cluster-scoped objects saved (the volumes among
	// them).
	Cluster []*unstructured.Unstructured
}

// ErrNotABackup: the folder is not an ns-doctor backup (no saved
// namespace).
var ErrNotABackup = errors.New("not an ns-doctor backup")

// Open reads a backup folder, of any layout ns-doctor has written.
func Open(dir string) (*Folder, error) {
	f := &Folder{Dir: dir}
	ns, err := readNamespace(dir)
	if err != nil {
		return nil, err
	}
	f.Namespace = ns
	if err := readJSONFile(filepath.Join(dir, ManifestFile), &f.Manifest); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if f.Manifest.Namespace == "" {
		f.Manifest.Namespace, f.Manifest.UID = ns.GetName(), string(ns.GetUID())
	}
	index, err := readIndex(dir)
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{ObjectsDir, RecordDir, filepath.Join(RecordDir, ObjectsDir)} {
		if err := f.readObjects(sub, index); err != nil {
			return nil, err
		}
	}
	cluster, err := filepath.Glob(filepath.Join(dir, ClusterDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, path := range cluster {
		obj, err := readYAML(path)
		if err != nil {
			return nil, err
		}
		if obj.GetKind() != "Namespace" {
			f.Cluster = append(f.Cluster, obj)
		}
	}
	return f, nil
}

// readNamespace finds the saved namespace, in today's layout or rescue's
// earlier one.
func readNamespace(dir string) (*unstructured.Unstructured, error) {
	if ns, err := readYAML(filepath.Join(dir, NamespaceFile)); err == nil {
		return ns, nil
	}
	legacy, _ := filepath.Glob(filepath.Join(dir, ClusterDir, "namespaces.core_*.yaml"))
	if len(legacy) == 1 {
		return readYAML(legacy[0])
	}
	return nil, fmt.Errorf("%w: %s holds no saved namespace (%s)", ErrNotABackup, dir, NamespaceFile)
}

// readObjects reads one subfolder's type files, each object with its
// index entry (or, for a folder saved before the index, one made from
// the file's name and the object).
func (f *Folder) readObjects(sub string, index map[string]Entry) error {
	files, err := filepath.Glob(filepath.Join(f.Dir, sub, "*.json"))
	if err != nil {
		return err
	}
	slices.Sort(files)
	for _, path := range files {
		objs, err := readObjects(path)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(filepath.Join(sub, filepath.Base(path)))
		resource, group := typeOfFile(path)
		for _, o := range objs {
			e, ok := index[rel+"/"+o.GetName()]
			if !ok {
				gv, _ := schema.ParseGroupVersion(o.GetAPIVersion())
				e = Entry{Group: group, Version: gv.Version, Resource: resource, Kind: o.GetKind(), Name: o.GetName(), File: rel}
			}
			f.Objects = append(f.Objects, SavedObject{Entry: e, Object: o, Record: sub != ObjectsDir})
		}
	}
	return nil
}

// typeOfFile reads a type file's resource and group (FileName).
func typeOfFile(path string) (resource, group string) {
	base := strings.TrimSuffix(filepath.Base(path), ".json")
	resource, group, _ = strings.Cut(base, ".")
	if group == "core" {
		group = ""
	}
	return resource, group
}

// readIndex reads the index, keyed "file/name"; a folder without one
// has an empty index.
func readIndex(dir string) (map[string]Entry, error) {
	out := map[string]Entry{}
	file, err := os.Open(filepath.Join(dir, IndexFile))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = file.Close() }()
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		var e Entry
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("reading %s: %w", IndexFile, err)
		}
		out[e.File+"/"+e.Name] = e
	}
	return out, scanner.Err()
}

func readYAML(path string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

func readJSONFile(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// Volumes are the saved PersistentVolumes.
func (f *Folder) Volumes() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range f.Cluster {
		if o.GetKind() == "PersistentVolume" {
			out = append(out, o)
		}
	}
	return out
}
