package monitoring

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/guard"
	"github.com/ns-doctor/ns-doctor/test/support/gomod"
)

// CertManagerVersion is the cert-manager whose CRDs (Issuer, Certificate)
// deploy/guard/cert-manager/ is checked against: its Go module ships them.
const CertManagerVersion = "v1.21.2"

// certManagerCRDs are the Issuer and Certificate CRDs of cert-manager at
// CertManagerVersion, from its Go module.
func certManagerCRDs(ctx context.Context) ([]string, error) {
	dir, err := gomod.Dir(ctx, "github.com/cert-manager/cert-manager@"+CertManagerVersion)
	if err != nil {
		return nil, err
	}
	return []string{
		filepath.Join(dir, "deploy", "crds", "cert-manager.io_issuers.yaml"),
		filepath.Join(dir, "deploy", "crds", "cert-manager.io_certificates.yaml"),
	}, nil
}

// guardFlags are the guard's flags (the watch command's contract).
var guardFlags = []string{"--guard", "--guard-service", "--guard-cert-dir", "--guard-secret", "--guard-webhook-configuration", "--guard-timeout", "--guard-exempt-groups", "--guard-addr"}

func isGuardFlag(arg string) bool {
	name, _, _ := strings.Cut(arg, "=")
	return slices.Contains(guardFlags, name)
}

func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// TestGuardManifests checks deploy/guard/ against itself, the watch's
// Deployment and the guard's own webhook: the Deployment is the watch's
// plus the guard's flags and port; the webhook is what the guard
// registers out of the cluster, pointing at the Service that selects the
// watch's pods on the guard's port; RBAC names the Secret and the
// configuration the flags name; the cert-manager variant differs in its
// certificate only.
func TestGuardManifests(t *testing.T) {
	watch := findObject[appsv1.Deployment](t, "deploy/20-deployment.yaml", "Deployment", "ns-doctor-watch")
	g := findObject[appsv1.Deployment](t, "deploy/guard/deployment.yaml", "Deployment", "ns-doctor-watch")
	c := &g.Spec.Template.Spec.Containers[0]
	args := slices.Clone(c.Args)
	if flagValue(args, "--guard") != "warn" || flagValue(args, "--guard-service") != "ns-doctor/ns-doctor-guard" {
		t.Errorf("the guard's Deployment runs %v, want --guard=warn --guard-service=ns-doctor/ns-doctor-guard (warn first)", args)
	}
	c.Args = slices.DeleteFunc(c.Args, isGuardFlag)
	port := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "guard" && p.ContainerPort == 9443 })
	if port < 0 {
		t.Fatalf("ports %+v, want 9443 named guard (the guard's --guard-addr in the cluster, :9443)", c.Ports)
	}
	c.Ports = slices.Delete(c.Ports, port, port+1)
	if !equality.Semantic.DeepEqual(watch.Spec, g.Spec) || !equality.Semantic.DeepEqual(watch.ObjectMeta, g.ObjectMeta) {
		t.Error("deploy/guard/deployment.yaml differs from deploy/20-deployment.yaml in more than the guard's flags and port")
	}

	svc := findObject[corev1.Service](t, "deploy/guard/service.yaml", "Service", "ns-doctor-guard")
	if svc.Namespace+"/"+svc.Name != flagValue(args, "--guard-service") || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(g.Spec.Template.Labels)) ||
		len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "guard" {
		t.Errorf("Service %s/%s %+v does not send to the guard's port of the watch's pods", svc.Namespace, svc.Name, svc.Spec)
	}

	vwc := findObject[admissionregv1.ValidatingWebhookConfiguration](t, "deploy/guard/webhook.yaml", "ValidatingWebhookConfiguration", guard.DefaultConfiguration)
	if len(vwc.Webhooks) != 1 {
		t.Fatalf("%d webhooks", len(vwc.Webhooks))
	}
	cc := admissionregv1.WebhookClientConfig{Service: &admissionregv1.ServiceReference{Namespace: svc.Namespace, Name: svc.Name, Path: ptr.To(guard.Path), Port: ptr.To(svc.Spec.Ports[0].Port)}}
	want := guard.Webhook(cc, guard.DefaultTimeout)
	if !equality.Semantic.DeepEqual(vwc.Webhooks[0], want) {
		t.Errorf("deploy/guard/webhook.yaml's webhook:\n%+v\nthe guard's (internal/guard.Webhook):\n%+v", vwc.Webhooks[0], want)
	}

	role := findObject[rbacv1.Role](t, "deploy/guard/rbac.yaml", "Role", "ns-doctor-guard")
	if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Equal(r.ResourceNames, []string{"ns-doctor-guard-tls"}) && slices.Contains(r.Verbs, "update")
	}) || role.Namespace != svc.Namespace {
		t.Errorf("the Role %+v does not let the guard update its Secret ns-doctor-guard-tls in %s (--guard-secret's default)", role.Rules, svc.Namespace)
	}
	// Its ClusterRole: patch of its own webhook configuration, and watch
	// of every resource (the predictions' informers, guard.Reads); nothing
	// more.
	cr := findObject[rbacv1.ClusterRole](t, "deploy/guard/rbac.yaml", "ClusterRole", "ns-doctor-guard")
	watchAll := rbacv1.PolicyRule{Verbs: []string{"watch"}, APIGroups: []string{"*"}, Resources: []string{"*"}}
	if len(cr.Rules) != 2 || !slices.Equal(cr.Rules[0].ResourceNames, []string{vwc.Name}) || !slices.Equal(cr.Rules[0].Verbs, []string{"patch"}) ||
		!equality.Semantic.DeepEqual(cr.Rules[1], watchAll) {
		t.Errorf("the ClusterRole %+v: want patch of validatingwebhookconfigurations %s, and watch of every resource, only", cr.Rules, vwc.Name)
	}

	// The cert-manager variant: its webhook, annotated; its Deployment,
	// with cert-manager's Secret mounted where --guard-cert-dir reads.
	cmWebhook := findObject[admissionregv1.ValidatingWebhookConfiguration](t, "deploy/guard/cert-manager/webhook.yaml", "ValidatingWebhookConfiguration", guard.DefaultConfiguration)
	inject := cmWebhook.Annotations["cert-manager.io/inject-ca-from"]
	delete(cmWebhook.Annotations, "cert-manager.io/inject-ca-from")
	if len(cmWebhook.Annotations) == 0 {
		cmWebhook.Annotations = nil
	}
	if !equality.Semantic.DeepEqual(cmWebhook, vwc) {
		t.Error("deploy/guard/cert-manager/webhook.yaml differs from deploy/guard/webhook.yaml in more than cert-manager.io/inject-ca-from")
	}
	var cert struct {
		Metadata struct{ Name, Namespace string } `json:"metadata"`
		Spec     struct {
			SecretName string   `json:"secretName"`
			DNSNames   []string `json:"dnsNames"`
		} `json:"spec"`
	}
	for _, o := range readObjects(t, "deploy/guard/cert-manager/certificate.yaml") {
		if o.kind == "Certificate" {
			plugMust(t, decodeJSON(o.raw, &cert))
		}
	}
	if inject != cert.Metadata.Namespace+"/"+cert.Metadata.Name || !slices.Contains(cert.Spec.DNSNames, svc.Name+"."+svc.Namespace+".svc") {
		t.Errorf("inject-ca-from %q, Certificate %s/%s for %v: want the Certificate of the guard's Service", inject, cert.Metadata.Namespace, cert.Metadata.Name, cert.Spec.DNSNames)
	}
	cm := findObject[appsv1.Deployment](t, "deploy/guard/cert-manager/deployment.yaml", "Deployment", "ns-doctor-watch")
	cmc := &cm.Spec.Template.Spec.Containers[0]
	dir := flagValue(cmc.Args, "--guard-cert-dir")
	mount := slices.IndexFunc(cmc.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir })
	if dir == "" || mount < 0 {
		t.Fatalf("the cert-manager Deployment reads --guard-cert-dir=%q, mounts %+v", dir, cmc.VolumeMounts)
	}
	vol := slices.IndexFunc(cm.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == cmc.VolumeMounts[mount].Name })
	if vol < 0 || cm.Spec.Template.Spec.Volumes[vol].Secret == nil || cm.Spec.Template.Spec.Volumes[vol].Secret.SecretName != cert.Spec.SecretName {
		t.Errorf("the mounted volume is not the Certificate's Secret %s", cert.Spec.SecretName)
	}
	cmc.Args = slices.DeleteFunc(cmc.Args, func(a string) bool { return strings.HasPrefix(a, "--guard-cert-dir=") })
	cmc.VolumeMounts = slices.Delete(cmc.VolumeMounts, mount, mount+1)
	cm.Spec.Template.Spec.Volumes = slices.Delete(cm.Spec.Template.Spec.Volumes, vol, vol+1)
	plain := findObject[appsv1.Deployment](t, "deploy/guard/deployment.yaml", "Deployment", "ns-doctor-watch")
	if !equality.Semantic.DeepEqual(cm.Spec, plain.Spec) {
		t.Error("deploy/guard/cert-manager/deployment.yaml differs from deploy/guard/deployment.yaml in more than --guard-cert-dir and its volume")
	}
}

// applyGuard switches the guard on as docs/guard.md says, checks what the
// watch's ServiceAccount may do then, and switches it off again in the
// order the docs give.
func applyGuard(t *testing.T, can func(allowed bool, args ...string)) {
	t.Helper()
	mustKubectl(t, "apply", "-f", "deploy/guard/")
	if args := deploymentArgs(t); !slices.Contains(args, "--guard=warn") {
		t.Errorf("after deploy/guard/, the watch runs %v", args)
	}
	can(true, "patch", "validatingwebhookconfigurations.admissionregistration.k8s.io/ns-doctor-guard")
	can(false, "patch", "validatingwebhookconfigurations.admissionregistration.k8s.io/someone-elses")
	can(false, "create", "validatingwebhookconfigurations.admissionregistration.k8s.io")
	can(true, "create", "secrets", "-n", "ns-doctor")
	can(true, "update", "secrets/ns-doctor-guard-tls", "-n", "ns-doctor")
	can(false, "update", "secrets/someone-elses", "-n", "ns-doctor")
	can(false, "create", "secrets", "-n", "default")

	// Off, as docs/guard.md says: the webhook first, so nothing calls a
	// guard that is going; then the watch without it; then the rest.
	mustKubectl(t, "delete", "-f", "deploy/guard/webhook.yaml")
	mustKubectl(t, "apply", "-f", "deploy/20-deployment.yaml")
	mustKubectl(t, "delete", "-f", "deploy/guard/service.yaml", "-f", "deploy/guard/rbac.yaml")
	mustKubectl(t, "delete", "secret", "ns-doctor-guard-tls", "-n", "ns-doctor", "--ignore-not-found")
	if args := deploymentArgs(t); slices.ContainsFunc(args, isGuardFlag) {
		t.Errorf("after re-applying deploy/20-deployment.yaml, the watch still runs %v", args)
	}
	can(false, "patch", "validatingwebhookconfigurations.admissionregistration.k8s.io/ns-doctor-guard")
}

// installCertManagerCRDs installs cert-manager's Issuer and Certificate
// CRDs, for the server dry run of deploy/guard/cert-manager/.
func installCertManagerCRDs(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	crds, err := certManagerCRDs(ctx)
	if err != nil {
		t.Fatalf("cert-manager %s's CRDs are needed for deploy/guard/cert-manager: %v", CertManagerVersion, err)
	}
	args := []string{"apply", "--server-side"}
	for _, f := range crds {
		args = append(args, "-f", f)
	}
	mustKubectl(t, args...)
	waitEstablished(t, "issuers.cert-manager.io", "certificates.cert-manager.io")
}

func decodeJSON(raw []byte, into any) error { return json.Unmarshal(raw, into) }

func plugMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
