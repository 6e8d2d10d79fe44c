package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// CreateConfigMap creates a ConfigMap with labels and finalizers.
func (c *Cluster) CreateConfigMap(ctx context.Context, namespace, name string, labels map[string]string, finalizers ...string) error {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, Finalizers: finalizers},
		Data: map[string]string{"secret-looking": "value-" + name}}
	if _, err := c.Kube.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating configmap %s/%s: %w", namespace, name, err)
	}
	return nil
}

// ReleaseConfigMap removes every finalizer of a ConfigMap, as its owner
// does once its work is done.
func (c *Cluster) ReleaseConfigMap(ctx context.Context, namespace, name string) error {
	_, err := c.Kube.CoreV1().ConfigMaps(namespace).Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("removing the finalizers of configmap %s/%s: %w", namespace, name, err)
	}
	return nil
}

// CreateBoundPod creates a pod bound to the lost node (Cluster.LostNode):
// no kubelet will ever confirm its termination, so it stays Terminating.
func (c *Cluster) CreateBoundPod(ctx context.Context, namespace, name string, graceSeconds int64) error {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.PodSpec{
			NodeName:                      c.LostNode,
			TerminationGracePeriodSeconds: ptr.To(graceSeconds),
			Containers:                    []v1.Container{{Name: "main", Image: "registry.invalid/none"}},
		},
	}
	_, err := c.CreatePod(ctx, pod)
	return err
}

// CreatePod creates a pod, waiting first, when admission refuses it for
// want of its ServiceAccount, until the ServiceAccount controller has made
// it: every fresh namespace has that race on a real cluster.
func (c *Cluster) CreatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	var created *v1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = c.Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil && apierrors.IsForbidden(err) && strings.Contains(err.Error(), "error looking up service account") {
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return created, nil
}

// CreateNamespaceWithLabels creates an Active namespace with labels.
func (c *Cluster) CreateNamespaceWithLabels(ctx context.Context, name string, labels map[string]string) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return c.settle(ctx, name)
}

// CreateNamespaceWithFinalizers creates a namespace whose spec.finalizers
// holds tokens besides "kubernetes".
func (c *Cluster) CreateNamespaceWithFinalizers(ctx context.Context, name string, tokens ...string) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, t := range append([]string{"kubernetes"}, tokens...) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, v1.FinalizerName(t))
	}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return c.settle(ctx, name)
}

// FailClosedWebhook registers a validating webhook (failurePolicy Fail)
// whose Service svcNamespace/svcName does not exist, catching DELETE and
// UPDATE of the given resources in the namespace named target only.
func (c *Cluster) FailClosedWebhook(ctx context.Context, name, target, svcNamespace, svcName string, gvr schema.GroupVersionResource) error {
	return c.FailClosedWebhookSelecting(ctx, name, svcNamespace, svcName, &metav1.LabelSelector{MatchLabels: map[string]string{
		"kubernetes.io/metadata.name": target,
	}}, gvr)
}

// FailClosedWebhookSelecting is FailClosedWebhook for the namespaces sel
// selects.
func (c *Cluster) FailClosedWebhookSelecting(ctx context.Context, name, svcNamespace, svcName string, sel *metav1.LabelSelector, gvr schema.GroupVersionResource) error {
	cfg := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:                    "deny." + name + ".example.com",
			ClientConfig:            admissionregv1.WebhookClientConfig{Service: &admissionregv1.ServiceReference{Namespace: svcNamespace, Name: svcName, Path: ptr.To("/validate")}},
			FailurePolicy:           ptr.To(admissionregv1.Fail),
			SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       sel,
			Rules: []admissionregv1.RuleWithOperations{{
				Operations: []admissionregv1.OperationType{admissionregv1.Delete, admissionregv1.Update},
				Rule:       admissionregv1.Rule{APIGroups: []string{gvr.Group}, APIVersions: []string{gvr.Version}, Resources: []string{gvr.Resource}},
			}},
		}},
	}
	if _, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating webhook %s: %w", name, err)
	}
	return nil
}

// DeleteWebhook removes a validating webhook configuration.
func (c *Cluster) DeleteWebhook(ctx context.Context, name string) error {
	return c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
}

// GrantClusterRole creates a ClusterRole with rules, named after user, and
// binds it to that user (a client-certificate user minted by the test bed).
func (c *Cluster) GrantClusterRole(ctx context.Context, user string, rules []rbacv1.PolicyRule) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	if _, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating clusterrole %s: %w", user, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("binding clusterrole %s: %w", user, err)
	}
	return nil
}

// GrantNamespaceAdmin makes user an admin of one namespace only: a Role
// allowing everything there, bound there, as multi-tenant platforms give
// their tenants. Nothing cluster-scoped is granted.
func (c *Cluster) GrantNamespaceAdmin(ctx context.Context, namespace, user string) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant-admin", Namespace: namespace},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
	if _, err := c.Kube.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating role %s/tenant-admin: %w", namespace, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-admin", Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := c.Kube.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("binding role %s/tenant-admin: %w", namespace, err)
	}
	return nil
}

// ForceFinalize deletes the namespace and empties its spec.finalizers
// through the finalize subresource at once, as the well-known "fix" found
// online does: the namespace goes, and its content stays in storage.
func (c *Cluster) ForceFinalize(ctx context.Context, name string) error {
	if err := c.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting namespace %s: %w", name, err)
	}
	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading namespace %s: %w", name, err)
	}
	ns.Spec.Finalizers = nil
	if _, err := c.Kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("finalizing namespace %s: %w", name, err)
	}
	return nil
}

// BrokenConversionCRD creates a CRD named plural.group served in v1
// (storage) and v2, converting through a webhook whose Service
// svcNamespace/svcName does not exist, and waits until v1 serves. Lists in
// the preferred version (v2) then fail, as they do when a conversion
// webhook's operator is gone. It returns the CRD's name and v1.
func (c *Cluster) BrokenConversionCRD(ctx context.Context, group, kind, plural, svcNamespace, svcName string) (string, schema.GroupVersionResource, error) {
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	version := func(name string, storage bool) map[string]any {
		return map[string]any{"name": name, "served": true, "storage": storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	}
	name := plural + "." + group
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names":    map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"versions": []any{version("v1", true), version("v2", false)},
			"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{
				"conversionReviewVersions": []any{"v1"},
				"clientConfig":             map[string]any{"service": map[string]any{"namespace": svcNamespace, "name": svcName, "path": "/convert"}},
			}},
		},
	}}
	if _, err := c.Dynamic.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return "", schema.GroupVersionResource{}, fmt.Errorf("creating CRD %s: %w", name, err)
	}
	v1GVR, err := c.EnsureCRD(ctx, group, kind, plural) // already there: waits until it serves
	return name, v1GVR, err
}
