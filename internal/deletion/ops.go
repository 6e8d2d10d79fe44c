package deletion

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// MetadataOps sends the pass's requests for real, through the metadata
// client as upstream does, with background propagation.
type MetadataOps struct {
	Client metadata.Interface
	// List pages through large collections; nil lists in one request.
	Lister func(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error)
	// DryRun sends every deletion with dryRun=All: admission and RBAC
	// answer, nothing is persisted.
	DryRun bool
}

var _ Operations = (*MetadataOps)(nil)

func (m *MetadataOps) deleteOptions() metav1.DeleteOptions {
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

// ServerDryRunOps sends every deletion with dryRun=All, so webhooks and
// RBAC give their real answer, and predicts from the snapshot what would
// remain, since a dry run removes nothing to count.
type ServerDryRunOps struct {
	Server *MetadataOps
	Plan   *PlanOps
}

var _ Operations = (*ServerDryRunOps)(nil)

// DeleteCollection asks the server, then records the planned deletion.
func (s *ServerDryRunOps) DeleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) error {
	if err := s.Server.DeleteCollection(ctx, gvr, namespace); err != nil {
		return err
	}
	return s.Plan.DeleteCollection(ctx, gvr, namespace)
}

// Delete asks the server, then records the planned deletion.
func (s *ServerDryRunOps) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) error {
	if err := s.Server.Delete(ctx, gvr, namespace, name); err != nil {
		return err
	}
	return s.Plan.Delete(ctx, gvr, namespace, name)
}

// List answers from the plan.
func (s *ServerDryRunOps) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error) {
	return s.Plan.List(ctx, gvr, namespace)
}
