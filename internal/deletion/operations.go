package deletion

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// Operations are the requests a pass sends for namespace content; upstream
// sends them with its metadata client. Implementations must be safe for
// concurrent use: a pass may delete several resource types at once.
type Operations interface {
	DeleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) error
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error)
	Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) error
}

// PodLister lists pods with their spec, for the grace-period estimate.
type PodLister interface {
	ListPods(ctx context.Context, namespace string) ([]v1.Pod, error)
}

// NamespaceClient is what Delete sends about the namespace itself;
// client-go's NamespaceInterface is one.
type NamespaceClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.Namespace, error)
	Finalize(ctx context.Context, item *v1.Namespace, opts metav1.UpdateOptions) (*v1.Namespace, error)
}

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

// ServerDryRunOps sends every deletion with dryRun=All, so webhooks and
// RBAC give their real answer, and plays it on the plan, since a dry run
// removes nothing to count.
type ServerDryRunOps struct {
	Server *MetadataOps
	Plan   *PlanOps
}

var _ Operations = (*ServerDryRunOps)(nil)

// DeleteCollection asks the server, then plays the deletion on the plan.
func (s *ServerDryRunOps) DeleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) error {
	if err := s.Server.DeleteCollection(ctx, gvr, namespace); err != nil {
		return err
	}
	return s.Plan.DeleteCollection(ctx, gvr, namespace)
}

// Delete asks the server, then plays the deletion on the plan.
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

// ServerDryRunNamespaces sends the finalize call with dryRun=All and plays
// it on the plan.
type ServerDryRunNamespaces struct {
	Server NamespaceClient
	Plan   *PlanNamespaces
}

var _ NamespaceClient = (*ServerDryRunNamespaces)(nil)

// Get answers from the plan.
func (s *ServerDryRunNamespaces) Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1.Namespace, error) {
	return s.Plan.Get(ctx, name, opts)
}

// Finalize asks the server, then plays the call on the plan.
func (s *ServerDryRunNamespaces) Finalize(ctx context.Context, ns *v1.Namespace, opts metav1.UpdateOptions) (*v1.Namespace, error) {
	opts.DryRun = []string{metav1.DryRunAll}
	if _, err := s.Server.Finalize(ctx, ns, opts); err != nil {
		return nil, err
	}
	return s.Plan.Finalize(ctx, ns, opts)
}
