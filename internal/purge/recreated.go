package purge

import (
	"slices"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// RecreationPasses is how many passes a type may come back in before purge
// stops chasing it: enough for a controller that is itself shutting down
// with the namespace, few enough not to delete in a loop until --timeout.
const RecreationPasses = 3

// recreations notices content that comes back while purge deletes it: an
// object under a name purge already deleted but with a new UID, or an
// object created after the namespace was deleted. NamespaceLifecycle
// admission refuses both for built-in types and CRDs; an aggregated API
// that does not run it lets a live controller keep creating.
type recreations struct {
	mu        sync.Mutex
	deletedAt time.Time
	uids      map[schemaGVR]map[string]types.UID
	objects   map[string]*Recreated
	thisPass  map[schemaGVR]bool
	passes    map[schemaGVR]int
}

func newRecreations() *recreations {
	return &recreations{uids: map[schemaGVR]map[string]types.UID{}, objects: map[string]*Recreated{},
		thisPass: map[schemaGVR]bool{}, passes: map[schemaGVR]int{}}
}

func (rc *recreations) setDeletedAt(t time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.deletedAt = t
}

// observe is called with every object about to be deleted.
func (rc *recreations) observe(gvr schemaGVR, obj metav1.Object) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.uids[gvr] == nil {
		rc.uids[gvr] = map[string]types.UID{}
	}
	prev, known := rc.uids[gvr][obj.GetName()]
	rc.uids[gvr][obj.GetName()] = obj.GetUID()
	back := (known && prev != obj.GetUID()) ||
		(!known && !rc.deletedAt.IsZero() && obj.GetCreationTimestamp().After(rc.deletedAt))
	if !back {
		return
	}
	rc.thisPass[gvr] = true
	key := deletion.ResourceName(gvr) + "/" + obj.GetName()
	r := rc.objects[key]
	if r == nil {
		r = &Recreated{Resource: deletion.ResourceName(gvr), Name: obj.GetName()}
		rc.objects[key] = r
	}
	r.Times++
	r.CreatedBy = creator(obj)
}

// endPass counts the types that came back in this pass and returns those
// purge should stop chasing.
func (rc *recreations) endPass() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var chased []string
	for gvr := range rc.thisPass {
		rc.passes[gvr]++
		if rc.passes[gvr] >= RecreationPasses {
			chased = append(chased, deletion.ResourceName(gvr))
		}
	}
	rc.thisPass = map[schemaGVR]bool{}
	sort.Strings(chased)
	return chased
}

// list is what came back, for the report.
func (rc *recreations) list() []Recreated {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := []Recreated{}
	for _, r := range rc.objects {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Resource+"/"+out[i].Name < out[j].Resource+"/"+out[j].Name
	})
	return out
}

// creator is the field manager that created the object, when the server
// keeps managed fields.
func creator(obj metav1.Object) string {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != "" {
			return mf.Manager
		}
	}
	return ""
}

// stop is the report's account of a run that stopped chasing content.
func (rc *recreations) stop(chased []string) *Stop {
	var managers []string
	for _, o := range rc.list() {
		if o.CreatedBy != "" && !slices.Contains(managers, o.CreatedBy) {
			managers = append(managers, o.CreatedBy)
		}
	}
	return &Stop{Reason: StopRecreated, Recreated: chased, CreatedBy: managers}
}
