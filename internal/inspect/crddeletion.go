package inspect

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/pager"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// crdPageSize pages the list of a CRD's instances across the cluster.
const crdPageSize = 500

// ObserveCRDDeletion reads what deleting crd would meet: its instances
// in every namespace (metadata only, in version), the finalizers they
// carry and whether each finalizer's owner runs; when they cannot be
// listed, the state of the CRD's conversion webhook backend.
func (i *Inspector) ObserveCRDDeletion(ctx context.Context, crd diagnose.CRD, version string) (diagnose.CRDDeletion, error) {
	d := diagnose.CRDDeletion{CRD: crd, Version: version, Finalizers: map[string]int{}, Owners: map[string]diagnose.OwnerState{}}
	gvr := schema.GroupVersionResource{Group: crd.Group, Version: version, Resource: crd.Plural}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return i.clients.Metadata.Resource(gvr).List(ctx, opts)
	})
	p.PageSize = crdPageSize
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		item := obj.(*metav1.PartialObjectMetadata)
		d.Instances++
		if len(item.Finalizers) == 0 {
			return nil
		}
		d.Held++
		for _, f := range item.Finalizers {
			d.Finalizers[f]++
		}
		if len(d.Examples) < diagnose.MaxExamples {
			d.Examples = append(d.Examples, qualified(item.Namespace, item.Name))
		}
		return nil
	})
	if err := ctx.Err(); err != nil {
		return d, err
	}
	if err != nil {
		d.ListErr = err.Error()
		if crd.ConversionService != nil {
			state := i.serviceState(ctx, *crd.ConversionService)
			d.Conversion = &state
		}
		return d, nil
	}
	d.Owners = i.ownersOf(ctx, d.Finalizers)
	return d, ctx.Err()
}

// ownersOf reads the owner of each finalizer, at once (bounded).
func (i *Inspector) ownersOf(ctx context.Context, finalizers map[string]int) map[string]diagnose.OwnerState {
	out := map[string]diagnose.OwnerState{}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(evidenceConcurrency)
	for f := range finalizers {
		g.Go(func() error {
			s := i.owner(ctx, f)
			mu.Lock()
			out[f] = s
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	return out
}

func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return fmt.Sprintf("%s/%s", namespace, name)
}
