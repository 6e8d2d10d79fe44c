package scenario

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Operator is an operator installed as its manifests install it, for the
// owner inference's scenarios: a ServiceAccount, a ClusterRole with its
// rules bound to that account, and a Deployment running as it. Client
// acts as the operator: its requests carry the operator's name as their
// user agent, so the API server records its writes under that field
// manager, as it does a controller's.
type Operator struct {
	Namespace, Name string
	Client          *Cluster
}

// InstallOperator installs an operator (its namespace too, if missing),
// its Deployment with ready replicas ready: no kubelet runs in the test
// bed, so the status is written as the deployment controller would.
func (c *Cluster) InstallOperator(ctx context.Context, namespace, name string, ready int32, rules ...rbacv1.PolicyRule) (*Operator, error) {
	if err := c.CreateNamespace(ctx, namespace); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := c.Kube.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating serviceaccount %s/%s: %w", namespace, name, err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating clusterrole %s: %w", name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}}}
	if _, err := c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating clusterrolebinding %s: %w", name, err)
	}
	labels := map[string]string{"app.kubernetes.io/name": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{ServiceAccountName: name, Containers: []v1.Container{{Name: "manager", Image: "registry.invalid/" + name + ":v1"}}}}}}
	created, err := c.Kube.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating deployment %s/%s: %w", namespace, name, err)
	}
	created.Status.Replicas, created.Status.ReadyReplicas, created.Status.AvailableReplicas = 1, ready, ready
	if _, err := c.Kube.AppsV1().Deployments(namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("writing the status of deployment %s/%s: %w", namespace, name, err)
	}
	client, err := c.As(name + "/v1.0.0")
	if err != nil {
		return nil, err
	}
	return &Operator{Namespace: namespace, Name: name, Client: client}, nil
}

// Uninstall removes what InstallOperator made outside its namespace (the
// ClusterRole and its binding) and its Deployment, so that other tests
// sharing the control plane do not see it.
func (o *Operator) Uninstall(ctx context.Context, c *Cluster) {
	_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, o.Name, metav1.DeleteOptions{})
	_ = c.Kube.RbacV1().ClusterRoles().Delete(ctx, o.Name, metav1.DeleteOptions{})
	_ = c.Kube.AppsV1().Deployments(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{})
}

// As is the cluster seen through a client whose user agent is userAgent:
// the API server names the field manager of its writes after it (the part
// before "/"), as it does for a controller that sets none.
func (c *Cluster) As(userAgent string) (*Cluster, error) {
	cfg := rest.CopyConfig(c.config)
	cfg.UserAgent = userAgent
	return NewCluster(cfg)
}
