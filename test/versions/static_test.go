package versions

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// staticFiles lays out kube-apiserver's admission configuration with a
// static manifest directory per plugin (KEP-5793): a policy that refuses
// deleting ConfigMaps and a fail-closed webhook, whose url nothing serves,
// on Secrets, both for this test's namespaces only (matched by name: a
// namespaceSelector would make them refuse, with a 404 of the namespace,
// every request in the namespaces other tests finalize by hand). It
// returns the folder and kube-apiserver's flag.
func staticFiles() (string, []string, error) {
	dir, err := os.MkdirTemp("", "ns-doctor-static-")
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close() // nothing serves it: the webhook cannot be called
	files := map[string]string{
		"admission.yaml": fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionPolicy
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ValidatingAdmissionPolicyConfiguration
    staticManifestsDir: %s
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    staticManifestsDir: %s
`, filepath.Join(dir, "policies"), filepath.Join(dir, "webhooks")),
		"policies/keep-configmaps.yaml": `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: keep-configmaps.static.k8s.io
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["DELETE"]
      resources: ["configmaps"]
  matchConditions:
  - name: this-test-only
    expression: "request.namespace.startsWith('teststaticadmission')"
  validations:
  - expression: "false"
    message: configmaps here are kept by the platform
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: keep-configmaps-binding.static.k8s.io
spec:
  policyName: keep-configmaps.static.k8s.io
  validationActions: [Deny]
`,
		"webhooks/audit-secrets.yaml": fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: audit-secrets.static.k8s.io
webhooks:
- name: audit-secrets.example.com
  clientConfig:
    url: https://127.0.0.1:%d/validate
  rules:
  - apiGroups: [""]
    apiVersions: ["v1"]
    operations: ["DELETE"]
    resources: ["secrets"]
  matchConditions:
  - name: this-test-only
    expression: "request.namespace.startsWith('teststaticadmission')"
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: ["v1"]
  timeoutSeconds: 2
`, port),
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return "", nil, err
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			return "", nil, err
		}
	}
	return dir, []string{"--admission-control-config-file=" + filepath.Join(dir, "admission.yaml")}, nil
}

// Refusals by admission loaded from kube-apiserver's disk (1.37's
// KEP-5793): explain names each as configured there, with no API object,
// and offers neither --bypass-webhook nor a delete; purge refuses
// --bypass-webhook of such a name in one line before anything changes.
func TestStaticAdmissionIsTheControlPlanes(t *testing.T) {
	ctx := context.Background()
	// A control plane of its own: kube-apiserver's admission configuration
	// is for the whole server.
	dir, args, err := staticFiles()
	plugintest.Must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	own, err := controlplane.Start(ctx, controlplane.Options{Minimal: true, APIServerArgs: args})
	plugintest.Must(t, err)
	t.Cleanup(own.Stop)
	c, err := scenario.NewCluster(own.Config)
	plugintest.Must(t, err)
	newer := &bed{minor: "1.37", cp: own, cluster: c}
	ns := plugintest.UniqueName(t)
	plugintest.Must(t, newer.cluster.CreateNamespace(ctx, ns))
	plugintest.Must(t, newer.cluster.CreateConfigMap(ctx, ns, "kept", nil))
	_, err = newer.cluster.Kube.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "audited"}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	plugintest.Must(t, newer.cluster.DeleteNamespace(ctx, ns))
	_, err = newer.cluster.WaitForConditionStatus(ctx, ns, time.Minute, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)
	plugintest.Must(t, err)

	r := plugin.Kubectl(t, newer.cp.Kubeconfig, "ns-doctor", "explain", ns, "-o", "json")
	doc := decode[printer.DiagnosisDocument](t, r)
	found := map[string]bool{}
	for _, b := range doc.Blockers {
		if b.Subject != "keep-configmaps.static.k8s.io" && b.Subject != "audit-secrets.example.com" {
			continue
		}
		found[b.Subject] = true
		if len(b.Actions) != 0 || !strings.Contains(strings.Join(b.Evidence, " "), "staticManifestsDir") {
			t.Errorf("blocker %s %s: actions %+v, evidence %q", b.Kind, b.Subject, b.Actions, b.Evidence)
		}
	}
	if !found["keep-configmaps.static.k8s.io"] || !found["audit-secrets.example.com"] {
		t.Errorf("static refusals found %v; blockers:\n%s", found, r.Stdout)
	}
	kinds := map[string]diagnose.BlockerKind{}
	for _, b := range doc.Blockers {
		kinds[b.Subject] = b.Kind
	}
	if kinds["keep-configmaps.static.k8s.io"] != diagnose.BlockerWebhookDenies || kinds["audit-secrets.example.com"] != diagnose.BlockerWebhook {
		t.Errorf("kinds %v", kinds)
	}
	human := plugin.Kubectl(t, newer.cp.Kubeconfig, "ns-doctor", "explain", ns)
	for _, l := range strings.Split(human.Stdout, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "next:") && (strings.Contains(l, "--bypass-webhook") || strings.Contains(l, "kubectl delete")) {
			t.Errorf("a next step offers a bypass or a delete: %s", l)
		}
	}
	if !strings.Contains(human.Stdout, "whoever runs the control plane") {
		t.Errorf("the human view does not say who can change it:\n%s", human.Stdout)
	}

	bypass := plugin.Kubectl(t, newer.cp.Kubeconfig, "ns-doctor", "purge", ns, "--force", "--yes", "--bypass-webhook=audit-secrets.static.k8s.io")
	lines := errorLines(bypass.Stderr)
	if bypass.Code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "kube-apiserver's disk") {
		t.Errorf("--bypass-webhook of a static configuration: exit %d, %q", bypass.Code, lines)
	}
	if cms, err := newer.cluster.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil || !slices.ContainsFunc(cms.Items, func(c v1.ConfigMap) bool { return c.Name == "kept" }) {
		t.Errorf("the refused purge changed something: %v %v", cms, err)
	}
}
