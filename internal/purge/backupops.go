package purge

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/json"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// backupOps saves every object in full before a request may delete it:
// whatever purge deletes by force can be re-applied. It also counts the
// objects each request reaches, and spares round trips whose answer the
// backup's list already gives (see DeleteCollection and List).
type backupOps struct {
	inner  deletion.Operations
	bk     *backup.Writer
	dyn    *kube.Clients
	counts *counts
	rc     *recreations

	mu sync.Mutex
	// pods are the pods the last estimate read.
	pods []v1.Pod
}

func (b *backupOps) seenPods() []v1.Pod {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pods
}

var (
	_ deletion.Operations = (*backupOps)(nil)
	_ deletion.PodLister  = (*backupOps)(nil)
)

// DeleteCollection saves the type's objects, then deletes them; when the
// backup's list found none, there is nothing to delete and the request is
// not sent (a terminating namespace admits no new objects, but for
// aggregated APIs without admission, which the next pass catches). Pods
// were saved by the pass's ListPods just before.
func (b *backupOps) DeleteCollection(ctx context.Context, gvr schemaGVR, ns string) error {
	if !b.counts.saved(gvr) {
		if err := b.saveAll(ctx, gvr, ns, nil); err != nil {
			return err
		}
	}
	if b.counts.get(gvr) == 0 {
		b.counts.mark(gvr, skipped)
		return nil
	}
	if err := b.inner.DeleteCollection(ctx, gvr, ns); err != nil {
		return err
	}
	if !b.counts.held(gvr) && gvr != deletion.PodsGVR {
		b.counts.mark(gvr, gone)
	}
	return nil
}

// ListPods is the pass's grace-period estimate, which upstream makes from
// a full list of the pods right before deleting them: the same list saves
// them, one round trip instead of two.
func (b *backupOps) ListPods(ctx context.Context, ns string) ([]v1.Pod, error) {
	var pods []v1.Pod
	err := b.saveAll(ctx, deletion.PodsGVR, ns, func(raw []byte) error {
		var pod v1.Pod
		if err := json.Unmarshal(raw, &pod); err != nil {
			return fmt.Errorf("reading pod: %w", err)
		}
		pods = append(pods, pod)
		return nil
	})
	b.mu.Lock()
	b.pods = pods
	b.mu.Unlock()
	return pods, err
}

func (b *backupOps) Delete(ctx context.Context, gvr schemaGVR, ns, name string) error {
	obj, err := b.dyn.SweepDynamic().Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	b.rc.observe(gvr, obj)
	if err := b.bk.Save(gvr, obj); err != nil {
		return err
	}
	return b.inner.Delete(ctx, gvr, ns, name)
}

// List is the recount after a deletion: when the deletion was spared, or
// removed objects that nothing held (no finalizers, not terminating, not
// pods), the API server deleted them at once and the answer is known.
func (b *backupOps) List(ctx context.Context, gvr schemaGVR, ns string) (*metav1.PartialObjectMetadataList, error) {
	if s := b.counts.state(gvr); s == skipped || s == gone {
		return &metav1.PartialObjectMetadataList{}, nil
	}
	return b.inner.List(ctx, gvr, ns)
}

// saveAll pages through the full objects of a resource and saves each one
// as the server sent it (also to each, when set), a page at a time; if
// that fails, the deletion is not sent and the pass reports why.
func (b *backupOps) saveAll(ctx context.Context, gvr schemaGVR, ns string, each func(raw []byte) error) error {
	n, held := 0, false
	var page []*backup.Object
	err := b.dyn.Collections.EachObjectJSON(ctx, gvr, ns, backupPageSize, func(raw []byte, apiVersion, kind string) error {
		obj, err := backup.FromJSON(raw, apiVersion, kind)
		if err != nil {
			return err
		}
		n++
		held = held || len(obj.Meta.Finalizers) > 0 || obj.Meta.DeletionTimestamp != nil
		b.rc.observe(gvr, &obj.Meta)
		if each != nil {
			if err := each(raw); err != nil {
				return err
			}
		}
		if page = append(page, obj); len(page) < backupPageSize {
			return nil
		}
		err = b.bk.SaveObjects(gvr, page)
		page = page[:0]
		return err
	})
	if err == nil && len(page) > 0 {
		err = b.bk.SaveObjects(gvr, page)
	}
	b.counts.set(gvr, n, held)
	if err != nil {
		// Nothing is deleted that could not be saved first.
		return fmt.Errorf("backing up %s before deleting them: %w", deletion.ResourceName(gvr), err)
	}
	return nil
}

// backupPageSize is the page of the backup's full lists: with 48 types
// read at once, a page of objects near etcd's 1.5 MiB limit each (Helm
// keeps releases in Secrets) still fits in memory.
const backupPageSize = 100

// deletionState is what one pass knows of a type's deletion.
type deletionState int

const (
	pending deletionState = iota
	skipped               // nothing to delete: no request sent
	gone                  // deleted, and nothing held any of it
)

// counts are, per resource in one pass, the objects saved, whether any
// was held (finalizers, or already terminating), and the deletion's state.
type counts struct {
	mu     sync.Mutex
	m      map[schemaGVR]int
	holds  map[schemaGVR]bool
	states map[schemaGVR]deletionState
}

func newCounts() *counts {
	return &counts{m: map[schemaGVR]int{}, holds: map[schemaGVR]bool{}, states: map[schemaGVR]deletionState{}}
}

func (c *counts) set(gvr schemaGVR, n int, held bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[gvr], c.holds[gvr] = n, held
}

// saved tells whether the type was saved in this pass.
func (c *counts) saved(gvr schemaGVR) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[gvr]
	return ok
}

func (c *counts) get(gvr schemaGVR) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[gvr]
}

func (c *counts) held(gvr schemaGVR) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holds[gvr]
}

func (c *counts) mark(gvr schemaGVR, s deletionState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.states[gvr] = s
}

func (c *counts) state(gvr schemaGVR) deletionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.states[gvr]
}
