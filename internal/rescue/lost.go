package rescue

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// Lost is an object of the namespace that what remains names and that is
// no longer there: deleted before the hold (pods first with ordered
// deletion; anything at all without it). Objects nothing left names
// cannot be known this way, and the report says so.
type Lost struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// By are the saved objects that name it, as "Kind/name".
	By []string `json:"by"`
}

// ref is one object naming another of the same namespace.
type ref struct {
	kind, name string
	// by is who names it, as "Kind/name".
	by string
}

// references lists what obj names in its own namespace: the ConfigMaps,
// Secrets, claims and ServiceAccount its pods use (a pod, or any object
// with a pod template), a StatefulSet's Service, a RoleBinding's Role and
// ServiceAccounts, an Ingress's Services and Secrets, and its owners of
// namespaced kinds. Optional references are not counted: their absence
// is allowed, so it proves nothing.
func references(obj *unstructured.Unstructured, namespaced map[string]bool) []ref {
	by := obj.GetKind() + "/" + obj.GetName()
	var out []ref
	add := func(kind, name string) {
		if name != "" {
			out = append(out, ref{kind: kind, name: name, by: by})
		}
	}
	for _, spec := range podSpecs(obj) {
		podSpecReferences(spec, add)
	}
	switch obj.GetKind() {
	case "StatefulSet":
		name, _, _ := unstructured.NestedString(obj.Object, "spec", "serviceName")
		add("Service", name)
	case "RoleBinding":
		roleBindingReferences(obj, add)
	case "Ingress":
		ingressReferences(obj, add)
	}
	for _, o := range obj.GetOwnerReferences() {
		if namespaced[o.Kind] {
			add(o.Kind, o.Name)
		}
	}
	return out
}

// podSpecs finds the pod specs an object carries: its own (a Pod), a
// template's (Deployments, StatefulSets, Jobs and any custom workload
// shaped alike), a CronJob's job template's.
func podSpecs(obj *unstructured.Unstructured) []map[string]any {
	var out []map[string]any
	for _, path := range [][]string{{"spec", "template", "spec"}, {"spec", "jobTemplate", "spec", "template", "spec"}} {
		if spec, ok, _ := unstructured.NestedMap(obj.Object, path...); ok {
			out = append(out, spec)
		}
	}
	if obj.GetKind() == "Pod" {
		if spec, ok, _ := unstructured.NestedMap(obj.Object, "spec"); ok {
			out = append(out, spec)
		}
	}
	return out
}

// podSpecReferences reads the spec as the API's own type: what the
// kubelet resolves is what it names.
func podSpecReferences(raw map[string]any, add func(kind, name string)) {
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return // not a pod spec after all: it names nothing we can read
	}
	add("ServiceAccount", spec.ServiceAccountName)
	for _, s := range spec.ImagePullSecrets {
		add("Secret", s.Name)
	}
	for _, v := range spec.Volumes {
		volumeReferences(v.VolumeSource, add)
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		envReferences(c.EnvFrom, c.Env, add)
	}
	for _, c := range spec.EphemeralContainers {
		envReferences(c.EnvFrom, c.Env, add)
	}
}

func volumeReferences(v corev1.VolumeSource, add func(kind, name string)) {
	if cm := v.ConfigMap; cm != nil && !ptr.Deref(cm.Optional, false) {
		add("ConfigMap", cm.Name)
	}
	if s := v.Secret; s != nil && !ptr.Deref(s.Optional, false) {
		add("Secret", s.SecretName)
	}
	if c := v.PersistentVolumeClaim; c != nil {
		add("PersistentVolumeClaim", c.ClaimName)
	}
	if p := v.Projected; p != nil {
		for _, src := range p.Sources {
			if cm := src.ConfigMap; cm != nil && !ptr.Deref(cm.Optional, false) {
				add("ConfigMap", cm.Name)
			}
			if s := src.Secret; s != nil && !ptr.Deref(s.Optional, false) {
				add("Secret", s.Name)
			}
		}
	}
}

func envReferences(from []corev1.EnvFromSource, vars []corev1.EnvVar, add func(kind, name string)) {
	for _, f := range from {
		if cm := f.ConfigMapRef; cm != nil && !ptr.Deref(cm.Optional, false) {
			add("ConfigMap", cm.Name)
		}
		if s := f.SecretRef; s != nil && !ptr.Deref(s.Optional, false) {
			add("Secret", s.Name)
		}
	}
	for _, e := range vars {
		if e.ValueFrom == nil {
			continue
		}
		if cm := e.ValueFrom.ConfigMapKeyRef; cm != nil && !ptr.Deref(cm.Optional, false) {
			add("ConfigMap", cm.Name)
		}
		if s := e.ValueFrom.SecretKeyRef; s != nil && !ptr.Deref(s.Optional, false) {
			add("Secret", s.Name)
		}
	}
}

func roleBindingReferences(obj *unstructured.Unstructured, add func(kind, name string)) {
	var rb rbacv1.RoleBinding
	if runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &rb) != nil {
		return
	}
	if rb.RoleRef.Kind == "Role" {
		add("Role", rb.RoleRef.Name)
	}
	for _, s := range rb.Subjects {
		if s.Kind == rbacv1.ServiceAccountKind && (s.Namespace == "" || s.Namespace == obj.GetNamespace()) {
			add("ServiceAccount", s.Name)
		}
	}
}

func ingressReferences(obj *unstructured.Unstructured, add func(kind, name string)) {
	var in networkingv1.Ingress
	if runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &in) != nil {
		return
	}
	for _, tls := range in.Spec.TLS {
		add("Secret", tls.SecretName)
	}
	for _, rule := range in.Spec.Rules {
		if rule.HTTP == nil {
			continue
		}
		for _, path := range rule.HTTP.Paths {
			if path.Backend.Service != nil {
				add("Service", path.Backend.Service.Name)
			}
		}
	}
}

// lost is what refs name that saved (as "Kind/name") lacks, sorted, each
// with who names it.
func lost(refs []ref, saved map[string]bool) []Lost {
	byTarget := map[string]*Lost{}
	for _, r := range refs {
		key := r.kind + "/" + r.name
		if saved[key] {
			continue
		}
		l := byTarget[key]
		if l == nil {
			l = &Lost{Kind: r.kind, Name: r.name}
			byTarget[key] = l
		}
		if !slices.Contains(l.By, r.by) {
			l.By = append(l.By, r.by)
		}
	}
	out := make([]Lost, 0, len(byTarget))
	for _, l := range byTarget {
		slices.Sort(l.By)
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b Lost) int {
		return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name)
	})
	return out
}
