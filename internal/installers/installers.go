// Package installers tells what installed a cluster object, from the marks
// its lifecycle manager (Helm, OLM) leaves on what it installs, and judges
// from the manager's own records whether that installation is still there
// (installers.yaml). A webhook left behind by an operator its manager
// uninstalled has no one to serve it again; one whose installation is
// there is waiting for its operator. It is pure: inspect reads the
// records, diagnose and printer say what they mean.
package installers

import (
	_ "embed"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

//go:embed installers.yaml
var table []byte

// Entry is one lifecycle manager.
type Entry struct {
	Manager   string   `json:"manager"`
	Kind      string   `json:"kind"`
	Name      Mark     `json:"name"`
	Namespace *Mark    `json:"namespace,omitempty"`
	When      *Mark    `json:"when,omitempty"`
	Records   []Record `json:"records"`
	Removed   []string `json:"removed,omitempty"`
	Source    []string `json:"source"`
}

// Mark is where a value is written on an installed object.
type Mark struct {
	Label      string `json:"label,omitempty"`
	Annotation string `json:"annotation,omitempty"`
	Value      string `json:"value,omitempty"`
}

func (m Mark) of(labels, annotations map[string]string) string {
	if m.Label != "" {
		return labels[m.Label]
	}
	return annotations[m.Annotation]
}

// Record is where a manager records an installation.
type Record struct {
	Group        string `json:"group,omitempty"`
	Version      string `json:"version"`
	Resource     string `json:"resource"`
	Name         string `json:"name,omitempty"`
	Selector     string `json:"selector,omitempty"`
	VersionLabel string `json:"versionLabel,omitempty"`
	StatusLabel  string `json:"statusLabel,omitempty"`
	StatusField  string `json:"statusField,omitempty"`
}

// Resource is the record's type.
func (r Record) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}

var load = sync.OnceValues(func() ([]Entry, error) {
	var out []Entry
	if err := yaml.UnmarshalStrict(table, &out); err != nil {
		return nil, fmt.Errorf("reading installers.yaml: %w", err)
	}
	return out, nil
})

// Table is every lifecycle manager ns-doctor knows.
func Table() ([]Entry, error) { return load() }

// State is what a manager's records say of an installation.
type State string

// States.
const (
	// Installed: a record says it is there.
	Installed State = "Installed"
	// Uninstalled: the latest record says it is being, or was,
	// uninstalled.
	Uninstalled State = "Uninstalled"
	// Gone: no record of it is left (or the manager's API is not served).
	Gone State = "Gone"
	// Unknown: its records could not be read; nothing is concluded.
	Unknown State = "Unknown"
)

// Installer is what installed an object and what its manager's records
// say of that installation.
type Installer struct {
	Manager   string `json:"manager"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// State is empty until the records are read.
	State State `json:"state,omitempty"`
	// Record says what was read, in words: the record and its status, or
	// where none was found.
	Record string `json:"record,omitempty"`
	// Workloads are the Deployments, StatefulSets and DaemonSets bearing
	// its marks in its namespace (kind/name), when they were read.
	Workloads []string `json:"workloads,omitempty"`
	// WorkloadsRead: they were read (none found means none runs).
	WorkloadsRead bool `json:"workloadsRead,omitempty"`
}

// String is the installation, as its manager names it.
func (i Installer) String() string {
	if i.Namespace == "" {
		return fmt.Sprintf("%s %s %s", i.Manager, i.Kind, i.Name)
	}
	return fmt.Sprintf("%s %s %s/%s", i.Manager, i.Kind, i.Namespace, i.Name)
}

// Removed: the manager's records say the installation is gone and no
// workload bearing its marks runs: nothing it installed will be served
// again.
func (i *Installer) Removed() bool {
	return i != nil && (i.State == Uninstalled || i.State == Gone) && i.WorkloadsRead && len(i.Workloads) == 0
}

// Of is the installation an object's labels and annotations name, or nil.
func Of(labels, annotations map[string]string) *Installer {
	entries, err := Table()
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if i := e.of(labels, annotations); i != nil {
			return i
		}
	}
	return nil
}

func (e Entry) of(labels, annotations map[string]string) *Installer {
	name := e.Name.of(labels, annotations)
	if name == "" || (e.When != nil && e.When.of(labels, annotations) != e.When.Value) {
		return nil
	}
	i := &Installer{Manager: e.Manager, Kind: e.Kind, Name: name}
	if e.Namespace != nil {
		if i.Namespace = e.Namespace.of(labels, annotations); i.Namespace == "" {
			return nil
		}
	}
	return i
}

// Same tells whether an object's marks name the same installation.
func (i Installer) Same(labels, annotations map[string]string) bool {
	o := Of(labels, annotations)
	return o != nil && o.Manager == i.Manager && o.Kind == i.Kind && o.Namespace == i.Namespace && o.Name == i.Name
}

// Query is one read of a record.
type Query struct {
	Resource  schema.GroupVersionResource
	Namespace string
	// Name is the record's name, or Selector the labels its records carry.
	Name, Selector string
}

// String says where the query looked, as kubectl would be asked.
func (q Query) String() string {
	what := q.Resource.Resource
	if q.Resource.Group != "" {
		what += "." + q.Resource.Group
	}
	if q.Name != "" {
		what += " " + q.Name
	} else {
		what += " -l " + q.Selector
	}
	if q.Namespace != "" {
		what += " -n " + q.Namespace
	}
	return what
}

// Queries are the reads that find an installation's records, in order.
func (i Installer) Queries() []Query {
	e := i.entry()
	if e == nil {
		return nil
	}
	out := make([]Query, 0, len(e.Records))
	for _, r := range e.Records {
		fill := func(s string) string { return strings.ReplaceAll(s, "{name}", i.Name) }
		out = append(out, Query{Resource: r.GVR(), Namespace: i.Namespace, Name: fill(r.Name), Selector: fill(r.Selector)})
	}
	return out
}

func (i Installer) entry() *Entry {
	entries, _ := Table()
	for k := range entries {
		if entries[k].Manager == i.Manager && entries[k].Kind == i.Kind {
			return &entries[k]
		}
	}
	return nil
}

// Found is what one query read: the records (none when not found), or
// Unreadable when it failed for another reason than not found.
type Found struct {
	Records    []Seen
	Unreadable error
}

// Seen is one record as read: its name, labels, the value at the
// entry's statusField, and whether it is being deleted.
type Seen struct {
	Name     string
	Labels   map[string]string
	Field    string
	Deleting bool
}

// Judge sets the installation's State and Record from what its queries
// found, one Found per query in Queries' order.
func (i *Installer) Judge(found []Found) {
	e := i.entry()
	qs := i.Queries()
	if e == nil || len(found) != len(qs) {
		i.State, i.Record = Unknown, "its records were not read"
		return
	}
	var looked []string
	for k, f := range found {
		if f.Unreadable != nil {
			i.State, i.Record = Unknown, fmt.Sprintf("%s: %v", qs[k], f.Unreadable)
			return
		}
		if len(f.Records) == 0 {
			looked = append(looked, qs[k].String())
			continue
		}
		latest := e.Records[k].latest(f.Records)
		status := e.Records[k].status(latest)
		i.Record = fmt.Sprintf("%s %s", strings.TrimSuffix(qs[k].Resource.Resource, "s"), latest.Name)
		if status != "" {
			i.Record += ": " + status
		}
		i.State = Installed
		if latest.Deleting {
			i.State, i.Record = Uninstalled, i.Record+" (being deleted)"
		}
		for _, r := range e.Removed {
			if strings.EqualFold(status, r) {
				i.State = Uninstalled
			}
		}
		return
	}
	i.State, i.Record = Gone, "no record: nothing found by kubectl get "+strings.Join(looked, ", nor ")
}

// latest is the record of the highest versionLabel (the last revision).
func (r Record) latest(records []Seen) Seen {
	sorted := append([]Seen(nil), records...)
	sort.SliceStable(sorted, func(a, b int) bool {
		va, _ := strconv.Atoi(sorted[a].Labels[r.VersionLabel])
		vb, _ := strconv.Atoi(sorted[b].Labels[r.VersionLabel])
		return va > vb
	})
	return sorted[0]
}

func (r Record) status(f Seen) string {
	if r.StatusLabel != "" {
		return f.Labels[r.StatusLabel]
	}
	return f.Field
}

// FieldPath is the entry's statusField for a query, split, or nil.
func (i Installer) FieldPath(query int) []string {
	e := i.entry()
	if e == nil || query >= len(e.Records) || e.Records[query].StatusField == "" {
		return nil
	}
	return strings.Split(e.Records[query].StatusField, ".")
}
