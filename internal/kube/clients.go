// Package kube builds the clients ns-doctor talks to the API server with,
// and does its discovery and metadata listing.
package kube

import (
	"fmt"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// Clients are the API clients of one command run. Namespace content is
// only ever read through Metadata, so Secret and ConfigMap data never leave
// the server.
type Clients struct {
	Config    *rest.Config
	Kube      kubernetes.Interface
	Metadata  metadata.Interface
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	// Aggregator reads APIServices.
	Aggregator aggregator.Interface
	// Collections reads objects in full (the backup of what purge
	// deletes) and deletes whole collections.
	Collections Collections
	// Placement tells the nodes of pods, their spec unread.
	Placement PodPlacement

	apf *apf
	// sweep, when set, answers sweeps instead (MetadataCache).
	sweep metadata.Interface
}

// NewClients builds the clients from kubectl's flags.
func NewClients(getter genericclioptions.RESTClientGetter) (*Clients, error) {
	cfg, err := getter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return ClientsForConfig(cfg)
}

// ClientsForConfig builds the clients from a rest.Config, raising its
// client-side rate limit the way kube-controller-manager does for the
// namespace controller (QPS x20, burst x100): a sweep of 150 resource types
// at client-go's default 5 QPS would take 30 s. The API server's priority
// and fairness still protects it from us.
func ClientsForConfig(cfg *rest.Config) (*Clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = RaisedRateLimit(cfg.QPS, cfg.Burst)
	// Warnings reach the user for writes only (warnings.go).
	cfg.WarningHandler, cfg.WarningHandlerWithContext = nil, warningHandler{}
	c := &Clients{apf: &apf{}}
	c.Collections, c.Placement = restCollections{c: c}, tablePlacement{c: c}
	cfg.Wrap(c.apf.wrap)
	c.Config = cfg
	var err error
	if c.Kube, err = kubernetes.NewForConfig(c.apf.limited(cfg)); err != nil {
		return nil, fmt.Errorf("building the Kubernetes client: %w", err)
	}
	if c.Metadata, err = metadata.NewForConfig(c.apf.limited(cfg)); err != nil {
		return nil, fmt.Errorf("building the metadata client: %w", err)
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.apf.limited(cfg)); err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	if c.Aggregator, err = aggregator.NewForConfig(c.apf.limited(cfg)); err != nil {
		return nil, fmt.Errorf("building the aggregator client: %w", err)
	}
	// A fresh, in-memory discovery client: kubectl's disk cache may be
	// hours old, and a doctor must see the API as it is now.
	if c.Discovery, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		return nil, fmt.Errorf("building the discovery client: %w", err)
	}
	return c, nil
}

// RaisedRateLimit applies the namespace controller's multipliers to a
// client rate limit, starting from client-go's defaults when unset.
func RaisedRateLimit(qps float32, burst int) (float32, int) {
	if qps <= 0 {
		qps = rest.DefaultQPS
	}
	if burst <= 0 {
		burst = rest.DefaultBurst
	}
	return qps * 20, burst * 100
}
