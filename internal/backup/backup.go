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

// Writer saves a namespace's objects into a backup folder (folder.go
// says its layout): each type's objects in one file, one JSON object per
// line (what `kubectl apply -f` and jq both read as a stream), under
// objects/ what a restore re-applies, under record/ what it leaves out
// (Rules decides, and shapes the copy so kubectl accepts it), with a line
// per object in the index. Saving the same object twice keeps the first
// copy: the state before ns-doctor touched it.
//
// One file per type, not per object: creating 10,000 files costs seconds
// of CPU on some filesystems, taken from the API server on a small
// machine, while appending is cheap. JSON, not YAML: the objects arrive as
// JSON and are written as they came, minus what the server owns, while
// encoding YAML cost about 0.1 ms of CPU per object (1 s per 10,000).
type Writer struct {
	Dir string
	// madeBy names the command in the manifest.
	madeBy string
	mu     sync.Mutex
	saved  map[string]*saving
	files  map[string]*typeFile
	count  int
	// indexMu orders the index's appends.
	indexMu sync.Mutex
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

// New prepares dir for a backup made by the command madeBy (purge,
// rescue, watch).
func New(dir, madeBy string) (*Writer, error) {
	for _, sub := range []string{ObjectsDir, RecordDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("creating backup folder %s: %w", dir, err)
		}
	}
	return &Writer{Dir: dir, madeBy: madeBy, saved: map[string]*saving{}, files: map[string]*typeFile{}}, nil
}

// Count is how many objects were saved.
func (w *Writer) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// FileName is the file, under Dir/objects or Dir/record, holding the
// objects of gvr.
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

// SaveObject appends obj (of resource gvr) to its type's file, in
// objects/ or record/ as the restore table says, unless an earlier copy
// exists. Saves run concurrently; only the append is one at a time per
// type.
func (w *Writer) SaveObject(gvr schema.GroupVersionResource, obj *Object) error {
	_, err := w.SavePlaced(gvr, obj)
	return err
}

// SavePlaced is SaveObject, also telling whether the object went to
// record/ (a restore leaves it out).
func (w *Writer) SavePlaced(gvr schema.GroupVersionResource, obj *Object) (record bool, err error) {
	place, line, err := placeOf(gvr.GroupResource(), obj)
	if err != nil {
		return false, fmt.Errorf("saving %s %s: %w", gvr.Resource, obj.Meta.Name, err)
	}
	record = place == RecordDir
	file := place + "/" + FileName(gvr)
	key := file + "/" + obj.Meta.Name
	w.mu.Lock()
	if s, ok := w.saved[key]; ok {
		w.mu.Unlock()
		<-s.done
		return record, s.err
	}
	s := &saving{done: make(chan struct{})}
	w.saved[key] = s
	tf := w.files[file]
	if tf == nil {
		tf = &typeFile{path: filepath.Join(w.Dir, filepath.FromSlash(file))}
		w.files[file] = tf
	}
	w.mu.Unlock()

	added, err := tf.append(obj.Meta.Name, line)
	if err == nil && added {
		err = w.addToIndex(Entry{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Kind: obj.Kind,
			Name: obj.Meta.Name, UID: string(obj.Meta.UID), Owners: obj.Meta.OwnerReferences, File: file})
	}
	s.err = err
	w.mu.Lock()
	if s.err != nil {
		delete(w.saved, key) // a later Save tries again
	} else {
		w.saved[key] = saved // its waiters hold s; the map need not
		w.count++
	}
	w.mu.Unlock()
	close(s.done)
	return record, s.err
}

// Holds tells whether this run saved the object named name of gvr (in
// objects/ or record/): a write may then start from a fresher read of its
// metadata alone, its full copy being on disk already.
func (w *Writer) Holds(gvr schema.GroupVersionResource, name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, place := range []string{ObjectsDir, RecordDir} {
		if w.saved[place+"/"+FileName(gvr)+"/"+name] == saved {
			return true
		}
	}
	return false
}

// saved marks an object saved: one value for all, so 100,000 saved
// objects do not each keep a channel.
var saved = func() *saving {
	s := &saving{done: make(chan struct{})}
	close(s.done)
	return s
}()

// append writes one object's line with a single write, so an interrupted
// run leaves whole objects only; added is false when an earlier run's copy
// is kept.
func (tf *typeFile) append(name string, line []byte) (added bool, err error) {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	if !tf.read {
		tf.earlier, tf.readErr = names(tf.path)
		tf.read = true
	}
	if tf.readErr != nil {
		return false, tf.readErr
	}
	if tf.earlier[name] {
		return false, nil // an earlier run saved it before changing it: keep that
	}
	return true, appendLine(tf.path, line)
}

// appendLine appends with one write.
func appendLine(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("writing backup %s: %w", path, err)
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing backup %s: %w", path, err)
	}
	return nil
}

// addToIndex appends an object's entry to the index, after its copy:
// an entry always has its object.
func (w *Writer) addToIndex(e Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	w.indexMu.Lock()
	defer w.indexMu.Unlock()
	return appendLine(filepath.Join(w.Dir, IndexFile), append(line, '\n'))
}

// placeOf is where the restore table puts an object (objects/ or
// record/) and the line saved there: in objects/, as the table shapes it
// for a re-apply. Only objects a row may decide other than "as saved"
// are decoded.
func placeOf(gr schema.GroupResource, obj *Object) (string, []byte, error) {
	if !mayBeDecided(gr, obj) {
		return ObjectsDir, obj.line, nil
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(obj.line, &u.Object); err != nil {
		return "", nil, err
	}
	u.SetOwnerReferences(obj.Meta.OwnerReferences)
	d := Decide(gr, u, Context{})
	if d.Verdict == LeaveOut {
		return RecordDir, obj.line, nil
	}
	line, err := compact(d.Object.Object)
	if err != nil {
		return "", nil, err
	}
	return ObjectsDir, append(line, '\n'), nil
}

// mayBeDecided tells whether a row other than "as saved" may match: a
// type some row names, or an object with a controller.
func mayBeDecided(gr schema.GroupResource, obj *Object) bool {
	for _, r := range obj.Meta.OwnerReferences {
		if r.Controller != nil && *r.Controller {
			return true
		}
	}
	for _, r := range Rules() {
		if slices.Contains(r.Resources, gr) {
			return true
		}
	}
	return false
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

// Saved lists what the backup in dir holds to re-apply (objects/), as
// "<file>/<name>" sorted, for instance "configmaps.core.json/held".
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

// SaveNamespace writes the namespace object as it is (a restore takes its
// labels and annotations) and, on a folder's first run, the manifest.
func (w *Writer) SaveNamespace(obj *unstructured.Unstructured) error {
	m := Manifest{APIVersion: ManifestAPIVersion, Kind: "Backup", Namespace: obj.GetName(), UID: string(obj.GetUID()),
		MadeBy: w.madeBy, Created: time.Now().UTC().Truncate(time.Second)}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := writeOnce(filepath.Join(w.Dir, ManifestFile), append(data, '\n')); err != nil {
		return err
	}
	return writeYAML(filepath.Join(w.Dir, NamespaceFile), obj.Object)
}

// ManifestAPIVersion is the manifest's version.
const ManifestAPIVersion = "ns-doctor.io/v1alpha1"

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
	data, err := Encode(obj)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return writeOnce(path, data)
}

// writeOnce writes a file unless it exists.
func writeOnce(path string, data []byte) error {
	if _, err := os.Stat(path); err == nil {
		return nil // an earlier run saved it before changing it: keep that
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
