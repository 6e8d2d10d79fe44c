package deletion

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// ServerDryRunOps sends every deletion with dryRun=All, so webhooks and
// RBAC give their real answer, and plays it on the plan, since a dry run
// removes nothing to count.
type ServerDryRunOps struct {
	// Server sends the requests with dryRun=All.
	Server Operations
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
