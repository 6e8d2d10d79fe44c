package monitoring

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/test/support/prometheus"
)

const watchSA = "system:serviceaccount:ns-doctor:ns-doctor-watch"

// TestManifestsApply installs the Prometheus Operator's CRDs, then checks
// that the API server accepts everything under deploy/ (a server dry run:
// schemas, strict field validation, Pod Security, RBAC escalation checks),
// installs the read-only watch for real and checks what its
// ServiceAccount may do, then switches the janitor on and off as
// deploy/README.md says, and the deletion guard as docs/guard.md says.
// cert-manager's CRDs come from its Go module (CertManagerVersion), for
// deploy/guard/cert-manager/.
func TestManifestsApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	crds, err := prometheus.DownloadOperatorCRDs(ctx)
	if err != nil {
		t.Fatalf("the Prometheus Operator's CRDs are needed for deploy/monitoring: %v", err)
	}
	// Server-side: client-side apply would store each CRD whole in an
	// annotation, too big for the larger ones.
	mustKubectl(t, "apply", "--server-side", "-f", crds.PrometheusRules, "-f", crds.ServiceMonitors)
	waitEstablished(t, "prometheusrules.monitoring.coreos.com", "servicemonitors.monitoring.coreos.com")
	installCertManagerCRDs(t)

	// A server dry run creates no namespace, and the namespaced objects
	// need theirs: it alone is created for real first.
	mustKubectl(t, "apply", "-f", "deploy/00-namespace.yaml")
	out := mustKubectl(t, "apply", "--dry-run=server", "-f", "deploy/", "-R")
	for _, want := range []string{
		"clusterrole.rbac.authorization.k8s.io/ns-doctor-watch", "deployment.apps/ns-doctor-watch",
		"service/ns-doctor-watch-metrics", "prometheusrule.monitoring.coreos.com/ns-doctor",
		"servicemonitor.monitoring.coreos.com/ns-doctor-watch", "clusterrole.rbac.authorization.k8s.io/ns-doctor-janitor",
		"validatingwebhookconfiguration.admissionregistration.k8s.io/ns-doctor-guard", "service/ns-doctor-guard",
		"role.rbac.authorization.k8s.io/ns-doctor-guard", "clusterrole.rbac.authorization.k8s.io/ns-doctor-guard",
		"issuer.cert-manager.io/ns-doctor-guard", "certificate.cert-manager.io/ns-doctor-guard",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply --dry-run=server -f deploy/ -R did not apply %s:\n%s", want, out)
		}
	}

	// `kubectl apply -f deploy/`: the read-only watch, not the subfolders.
	out = mustKubectl(t, "apply", "-f", "deploy/")
	if strings.Contains(out, "janitor") || strings.Contains(out, "monitoring.coreos.com") || strings.Contains(out, "guard") {
		t.Errorf("kubectl apply -f deploy/ went into the subfolders:\n%s", out)
	}
	mustKubectl(t, "apply", "-f", "deploy/monitoring/")
	can := func(allowed bool, args ...string) {
		t.Helper()
		r := kubectl(t, append([]string{"auth", "can-i", "--as=" + watchSA}, args...)...)
		if got := strings.TrimSpace(r.Stdout) == "yes"; got != allowed || (r.Code != 0) == allowed {
			t.Errorf("kubectl auth can-i %s as the watch: %q (exit %d), want allowed=%v\n%s", strings.Join(args, " "), r.Stdout, r.Code, allowed, r.Stderr)
		}
	}
	// What the watch does: its informer, explain's reads, its Events (about
	// Namespaces: in default) and its Lease (in its own namespace).
	can(true, "watch", "namespaces")
	can(true, "list", "pods", "-n", "kube-system")
	can(true, "list", "validatingwebhookconfigurations.admissionregistration.k8s.io")
	can(true, "create", "events", "-n", "default")
	can(true, "patch", "events.events.k8s.io", "-n", "default")
	for _, verb := range []string{"get", "create", "update"} {
		can(true, verb, "leases.coordination.k8s.io/ns-doctor-watch", "-n", "ns-doctor")
	}
	// What it must not do while the janitor is off.
	can(false, "update", "leases.coordination.k8s.io", "-n", "kube-system")
	can(false, "delete", "namespaces")
	can(false, "update", "namespaces", "--subresource=finalize")
	can(false, "delete", "configmaps", "-n", "default")

	// The janitor on: the same Deployment with its flags, and purge's rights.
	mustKubectl(t, "apply", "-f", "deploy/janitor/")
	if args := deploymentArgs(t); !slices.ContainsFunc(args, isJanitorFlag) {
		t.Errorf("after deploy/janitor/, the watch runs %v: no janitor flags", args)
	}
	can(true, "delete", "namespaces")
	can(true, "update", "namespaces", "--subresource=finalize")
	can(true, "deletecollection", "configmaps", "-n", "default")

	// And off again, as deploy/README.md says.
	mustKubectl(t, "apply", "-f", "deploy/20-deployment.yaml")
	mustKubectl(t, "delete", "-f", "deploy/janitor/rbac.yaml")
	if args := deploymentArgs(t); slices.ContainsFunc(args, isJanitorFlag) {
		t.Errorf("after re-applying deploy/20-deployment.yaml, the watch still runs %v", args)
	}
	volumes := mustKubectl(t, "get", "deployment", "ns-doctor-watch", "-n", "ns-doctor", "-o", "jsonpath={.spec.template.spec.volumes[*].name}")
	if strings.Contains(volumes, "backups") {
		t.Errorf("after re-applying deploy/20-deployment.yaml, the watch keeps its volumes %q", volumes)
	}
	can(false, "delete", "namespaces")

	// The guard on, and off again (docs/guard.md).
	applyGuard(t, can)
}

func deploymentArgs(t *testing.T) []string {
	t.Helper()
	out := mustKubectl(t, "get", "deployment", "ns-doctor-watch", "-n", "ns-doctor", "-o", `jsonpath={range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}`)
	return strings.Fields(out)
}
