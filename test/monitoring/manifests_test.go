package monitoring

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// object is one document of a manifest file.
type object struct {
	file string
	kind string
	name string
	raw  []byte // JSON
}

// readObjects reads every document of a YAML file (relative to the
// checkout).
func readObjects(t *testing.T, file string) []object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []object
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, object{file: file, kind: meta.Kind, name: meta.Metadata.Name, raw: raw})
	}
}

// decodeStrict decodes an object into its Go type, refusing unknown
// fields: a misspelt field would otherwise be dropped without a word.
func decodeStrict(o object, into any) error {
	dec := json.NewDecoder(bytes.NewReader(o.raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return errors.New(o.file + ": " + o.kind + " " + o.name + ": " + err.Error())
	}
	return nil
}

// findObject decodes the object of that kind and name (any name when
// empty) in file.
func findObject[T any](t *testing.T, file, kind, name string) *T {
	t.Helper()
	for _, o := range readObjects(t, file) {
		if o.kind == kind && (name == "" || o.name == name) {
			var out T
			if err := decodeStrict(o, &out); err != nil {
				t.Fatal(err)
			}
			return &out
		}
	}
	t.Fatalf("%s: no %s %q", file, kind, name)
	return nil
}

// deployFiles is every manifest under deploy/, as `kubectl apply -R` reads
// them.
func deployFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(repoRoot, "deploy"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml", ".json":
			rel, err := filepath.Rel(repoRoot, path)
			files = append(files, rel)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestManifestsDecodeStrictly: every built-in object under deploy/ decodes
// into its Go type without unknown fields, and only the kinds the docs
// promise are there (the server dry run covers the operator's kinds).
func TestManifestsDecodeStrictly(t *testing.T) {
	types := map[string]func() any{
		"Namespace": func() any { return &corev1.Namespace{} }, "ServiceAccount": func() any { return &corev1.ServiceAccount{} },
		"Service": func() any { return &corev1.Service{} }, "Deployment": func() any { return &appsv1.Deployment{} },
		"ClusterRole": func() any { return &rbacv1.ClusterRole{} }, "ClusterRoleBinding": func() any { return &rbacv1.ClusterRoleBinding{} },
		"Role": func() any { return &rbacv1.Role{} }, "RoleBinding": func() any { return &rbacv1.RoleBinding{} },
		"ValidatingWebhookConfiguration": func() any { return &admissionregv1.ValidatingWebhookConfiguration{} },
	}
	var kinds []string
	for _, file := range deployFiles(t) {
		for _, o := range readObjects(t, file) {
			kinds = append(kinds, o.kind)
			switch {
			case types[o.kind] != nil:
				if err := decodeStrict(o, types[o.kind]()); err != nil {
					t.Error(err)
				}
			case o.kind == "PrometheusRule" || o.kind == "ServiceMonitor":
				if !strings.HasPrefix(file, "deploy/monitoring/") {
					t.Errorf("%s: %s %s belongs in deploy/monitoring/, which users without the Prometheus Operator skip", file, o.kind, o.name)
				}
			case o.kind == "Issuer" || o.kind == "Certificate":
				if !strings.HasPrefix(file, "deploy/guard/cert-manager/") {
					t.Errorf("%s: %s %s belongs in deploy/guard/cert-manager/, which users without cert-manager skip", file, o.kind, o.name)
				}
			default:
				t.Errorf("%s: unexpected %s %q", file, o.kind, o.name)
			}
		}
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service", "PrometheusRule", "ServiceMonitor",
		"ValidatingWebhookConfiguration", "Issuer", "Certificate"} {
		if !slices.Contains(kinds, k) {
			t.Errorf("deploy/ has no %s", k)
		}
	}
}

// janitorFlags are the janitor's flags (the watch command's contract).
var janitorFlags = []string{"--purge-selector", "--purge-after", "--purge-force", "--backup-dir", "--remove-finalizers", "--force-delete-pods", "--bypass-webhook"}

func isJanitorFlag(arg string) bool {
	name, _, _ := strings.Cut(arg, "=")
	return slices.Contains(janitorFlags, name)
}

// TestWatchDeployment checks the read-only watch's Deployment, Service and
// ServiceMonitor against each other and against the watch's contract.
func TestWatchDeployment(t *testing.T) {
	d := findObject[appsv1.Deployment](t, "deploy/20-deployment.yaml", "Deployment", "ns-doctor-watch")
	if d.Namespace != "ns-doctor" || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("Deployment %s/%s with %v replicas, want ns-doctor/ns-doctor-watch with 2", d.Namespace, d.Name, d.Spec.Replicas)
	}
	pod := d.Spec.Template
	if !labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(pod.Labels)) {
		t.Errorf("the Deployment's selector %v does not select its pods %v", d.Spec.Selector.MatchLabels, pod.Labels)
	}
	sa := findObject[corev1.ServiceAccount](t, "deploy/10-rbac.yaml", "ServiceAccount", "")
	if pod.Spec.ServiceAccountName != sa.Name || sa.Namespace != d.Namespace {
		t.Errorf("pods run as %q; the ServiceAccount is %s/%s", pod.Spec.ServiceAccountName, sa.Namespace, sa.Name)
	}
	for _, b := range []rbacv1.Subject{
		findObject[rbacv1.ClusterRoleBinding](t, "deploy/10-rbac.yaml", "ClusterRoleBinding", "").Subjects[0],
		findObject[rbacv1.RoleBinding](t, "deploy/10-rbac.yaml", "RoleBinding", "").Subjects[0],
		findObject[rbacv1.ClusterRoleBinding](t, "deploy/janitor/rbac.yaml", "ClusterRoleBinding", "").Subjects[0],
	} {
		if b.Kind != "ServiceAccount" || b.Name != sa.Name || b.Namespace != sa.Namespace {
			t.Errorf("a binding names %s %s/%s, not the watch's ServiceAccount", b.Kind, b.Namespace, b.Name)
		}
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if !strings.HasPrefix(c.Image, "ghcr.io/ns-doctor/ns-doctor:") {
		t.Errorf("image %q", c.Image)
	}
	if !slices.Equal(c.Command, []string{"/kubectl-ns_doctor"}) || len(c.Args) == 0 || c.Args[0] != "watch" ||
		!slices.Contains(c.Args, "--leader-elect") || !slices.Contains(c.Args, "--metrics-addr=:8080") {
		t.Errorf("runs %v %v, want /kubectl-ns_doctor watch --leader-elect --metrics-addr=:8080", c.Command, c.Args)
	}
	if i := slices.IndexFunc(c.Args, isJanitorFlag); i >= 0 {
		t.Errorf("the read-only watch has the janitor's flag %s", c.Args[i])
	}
	if i := slices.IndexFunc(c.Args, isGuardFlag); i >= 0 {
		t.Errorf("the watch without the guard has the guard's flag %s", c.Args[i])
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("downward API env %v, want POD_NAME=metadata.name and POD_NAMESPACE=metadata.namespace", env)
	}
	sc, psc := c.SecurityContext, pod.Spec.SecurityContext
	switch {
	case sc == nil || psc == nil:
		t.Error("no securityContext")
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot, sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem,
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation,
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0,
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault,
		psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot:
		t.Errorf("securityContext %+v (pod %+v): want runAsNonRoot, readOnlyRootFilesystem, no privilege escalation, capabilities drop ALL, seccomp RuntimeDefault", sc, psc)
	}
	if c.Resources.Limits.Memory().Cmp(resource.MustParse("128Mi")) != 0 || c.Resources.Requests.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("resources %+v, want cpu and memory requests and a 128Mi memory limit", c.Resources)
	}
	metricsPort := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 8080 })
	if metricsPort < 0 {
		t.Errorf("ports %+v, want 8080 named metrics", c.Ports)
	}
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "metrics" {
			t.Errorf("probe %+v, want GET %s on port metrics (8080)", probe, path)
		}
	}

	svc := findObject[corev1.Service](t, "deploy/30-service.yaml", "Service", "ns-doctor-watch-metrics")
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) || len(svc.Spec.Selector) == 0 {
		t.Errorf("Service selector %v does not select the watch's pods %v", svc.Spec.Selector, pod.Labels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("Service ports %+v, want metrics 8080 -> metrics", svc.Spec.Ports)
	}

	var sm struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			Selector          struct{ MatchLabels map[string]string } `json:"selector"`
			NamespaceSelector struct {
				MatchNames []string `json:"matchNames"`
			} `json:"namespaceSelector"`
			Endpoints []struct {
				Port        string `json:"port"`
				Path        string `json:"path"`
				HonorLabels bool   `json:"honorLabels"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	for _, o := range readObjects(t, "deploy/monitoring/servicemonitor.yaml") {
		if o.kind == "ServiceMonitor" {
			if err := json.Unmarshal(o.raw, &sm); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(svc.Labels)) || len(sm.Spec.Selector.MatchLabels) == 0 {
		t.Errorf("the ServiceMonitor's selector %v does not select the Service %v", sm.Spec.Selector.MatchLabels, svc.Labels)
	}
	if !slices.Contains(sm.Spec.NamespaceSelector.MatchNames, svc.Namespace) && sm.Metadata.Namespace != svc.Namespace {
		t.Errorf("the ServiceMonitor does not look in %s", svc.Namespace)
	}
	// honorLabels: the metrics' namespace label is the stuck namespace, not
	// the pod's (test/support/prometheus shows what happens without it).
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" || !sm.Spec.Endpoints[0].HonorLabels {
		t.Errorf("ServiceMonitor endpoints %+v, want port metrics, path /metrics, honorLabels", sm.Spec.Endpoints)
	}
}

// TestJanitorDeploymentIsTheWatchPlus: deploy/janitor/deployment.yaml is
// the watch's Deployment with the janitor's flags and a /backups volume,
// nothing else, and plans only (no --purge-force) as shipped.
func TestJanitorDeploymentIsTheWatchPlus(t *testing.T) {
	watch := findObject[appsv1.Deployment](t, "deploy/20-deployment.yaml", "Deployment", "ns-doctor-watch")
	janitor := findObject[appsv1.Deployment](t, "deploy/janitor/deployment.yaml", "Deployment", "ns-doctor-watch")
	if len(janitor.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(janitor.Spec.Template.Spec.Containers))
	}
	pod := &janitor.Spec.Template.Spec
	c := &pod.Containers[0]
	var flags []string
	c.Args = slices.DeleteFunc(c.Args, func(a string) bool {
		if isJanitorFlag(a) {
			flags = append(flags, a)
			return true
		}
		return false
	})
	for _, want := range []string{"--purge-selector=", "--purge-after=", "--backup-dir=/backups"} {
		if !slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, want) }) {
			t.Errorf("the janitor's flags %v lack %s", flags, want)
		}
	}
	if slices.Contains(flags, "--purge-force") {
		t.Error("the janitor example acts (--purge-force): as shipped it must only plan")
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "backups" && m.MountPath == "/backups" && !m.ReadOnly
	}) {
		t.Errorf("volume mounts %+v, want backups at /backups", c.VolumeMounts)
	}
	c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "backups" })
	if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "backups" }) {
		t.Errorf("volumes %+v, want backups", pod.Volumes)
	}
	pod.Volumes = slices.DeleteFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "backups" })
	if !equality.Semantic.DeepEqual(watch.ObjectMeta, janitor.ObjectMeta) || !equality.Semantic.DeepEqual(watch.Spec, janitor.Spec) {
		w, _ := json.MarshalIndent(watch, "", " ")
		j, _ := json.MarshalIndent(janitor, "", " ")
		t.Errorf("deploy/janitor/deployment.yaml differs from deploy/20-deployment.yaml in more than the janitor's flags and volume:\nwatch:\n%s\njanitor without them:\n%s", w, j)
	}
}
