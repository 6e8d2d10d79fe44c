package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AppTypes are the types an App is made of: what AppState compares.
var AppTypes = []schema.GroupVersionResource{
	{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "secrets"}, {Version: "v1", Resource: "serviceaccounts"},
	{Version: "v1", Resource: "services"}, {Version: "v1", Resource: "persistentvolumeclaims"},
	{Version: "v1", Resource: "resourcequotas"}, {Version: "v1", Resource: "limitranges"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	{Group: "apps", Version: "v1", Resource: "deployments"}, {Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "batch", Version: "v1", Resource: "jobs"}, {Group: "batch", Version: "v1", Resource: "cronjobs"},
	{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}, {Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
	{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}, {Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
	WidgetsGVR, DatabasesGVR,
}

// AppState is what a namespace's objects of AppTypes say, each as
// "resource/name" and its JSON: labels, annotations, owners (kind and
// name), spec and data, without what a cluster gives every object anew
// (identity, versions, status, an allocated cluster IP, a Job's uid
// labels, the binder's and controllers' marks) and with the namespace's
// own name, where a RoleBinding's subject names it, replaced by "NS", so
// that two namespaces holding the same application compare equal. What controllers make in every namespace
// (default, kube-root-ca.crt) is left out.
func (c *Cluster) AppState(ctx context.Context, ns string) (map[string]string, error) {
	out := map[string]string{}
	for _, gvr := range AppTypes {
		list, err := c.Dynamic.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %s in %s: %w", gvr.Resource, ns, err)
		}
		for _, o := range list.Items {
			if madeInEveryNamespace(gvr.Resource, &o) || ownedBy(&o, "CronJob") {
				continue
			}
			data, err := json.Marshal(comparable(gvr.Resource, ns, &o))
			if err != nil {
				return nil, err
			}
			out[gvr.Resource+"/"+o.GetName()] = string(data)
		}
	}
	return out, nil
}

// DiffAppStates lists how got differs from want, a line each.
func DiffAppStates(want, got map[string]string) []string {
	var out []string
	for k, w := range want {
		switch g, ok := got[k]; {
		case !ok:
			out = append(out, "missing "+k)
		case g != w:
			out = append(out, fmt.Sprintf("%s differs:\n  was %s\n  now %s", k, w, g))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, "new "+k)
		}
	}
	slices.Sort(out)
	return out
}

func madeInEveryNamespace(resource string, o *unstructured.Unstructured) bool {
	switch resource {
	case "configmaps":
		return o.GetName() == "kube-root-ca.crt"
	case "serviceaccounts":
		return o.GetName() == "default"
	case "secrets":
		t, _, _ := unstructured.NestedString(o.Object, "type")
		return t == "kubernetes.io/service-account-token"
	}
	return false
}

// ownedBy tells an object a controller of kind makes (a CronJob's Jobs).
func ownedBy(o *unstructured.Unstructured, kind string) bool {
	for _, r := range o.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller && r.Kind == kind {
			return true
		}
	}
	return false
}

// What controllers and the API server write on every object, or anew on a
// restored one: not the application's.
var (
	noiseAnnotations = []string{"deployment.kubernetes.io/revision", "pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
		"volume.beta.kubernetes.io/storage-provisioner", "volume.kubernetes.io/storage-provisioner", "kubectl.kubernetes.io/last-applied-configuration"}
	jobUIDLabels = []string{"batch.kubernetes.io/controller-uid", "controller-uid", "batch.kubernetes.io/job-name", "job-name"}
)

func comparable(resource, ns string, o *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range o.Object {
		if k != "metadata" && k != "status" && k != "apiVersion" && k != "kind" {
			out[k] = v
		}
	}
	annotations := o.GetAnnotations()
	for _, a := range noiseAnnotations {
		delete(annotations, a)
	}
	if len(annotations) == 0 {
		// Only the binder's annotations, removed: none, whether the
		// binder has written them yet or not.
		annotations = nil
	}
	var owners []string
	for _, r := range o.GetOwnerReferences() {
		owners = append(owners, r.Kind+"/"+r.Name)
	}
	out["metadata"] = map[string]any{"labels": o.GetLabels(), "annotations": annotations, "owners": owners}
	u := &unstructured.Unstructured{Object: out}
	switch resource {
	case "services":
		if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip != "None" {
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
		}
	case "rolebindings":
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok && m["namespace"] == ns {
				m["namespace"] = "NS"
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, subjects, "subjects")
	case "jobs":
		for _, path := range [][]string{{"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
			for _, l := range jobUIDLabels {
				unstructured.RemoveNestedField(u.Object, append(path, l)...)
			}
		}
	}
	return u.Object
}
