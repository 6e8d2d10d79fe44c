package kube

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Discovery is the API surface as the namespace controller sees it.
type Discovery struct {
	// Resources are the preferred namespaced resources, partial when some
	// groups failed.
	Resources []*metav1.APIResourceList
	// Err is discovery's error exactly as returned (the controller's
	// DiscoveryFailure message is built from it), nil when complete.
	Err error
	// Failed names each group-version that could not be discovered.
	Failed map[schema.GroupVersion]error

	// deletable is DeletableResources, made on first use: thousands of
	// diagnoses share one discovery.
	deletable atomic.Pointer[map[schema.GroupVersionResource]metav1.APIResource]
}

// Discover runs the controller's discovery call, ending with ctx: a watch
// told to stop must not wait out a slow API server's discovery. Only a
// total failure is an error; a partial one is recorded in the result.
func Discover(ctx context.Context, client discovery.DiscoveryInterface) (*Discovery, error) {
	resources, err := discovery.ServerPreferredNamespacedResourcesWithContext(ctx, discovery.ToDiscoveryInterfaceWithContext(client))
	d := &Discovery{Resources: resources, Err: err}
	var groupErr *discovery.ErrGroupDiscoveryFailed
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("discovering the API's resources: %w", context.Cause(ctx))
	case err == nil:
	case errors.As(err, &groupErr):
		d.Failed = groupErr.Groups
	case len(resources) == 0:
		return nil, fmt.Errorf("discovering the API's resources: %w", err)
	}
	return d, nil
}

// DeletableResources are the resources the controller deletes: namespaced,
// preferred version, supporting delete. The map is shared: callers must not
// change it.
func (d *Discovery) DeletableResources() map[schema.GroupVersionResource]metav1.APIResource {
	if m := d.deletable.Load(); m != nil {
		return *m
	}
	out := d.deletableResources()
	d.deletable.Store(&out)
	return out
}

func (d *Discovery) deletableResources() map[schema.GroupVersionResource]metav1.APIResource {
	out := map[schema.GroupVersionResource]metav1.APIResource{}
	deletable := discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete"}}, d.Resources)
	for _, rl := range deletable {
		gv, err := schema.ParseGroupVersion(rl.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range rl.APIResources {
			out[gv.WithResource(r.Name)] = r
		}
	}
	return out
}

// ServerVersion is the API server's gitVersion, e.g. v1.33.13 (one GET
// /version).
func ServerVersion(ctx context.Context, client discovery.DiscoveryInterface) (string, error) {
	info, err := discovery.ToDiscoveryInterfaceWithContext(client).ServerVersionWithContext(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the server's version: %w", err)
	}
	return info.GitVersion, nil
}

// Served are those of gvrs the API server serves: one discovery request per
// group-version, a group-version that cannot be read left out.
func Served(ctx context.Context, client discovery.DiscoveryInterface, gvrs []schema.GroupVersionResource) []schema.GroupVersionResource {
	byGV := map[schema.GroupVersion]map[string]bool{}
	var out []schema.GroupVersionResource
	for _, gvr := range gvrs {
		gv := gvr.GroupVersion()
		if byGV[gv] == nil {
			byGV[gv] = map[string]bool{}
			if rl, err := discovery.ToDiscoveryInterfaceWithContext(client).ServerResourcesForGroupVersionWithContext(ctx, gv.String()); err == nil {
				for _, r := range rl.APIResources {
					byGV[gv][r.Name] = true
				}
			}
		}
		if byGV[gv][gvr.Resource] {
			out = append(out, gvr)
		}
	}
	return out
}
