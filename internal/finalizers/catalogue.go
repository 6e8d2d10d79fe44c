// Package finalizers is the catalogue of finalizers met in real clusters
// (catalogue.yaml, data, not code): who removes each, how to recognise that
// owner running, what it guards and what stripping it leaks, each with the
// public source it was read from.
package finalizers

import (
	_ "embed"
	"fmt"
	"path"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/yaml"
)

//go:embed catalogue.yaml
var catalogueYAML []byte

// Entry is one finalizer, or a family of them (a path.Match glob).
type Entry struct {
	Finalizer string `json:"finalizer"`
	Owner     string `json:"owner"`
	Project   string `json:"project"`
	Detect    Detect `json:"detect"`
	Guards    string `json:"guards"`
	Leak      string `json:"leak"`
	Source    string `json:"source"`
}

// Detect is how to recognise the owner running.
type Detect struct {
	// Builtin: the control plane itself removes it (kube-controller-manager,
	// kube-apiserver), which no workload in the cluster shows.
	Builtin bool `json:"builtin,omitempty"`
	// Workloads are the owner's usual Deployments, StatefulSets or
	// DaemonSets.
	Workloads []Workload `json:"workloads,omitempty"`
}

// Workload names one of the owner's usual workloads.
type Workload struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

var (
	once    sync.Once
	entries []Entry
	loadErr error
)

// Catalogue returns every entry, in the file's order (specific first).
func Catalogue() ([]Entry, error) {
	once.Do(func() {
		if err := yaml.UnmarshalStrict(catalogueYAML, &entries); err != nil {
			loadErr = fmt.Errorf("reading the finalizer catalogue: %w", err)
		}
	})
	return entries, loadErr
}

// Lookup returns the entry for a finalizer: an exact entry first, then the
// first glob matching it; nil when the catalogue does not know it. Each
// answer is remembered (up to lookupsKept finalizers): explain over ten
// thousand namespaces asks the same few again and again, and an unknown
// one is matched against every glob.
func Lookup(finalizer string) *Entry {
	if e, ok := lookups.Load(finalizer); ok {
		return e.(*Entry)
	}
	e := lookup(finalizer)
	if lookupsStored.Add(1) <= lookupsKept {
		lookups.Store(finalizer, e)
	}
	return e
}

// lookupsKept bounds the answers Lookup remembers: a cluster's finalizers
// are a few dozen, and a hostile one's must not grow a watch's memory.
const lookupsKept = 4096

var (
	lookups       sync.Map // finalizer -> *Entry (nil: unknown)
	lookupsStored atomic.Int64
)

func lookup(finalizer string) *Entry {
	all, err := Catalogue()
	if err != nil {
		return nil
	}
	for i := range all {
		if all[i].Finalizer == finalizer {
			return &all[i]
		}
	}
	for i := range all {
		if ok, _ := path.Match(all[i].Finalizer, finalizer); ok {
			return &all[i]
		}
	}
	return nil
}
