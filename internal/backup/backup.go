// Package backup saves objects before ns-doctor deletes them or strips
// their finalizers, as files a user can re-apply with kubectl: nothing is
// lost.
package backup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Writer writes the objects of each resource type to one file,
// Dir/objects/<resource>.<group>.json, one JSON object per line (what
// `kubectl apply -f` and jq both read as a stream), and the namespace
// itself to Dir/namespace.yaml. Saving the same object twice keeps the
// first copy: the state before ns-doctor touched it.
//
// One file per type, not per object: creating 10,000 files costs seconds
// of CPU on some filesystems, taken from the API server on a small
// machine, while appending is cheap. JSON, not YAML: the objects arrive as
// JSON and are written as they came, minus what the server owns, while
// encoding YAML cost about 0.1 ms of CPU per object (1 s per 10,000).
type Writer struct {
	Dir   string
	mu    sync.Mutex
	saved map[string]*saving
	files map[string]*typeFile
	count int
}

// saving is one object's save: later Saves of it wait for the first and
// share its result, so an object is never deleted before its copy exists.
type saving struct {
	done chan struct{}
	err  error
}

// typeFile is one type's file; earlier holds the names an earlier run
// sharing the folder saved there, which this run keeps.
type typeFile struct {
	path    string
	mu      sync.Mutex
	earlier map[string]bool
	read    bool
	readErr error
}

// DefaultDir is the user's cache directory, one folder per run.
func DefaultDir(namespace string, now time.Time) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the cache directory for backups (set --backup-dir): %w", err)
	}
	return filepath.Join(cache, "ns-doctor", "backups", namespace+"-"+now.UTC().Format("20060102T150405Z")), nil
}

// New prepares dir.
func New(dir string) (*Writer, error) {
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o700); err != nil {
		return nil, fmt.Errorf("creating backup folder %s: %w", dir, err)
	}
	return &Writer{Dir: dir, saved: map[string]*saving{}, files: map[string]*typeFile{}}, nil
}

// Count is how many objects were saved.
func (w *Writer) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// FileName is the file, under Dir/objects, holding the objects of gvr.
func FileName(gvr schema.GroupVersionResource) string {
	return fmt.Sprintf("%s.%s.json", gvr.Resource, groupOrCore(gvr.Group))
}

// Save appends obj (of resource gvr) to its type's file unless an earlier
// copy exists.
func (w *Writer) Save(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	o, err := FromUnstructured(obj)
	if err != nil {
		return fmt.Errorf("saving %s %s: %w", gvr.Resource, obj.GetName(), err)
	}
	return w.SaveObject(gvr, o)
}

// SaveObject appends obj (of resource gvr) to its type's file unless an
// earlier copy exists. Saves run concurrently; only the append is one at a
// time per type.
func (w *Writer) SaveObject(gvr schema.GroupVersionResource, obj *Object) error {
	file := FileName(gvr)
	key := file + "/" + obj.Meta.Name
	w.mu.Lock()
	if s, ok := w.saved[key]; ok {
		w.mu.Unlock()
		<-s.done
		return s.err
	}
	s := &saving{done: make(chan struct{})}
	w.saved[key] = s
	tf := w.files[file]
	if tf == nil {
		tf = &typeFile{path: filepath.Join(w.Dir, "objects", file)}
		w.files[file] = tf
	}
	w.mu.Unlock()

	s.err = tf.append(obj.Meta.Name, obj.line)
	w.mu.Lock()
	if s.err != nil {
		delete(w.saved, key) // a later Save tries again
	} else {
		w.saved[key] = saved // its waiters hold s; the map need not
		w.count++
	}
	w.mu.Unlock()
	close(s.done)
	return s.err
}

// saved marks an object saved: one value for all, so 100,000 saved
// objects do not each keep a channel.
var saved = func() *saving {
	s := &saving{done: make(chan struct{})}
	close(s.done)
	return s
}()

// append writes one object's line with a single write, so an interrupted
// run leaves whole objects only.
func (tf *typeFile) append(name string, line []byte) error {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	if !tf.read {
		tf.earlier, tf.readErr = names(tf.path)
		tf.read = true
	}
	if tf.readErr != nil {
		return tf.readErr
	}
	if tf.earlier[name] {
		return nil // an earlier run saved it before changing it: keep that
	}
	f, err := os.OpenFile(tf.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("writing backup %s: %w", tf.path, err)
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing backup %s: %w", tf.path, err)
	}
	return nil
}

// names reads the object names a type's file already holds: none when it
// does not exist.
func names(path string) (map[string]bool, error) {
	out := map[string]bool{}
	objs, err := readObjects(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		out[o.GetName()] = true
	}
	return out, nil
}

// readObjects decodes every document of a backup file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	out, err := decodeAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading backup %s: %w", path, err)
	}
	return out, nil
}

// decodeAll reads a stream of JSON objects or YAML documents as kubectl
// apply does.
func decodeAll(r io.Reader) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if obj != nil {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// Saved lists what the backup in dir holds, as "<file>/<name>" sorted,
// for instance "configmaps.core.json/held".
func Saved(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "objects", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, filepath.Base(f)+"/"+o.GetName())
		}
	}
	slices.Sort(out)
	return out, nil
}

// Objects reads the objects of gvr the backup in dir holds.
func Objects(dir string, gvr schema.GroupVersionResource) ([]*unstructured.Unstructured, error) {
	return readObjects(filepath.Join(dir, "objects", FileName(gvr)))
}

// SaveCluster writes a cluster-scoped object ns-doctor changes for the
// duration of a run (a webhook configuration) to Dir/cluster, re-appliable
// with kubectl replace, and returns the file's path.
func (w *Writer) SaveCluster(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	dir := filepath.Join(w.Dir, "cluster")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s.%s_%s.yaml", gvr.Resource, groupOrCore(gvr.Group), obj.GetName()))
	return path, writeYAML(path, Reappliable(obj))
}

// SaveNamespace writes the namespace object as it is, for the record.
func (w *Writer) SaveNamespace(obj *unstructured.Unstructured) error {
	return writeYAML(filepath.Join(w.Dir, "namespace.yaml"), obj.Object)
}

// Reappliable strips what the server owns, so `kubectl apply -n NEW -f`
// recreates the object anywhere: identity, versions, timestamps, managed
// fields, status, namespace, and owner references (their UIDs would not
// exist, and the garbage collector would delete the restored object).
func Reappliable(obj *unstructured.Unstructured) map[string]any {
	out := obj.DeepCopy()
	for _, f := range serverOwned {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(out.Object, "status")
	return out.Object
}

func writeYAML(path string, obj map[string]any) error {
	if _, err := os.Stat(path); err == nil {
		return nil // an earlier run saved it before changing it: keep that
	}
	data, err := Encode(obj)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	// Write then rename: an interrupted run never leaves half a file.
	// CreateTemp's file is private (0600), as the backups hold Secrets.
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing backup %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing backup %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}

func groupOrCore(g string) string {
	if g == "" {
		return "core"
	}
	return strings.ReplaceAll(g, "/", "_")
}

// Encode renders obj as YAML, or as JSON (which is YAML too, and which
// kubectl apply reads alike) when the YAML encoder refuses a value, such
// as a string holding control characters, or writes what it cannot read
// back (the fuzzer found a long key holding DEL): no object is left
// unsaved or unreadable. Only single objects take this path.
func Encode(obj map[string]any) ([]byte, error) {
	if data, err := yaml.Marshal(obj); err == nil {
		var back map[string]any
		if yaml.Unmarshal(data, &back) == nil {
			return data, nil
		}
	}
	// kubectl reads a file that starts with "{" as JSON; unescaped, "&"
	// stays one character, as YAML readers want keys short.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(obj); err != nil {
		return nil, err
	}
	return yamlSafe(buf.Bytes()), nil
}

// yamlSafe escapes, inside JSON strings (the only place they can be), the
// characters YAML forbids but encoding/json leaves raw: DEL, C1 controls
// and non-characters, so the file stays valid YAML as well as JSON.
func yamlSafe(data []byte) []byte {
	var b strings.Builder
	for _, r := range string(data) {
		if r == 0x7f || (r >= 0x80 && r <= 0x9f && r != 0x85) || r == 0xfffe || r == 0xffff || r == utf8.RuneError {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return []byte(b.String())
}

// ObjectsIn reads the objects of one backup file (Dir/objects/<file>).
func ObjectsIn(path string) ([]*unstructured.Unstructured, error) { return readObjects(path) }
