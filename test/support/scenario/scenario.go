// Package scenario builds stuck namespaces on a real cluster, for the demo,
// the tests and the benchmarks. Each scenario creates its content before
// deleting the namespace (NamespaceLifecycle admission rejects new content
// in a terminating namespace).
package scenario

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Cluster holds the clients scenarios use.
type Cluster struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// LostNode is the node a pod that must never be confirmed gone is
	// bound to: on the full bed a node whose kubelet died (NotReady),
	// otherwise a node name that does not exist.
	LostNode string
	// Settle: the bed runs the ServiceAccount controller and the root CA
	// publisher, and CreateNamespace waits for what they make in a new
	// namespace (a namespace as users find it a moment after creating it).
	Settle bool
	config *rest.Config
}

// NewCluster builds the clients from cfg.
func NewCluster(cfg *rest.Config) (*Cluster, error) {
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{Kube: k, Dynamic: d, LostNode: "node-gone", config: cfg}, nil
}

var (
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// CreateNamespace creates an Active namespace (settled: Cluster.Settle).
func (c *Cluster) CreateNamespace(ctx context.Context, name string) error {
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return c.settle(ctx, name)
}

// WaitSettled is settle for a namespace created another way.
func (c *Cluster) WaitSettled(ctx context.Context, name string) error { return c.settle(ctx, name) }

// settle waits, on a bed that runs them, for what the ServiceAccount
// controller and the root CA publisher make in every new namespace: a
// fixture deleted before they act would hold less than its twin.
func (c *Cluster) settle(ctx context.Context, name string) error {
	if !c.Settle {
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, errSA := c.Kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		_, errCA := c.Kube.CoreV1().ConfigMaps(name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return errSA == nil && errCA == nil, nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s: no default ServiceAccount or kube-root-ca.crt from their controllers: %w", name, err)
	}
	return nil
}

// DeleteNamespace starts the namespace's deletion.
func (c *Cluster) DeleteNamespace(ctx context.Context, name string) error {
	if err := c.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting namespace %s: %w", name, err)
	}
	return nil
}

// EnsureCRD creates a namespaced CRD <plural>.<group> (kind given) if it
// does not exist and waits until it serves.
func (c *Cluster) EnsureCRD(ctx context.Context, group, kind, plural string) (schema.GroupVersionResource, error) {
	return c.ensureCRD(ctx, group, kind, plural, "Namespaced")
}

// EnsureClusterCRD is EnsureCRD for a cluster-scoped kind.
func (c *Cluster) EnsureClusterCRD(ctx context.Context, group, kind, plural string) (schema.GroupVersionResource, error) {
	return c.ensureCRD(ctx, group, kind, plural, "Cluster")
}

func (c *Cluster) ensureCRD(ctx context.Context, group, kind, plural, scope string) (schema.GroupVersionResource, error) {
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group, "scope": scope,
			"names": map[string]any{"kind": kind, "plural": plural, "singular": lower(kind), "listKind": kind + "List"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	_, err := c.Dynamic.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return gvr, fmt.Errorf("creating CRD %s.%s: %w", plural, group, err)
	}
	// Established is not enough: the resource must be listable, which is
	// what the namespace controller's discovery and ns-doctor rely on.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		return gvr, fmt.Errorf("waiting for CRD %s.%s to serve: %w", plural, group, err)
	}
	// Nor is listable: the aggregated discovery the controller and
	// ns-doctor read is rebuilt a moment later, longer on a loaded machine.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, lists, err := c.Kube.Discovery().ServerGroupsAndResources()
		if err != nil && len(lists) == 0 {
			return false, nil
		}
		for _, l := range lists {
			if l.GroupVersion != gvr.GroupVersion().String() {
				continue
			}
			for _, r := range l.APIResources {
				if r.Name == plural {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return gvr, fmt.Errorf("waiting for CRD %s.%s in discovery: %w", plural, group, err)
	}
	return gvr, nil
}

// CreateCustomResource creates one instance with the given finalizers.
func (c *Cluster) CreateCustomResource(ctx context.Context, gvr schema.GroupVersionResource, kind, namespace, name string, finalizers ...string) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": namespace},
	}}
	obj.SetFinalizers(finalizers)
	if _, err := c.Dynamic.Resource(gvr).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating %s %s/%s: %w", kind, namespace, name, err)
	}
	return nil
}

// BrokenAPIService registers <version>.<group> backed by a Service that
// does not exist: discovery of that group fails at once (ServiceNotFound),
// the most common reason namespaces never finish deleting. It returns the
// APIService's name.
func (c *Cluster) BrokenAPIService(ctx context.Context, group, version, svcNamespace, svcName string) (string, error) {
	name := version + "." + group
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"group": group, "version": version,
			"service":               map[string]any{"namespace": svcNamespace, "name": svcName, "port": int64(443)},
			"insecureSkipTLSVerify": true, "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
		},
	}}
	_, err := c.Dynamic.Resource(apiServiceGVR).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return name, fmt.Errorf("creating APIService %s: %w", name, err)
	}
	return name, nil
}

// DeleteAPIService removes an APIService, ignoring NotFound.
func (c *Cluster) DeleteAPIService(ctx context.Context, name string) error {
	err := c.Dynamic.Resource(apiServiceGVR).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting APIService %s: %w", name, err)
	}
	return nil
}

// WaitForConditions waits until the namespace controller has written the
// condition types given with status True.
func (c *Cluster) WaitForConditions(ctx context.Context, namespace string, timeout time.Duration, types ...v1.NamespaceConditionType) (*v1.Namespace, error) {
	var ns *v1.Namespace
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if ns, err = c.Kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, t := range types {
			if !hasTrue(ns.Status.Conditions, t) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return ns, fmt.Errorf("waiting for conditions %v on namespace %s: %w", types, namespace, err)
	}
	return ns, nil
}

// WaitForConditionStatus waits until the namespace controller has written
// condition type ct with the given status.
func (c *Cluster) WaitForConditionStatus(ctx context.Context, namespace string, timeout time.Duration, ct v1.NamespaceConditionType, status v1.ConditionStatus) (*v1.Namespace, error) {
	var ns *v1.Namespace
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if ns, err = c.Kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, cond := range ns.Status.Conditions {
			if cond.Type == ct && cond.Status == status {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return ns, fmt.Errorf("waiting for %s=%s on namespace %s: %w", ct, status, namespace, err)
	}
	return ns, nil
}

func hasTrue(conds []v1.NamespaceCondition, t v1.NamespaceConditionType) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

func lower(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}
