package rescue

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

func podSpecReferences(spec map[string]any, add func(kind, name string)) {
	sa, _, _ := unstructured.NestedString(spec, "serviceAccountName")
	add("ServiceAccount", sa)
	for _, s := range items(spec, "imagePullSecrets") {
		add("Secret", str(s, "name"))
	}
	for _, v := range items(spec, "volumes") {
		volumeReferences(v, add)
	}
	for _, field := range []string{"initContainers", "containers", "ephemeralContainers"} {
		for _, c := range items(spec, field) {
			containerReferences(c, add)
		}
	}
}

func volumeReferences(v map[string]any, add func(kind, name string)) {
	if cm, ok := v["configMap"].(map[string]any); ok && !optional(cm) {
		add("ConfigMap", str(cm, "name"))
	}
	if s, ok := v["secret"].(map[string]any); ok && !optional(s) {
		add("Secret", str(s, "secretName"))
	}
	if c, ok := v["persistentVolumeClaim"].(map[string]any); ok {
		add("PersistentVolumeClaim", str(c, "claimName"))
	}
	for _, src := range items(v, "projected", "sources") {
		if cm, ok := src["configMap"].(map[string]any); ok && !optional(cm) {
			add("ConfigMap", str(cm, "name"))
		}
		if s, ok := src["secret"].(map[string]any); ok && !optional(s) {
			add("Secret", str(s, "name"))
		}
	}
}

func containerReferences(c map[string]any, add func(kind, name string)) {
	for _, from := range items(c, "envFrom") {
		if cm, ok := from["configMapRef"].(map[string]any); ok && !optional(cm) {
			add("ConfigMap", str(cm, "name"))
		}
		if s, ok := from["secretRef"].(map[string]any); ok && !optional(s) {
			add("Secret", str(s, "name"))
		}
	}
	for _, env := range items(c, "env") {
		if cm, ok, _ := unstructured.NestedMap(env, "valueFrom", "configMapKeyRef"); ok && !optional(cm) {
			add("ConfigMap", str(cm, "name"))
		}
		if s, ok, _ := unstructured.NestedMap(env, "valueFrom", "secretKeyRef"); ok && !optional(s) {
			add("Secret", str(s, "name"))
		}
	}
}

func roleBindingReferences(obj *unstructured.Unstructured, add func(kind, name string)) {
	if kind, _, _ := unstructured.NestedString(obj.Object, "roleRef", "kind"); kind == "Role" {
		name, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
		add("Role", name)
	}
	for _, s := range items(obj.Object, "subjects") {
		if str(s, "kind") == "ServiceAccount" && (str(s, "namespace") == "" || str(s, "namespace") == obj.GetNamespace()) {
			add("ServiceAccount", str(s, "name"))
		}
	}
}

func ingressReferences(obj *unstructured.Unstructured, add func(kind, name string)) {
	for _, tls := range items(obj.Object, "spec", "tls") {
		add("Secret", str(tls, "secretName"))
	}
	for _, rule := range items(obj.Object, "spec", "rules") {
		for _, path := range items(rule, "http", "paths") {
			name, _, _ := unstructured.NestedString(path, "backend", "service", "name")
			add("Service", name)
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

// items reads a list of objects at path, skipping what is not an object.
func items(obj map[string]any, path ...string) []map[string]any {
	list, _, _ := unstructured.NestedSlice(obj, path...)
	var out []map[string]any
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func str(obj map[string]any, key string) string {
	s, _ := obj[key].(string)
	return s
}

func optional(ref map[string]any) bool {
	b, _ := ref["optional"].(bool)
	return b
}
