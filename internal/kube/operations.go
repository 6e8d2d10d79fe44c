package kube

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// MetadataOps sends a deletion pass's requests (deletion.Operations) as
// upstream does, with background propagation: lists and single deletes
// through the metadata client, whole collections through Collections
// (the same request; its answer is streamed away).
type MetadataOps struct {
	Client      metadata.Interface
	Collections Collections
	// DryRun sends every deletion with dryRun=All: admission and RBAC
	// answer, nothing is persisted.
	DryRun bool
}

// NewMetadataOps sends with c's sweep clients (see SweepMetadata).
func NewMetadataOps(c *Clients, dryRun bool) *MetadataOps {
	return &MetadataOps{Client: c.SweepMetadata(), Collections: c.Collections, DryRun: dryRun}
}

func (m *MetadataOps) deleteOptions() metav1.DeleteOptions {
	// namespace controller does not want the garbage collector to insert
	// the orphan finalizer (upstream's comment on the same options).
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	if m.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return opts
}

// DeleteCollection deletes everything of a resource in namespace.
func (m *MetadataOps) DeleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) error {
	return m.Collections.DeleteCollection(Writing(ctx), gvr, namespace, m.deleteOptions())
}

// List lists a resource's items in namespace, metadata only, page by page.
func (m *MetadataOps) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error) {
	return ListMetadata(ctx, m.Client, gvr, namespace)
}

// Delete deletes one item.
func (m *MetadataOps) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) error {
	return m.Client.Resource(gvr).Namespace(namespace).Delete(Writing(ctx), name, m.deleteOptions())
}
