// Package backup saves objects before ns-doctor deletes them or strips
// their finalizers, as YAML a user can re-apply: nothing is lost.
package backup

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Writer writes one YAML file per object under Dir/objects, and the
// namespace itself to Dir/namespace.yaml. Saving the same object twice
// keeps the first copy: the state before ns-doctor touched it.
type Writer struct {
	Dir   string
	mu    sync.Mutex
	saved map[string]bool
	count int
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
	return &Writer{Dir: dir, saved: map[string]bool{}}, nil
}

// Count is how many objects were saved.
func (w *Writer) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// Save writes obj (of resource gvr) unless an earlier copy exists.
func (w *Writer) Save(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	key := string(obj.GetUID())
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.saved[key] {
		return nil
	}
	name := fmt.Sprintf("%s.%s_%s.yaml", gvr.Resource, groupOrCore(gvr.Group), obj.GetName())
	if err := writeYAML(filepath.Join(w.Dir, "objects", name), Reappliable(obj)); err != nil {
		return err
	}
	w.saved[key] = true
	w.count++
	return nil
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
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
		"managedFields", "generation", "selfLink", "namespace", "ownerReferences"} {
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
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing backup %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

func groupOrCore(g string) string {
	if g == "" {
		return "core"
	}
	return strings.ReplaceAll(g, "/", "_")
}

// Encode renders obj as YAML, or as JSON (which is YAML too, and which
// kubectl apply reads alike) when the YAML encoder refuses a value, such
// as a string holding control characters: no object is left unsaved.
func Encode(obj map[string]any) ([]byte, error) {
	if data, err := yaml.Marshal(obj); err == nil {
		return data, nil
	}
	data, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(yamlSafe(data), '\n'), nil
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
