package kube

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// MetadataOps sends a deletion pass's requests (deletion.Operations)
// through the metadata client, as upstream does, with background
// propagation.
type MetadataOps struct {
	Client metadata.Interface
	// List pages through large collections; nil lists in one request.
	Lister func(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error)
	// DryRun sends every deletion with dryRun=All: admission and RBAC
	// answer, nothing is persisted.
	DryRun bool
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
	return m.Client.Resource(gvr).Namespace(namespace).DeleteCollection(ctx, m.deleteOptions(), metav1.ListOptions{})
}

// List lists a resource's items in namespace, metadata only.
func (m *MetadataOps) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error) {
	if m.Lister != nil {
		return m.Lister(ctx, gvr, namespace)
	}
	return m.Client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
}

// Delete deletes one item.
func (m *MetadataOps) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) error {
	return m.Client.Resource(gvr).Namespace(namespace).Delete(ctx, name, m.deleteOptions())
}
