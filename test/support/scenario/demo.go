package scenario

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Demo is the namespace stuck for the two most common reasons.
type Demo struct {
	Namespace  string
	APIService string
	Group      string // the CRD's group
}

// CreateDemo makes namespace name hold a Widget whose finalizer nobody
// removes, registers an APIService (version.apiGroup) whose Service is
// missing, deletes the namespace and waits until the namespace controller
// has reported both problems. Pass apiGroup "metrics.k8s.io" to look like
// a cluster whose metrics-server was uninstalled.
func (c *Cluster) CreateDemo(ctx context.Context, name, apiGroup string, wait time.Duration) (*Demo, error) {
	d := &Demo{Namespace: name, Group: "example.com"}
	gvr, err := c.EnsureCRD(ctx, d.Group, "Widget", "widgets")
	if err != nil {
		return d, err
	}
	if err := c.CreateNamespace(ctx, name); err != nil {
		return d, err
	}
	if err := c.CreateCustomResource(ctx, gvr, "Widget", name, "stuck-widget", "example.com/cleanup"); err != nil {
		return d, err
	}
	if d.APIService, err = c.BrokenAPIService(ctx, apiGroup, "v1beta1", "kube-system", "metrics-server"); err != nil {
		return d, err
	}
	if err := c.DeleteNamespace(ctx, name); err != nil {
		return d, err
	}
	if wait > 0 {
		_, err = c.WaitForConditions(ctx, name, wait, v1.NamespaceDeletionDiscoveryFailure, v1.NamespaceContentRemaining, v1.NamespaceFinalizersRemaining)
		if err != nil {
			return d, fmt.Errorf("the namespace controller did not report the demo's problems: %w", err)
		}
	}
	return d, nil
}
