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
	"path"
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
	// record/ waits for its first object: most runs put none there.
	if err := os.MkdirAll(filepath.Join(dir, ObjectsDir), 0o700); err != nil {
		return nil, fmt.Errorf("creating backup folder %s: %w", dir, err)
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
	records, err := w.save(gvr, []*Object{obj})
	if err != nil {
		return false, err
	}
	return records[0], nil
}

// SaveObjects is SaveObject for a page of objects of one type: one
// append per type file and one to the index for all of them. Purge saves
// 10,000 namespaces' objects in one run, and an open, write and close per
// object and per index line took a tenth of its CPU.
func (w *Writer) SaveObjects(gvr schema.GroupVersionResource, objs []*Object) error {
	_, err := w.save(gvr, objs)
	return err
}

// pendingSave is one object of a save: where it goes, and the save that
// decides it (this call's own, or an earlier call's it waits for).
type pendingSave struct {
	obj    *Object
	record bool
	key    string
	line   []byte
	tf     *typeFile
	s      *saving
	// own: this call writes it; otherwise it waits for s.
	own bool
}

// save writes objs, each unless an earlier copy exists, and tells which
// went to record/. An object's index line follows its copy, so an entry
// always has its object.
func (w *Writer) save(gvr schema.GroupVersionResource, objs []*Object) ([]bool, error) {
	saves, err := w.claim(gvr, objs)
	if err != nil {
		return nil, err
	}
	err = w.write(gvr, saves)
	w.settle(saves, err)
	records := make([]bool, len(saves))
	for i, p := range saves {
		records[i] = p.record
		if !p.own {
			<-p.s.done
			if err == nil {
				err = p.s.err
			}
		}
	}
	return records, err
}

// claim places each object and takes the saves no other call has taken.
func (w *Writer) claim(gvr schema.GroupVersionResource, objs []*Object) ([]pendingSave, error) {
	saves := make([]pendingSave, len(objs))
	for i, obj := range objs {
		place, line, err := placeOf(gvr.GroupResource(), obj)
		if err != nil {
			return nil, fmt.Errorf("saving %s %s: %w", gvr.Resource, obj.Meta.Name, err)
		}
		file := place + "/" + FileName(gvr)
		saves[i] = pendingSave{obj: obj, record: place == RecordDir, key: file + "/" + obj.Meta.Name, line: line}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range saves {
		p := &saves[i]
		if s, ok := w.saved[p.key]; ok {
			p.s = s
			continue
		}
		p.s, p.own = &saving{done: make(chan struct{})}, true
		w.saved[p.key] = p.s
		file := path.Dir(p.key)
		p.tf = w.files[file]
		if p.tf == nil {
			p.tf = &typeFile{path: filepath.Join(w.Dir, filepath.FromSlash(file))}
			w.files[file] = p.tf
		}
	}
	return saves, nil
}

// write appends this call's own objects, a write per type file, then
// their index lines in one more.
func (w *Writer) write(gvr schema.GroupVersionResource, saves []pendingSave) error {
	var entries []byte
	for _, tf := range filesOf(saves) {
		var names []string
		var lines [][]byte
		for _, p := range saves {
			if p.own && p.tf == tf {
				names, lines = append(names, p.obj.Meta.Name), append(lines, p.line)
			}
		}
		added, err := tf.append(names, lines)
		if err != nil {
			return err
		}
		for _, p := range saves {
			if p.own && p.tf == tf && added[p.obj.Meta.Name] {
				line, err := json.Marshal(Entry{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Kind: p.obj.Kind,
					Name: p.obj.Meta.Name, UID: string(p.obj.Meta.UID), Owners: p.obj.Meta.OwnerReferences, File: path.Dir(p.key)})
				if err != nil {
					return err
				}
				entries = append(append(entries, line...), '\n')
			}
		}
	}
	if len(entries) == 0 {
		return nil
	}
	w.indexMu.Lock()
	defer w.indexMu.Unlock()
	return appendLine(filepath.Join(w.Dir, IndexFile), entries)
}

// filesOf is the type files this call writes, in first-seen order.
func filesOf(saves []pendingSave) []*typeFile {
	var out []*typeFile
	for _, p := range saves {
		if p.own && !slices.Contains(out, p.tf) {
			out = append(out, p.tf)
		}
	}
	return out
}

// settle ends this call's own saves: saved, or free for a later Save to
// try again.
func (w *Writer) settle(saves []pendingSave, err error) {
	w.mu.Lock()
	for _, p := range saves {
		if !p.own {
			continue
		}
		p.s.err = err
		if err != nil {
			delete(w.saved, p.key)
		} else {
			w.saved[p.key] = saved // its waiters hold p.s; the map need not
			w.count++
		}
	}
	w.mu.Unlock()
	for _, p := range saves {
		if p.own {
			close(p.s.done)
		}
	}
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

// append writes the lines of the objects named names with a single
// write, so an interrupted run leaves whole objects only; added names
// those written, not those an earlier run's copy keeps.
func (tf *typeFile) append(names []string, lines [][]byte) (added map[string]bool, err error) {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	if !tf.read {
		tf.earlier, tf.readErr = namesIn(tf.path)
		tf.read = true
	}
	if tf.readErr != nil {
		return nil, tf.readErr
	}
	added = map[string]bool{}
	var data []byte
	for i, name := range names {
		if tf.earlier[name] {
			continue // an earlier run saved it before changing it: keep that
		}
		added[name] = true
		data = append(data, lines[i]...)
	}
	if len(data) == 0 {
		return added, nil
	}
	return added, appendLine(tf.path, data)
}

// appendLine appends with one write, creating the file's folder when
// missing (record/ is made only when something goes there).
func appendLine(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			f, err = os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		}
	}
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
	return namedTypes()[gr]
}

// namedTypes are the types some row of the restore table names, made
// once: building the table for each of a purge's objects allocated more
// than saving them did.
var namedTypes = sync.OnceValue(func() map[schema.GroupResource]bool {
	out := map[schema.GroupResource]bool{}
	for _, r := range table() {
		for _, gr := range r.Resources {
			out[gr] = true
		}
	}
	return out
})

// namesIn reads the object names a type's file already holds: none when
// it does not exist.
func namesIn(path string) (map[string]bool, error) {
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
	// JSON, which is YAML too (kubectl and a restore read it alike): the
	// YAML encoder allocated 200 KB for a namespace of 600 bytes, a
	// third of what a purge of 10,000 namespaces allocated.
	data, err = encodeJSON(obj.Object)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", NamespaceFile, err)
	}
	return writeOnce(filepath.Join(w.Dir, NamespaceFile), data)
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
	return encodeJSON(obj)
}

// encodeJSON renders obj as indented JSON that is valid YAML as well.
func encodeJSON(obj map[string]any) ([]byte, error) {
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
