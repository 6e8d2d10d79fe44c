package purge

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// backupOps saves every object in full before a request may delete it:
// whatever purge deletes by force can be re-applied. It also counts the
// objects each request reaches.
type backupOps struct {
	inner  deletion.Operations
	bk     *backup.Writer
	dyn    *kube.Clients
	counts *counts
	rc     *recreations
}

var _ deletion.Operations = (*backupOps)(nil)

func (b *backupOps) DeleteCollection(ctx context.Context, gvr schemaGVR, ns string) error {
	if err := b.saveAll(ctx, gvr, ns); err != nil {
		return err
	}
	return b.inner.DeleteCollection(ctx, gvr, ns)
}

func (b *backupOps) Delete(ctx context.Context, gvr schemaGVR, ns, name string) error {
	obj, err := b.dyn.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	b.rc.observe(gvr, obj)
	if err := b.bk.Save(gvr, obj); err != nil {
		return err
	}
	return b.inner.Delete(ctx, gvr, ns, name)
}

func (b *backupOps) List(ctx context.Context, gvr schemaGVR, ns string) (*metav1.PartialObjectMetadataList, error) {
	return b.inner.List(ctx, gvr, ns)
}

// saveAll pages through the full objects of a resource and saves them; if
// that fails, the deletion is not sent and the pass reports why.
func (b *backupOps) saveAll(ctx context.Context, gvr schemaGVR, ns string) error {
	n := 0
	pg := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return b.dyn.Dynamic.Resource(gvr).Namespace(ns).List(ctx, opts)
	})
	err := pg.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		n++
		u := obj.(*unstructured.Unstructured)
		b.rc.observe(gvr, u)
		return b.bk.Save(gvr, u)
	})
	b.counts.set(gvr, n)
	if err != nil {
		// Nothing is deleted that could not be saved first.
		return fmt.Errorf("backing up %s before deleting them: %w", deletion.ResourceName(gvr), err)
	}
	return nil
}

// counts are the objects saved per resource in one pass.
type counts struct {
	mu sync.Mutex
	m  map[schemaGVR]int
}

func newCounts() *counts { return &counts{m: map[schemaGVR]int{}} }

func (c *counts) set(gvr schemaGVR, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[gvr] = n
}

func (c *counts) get(gvr schemaGVR) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[gvr]
}
