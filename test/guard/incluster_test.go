package guard

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/cert"

	"github.com/ns-doctor/ns-doctor/internal/webhookcert"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

const (
	guardNamespace = "ns-doctor"
	guardService   = "ns-doctor-guard"
	guardSecret    = "ns-doctor-guard-tls"
	guardConfig    = "ns-doctor-guard"
)

// guardHosts are the names the serving certificate is for.
var guardHosts = []string{guardService + "." + guardNamespace + ".svc", guardService + "." + guardNamespace + ".svc.cluster.local", guardService + "." + guardNamespace}

// TestGuardInCluster runs the guard the way deploy/guard runs it: as the
// watch's ServiceAccount with deploy/guard/rbac.yaml's rights, behind
// deploy/guard/webhook.yaml's configuration, which names a Service (here
// an ExternalName Service to loopback, where the guard listens: the test
// bed runs no pods). The guard makes its CA and serving certificate, keeps
// them in its Secret and writes the caBundle, and kube-apiserver, calling
// ns-doctor-guard.ns-doctor.svc, trusts it. Started again with a CA near
// its end in the Secret, it rotates it (the caBundle holds the new and the
// old) and is trusted still. With --guard-cert-dir it serves the files
// another issuer (cert-manager) writes, and writes nothing.
func TestGuardInCluster(t *testing.T) {
	ctx := context.Background()
	for _, f := range []string{"00-namespace.yaml", "10-rbac.yaml", "guard/rbac.yaml", "guard/webhook.yaml"} {
		if r := kubectl(t, cp.Kubeconfig, "apply", "-f", filepath.Join("..", "..", "deploy", f)); r.Code != 0 {
			t.Fatalf("kubectl apply -f deploy/%s: %s", f, r.Stderr)
		}
	}
	t.Cleanup(func() {
		// As docs/guard.md removes it: the webhook first.
		_ = cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), guardConfig, metav1.DeleteOptions{})
		_ = cluster.Kube.CoreV1().Services(guardNamespace).Delete(context.Background(), guardService, metav1.DeleteOptions{})
		_ = cluster.Kube.CoreV1().Secrets(guardNamespace).Delete(context.Background(), guardSecret, metav1.DeleteOptions{})
	})
	port := freePort(t)
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: guardService, Namespace: guardNamespace},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "localhost", Ports: []v1.ServicePort{{Name: "guard", Port: 443}}}}
	_, err := cluster.Kube.CoreV1().Services(guardNamespace).Create(ctx, svc, metav1.CreateOptions{})
	must(t, err)
	patch := fmt.Sprintf(`[{"op":"replace","path":"/webhooks/0/clientConfig/service/port","value":%d}]`, port)
	_, err = cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, guardConfig, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	must(t, err)
	kubeconfig := watchServiceAccount(t)
	args := []string{"--guard=warn", "--guard-service=" + guardNamespace + "/" + guardService, fmt.Sprintf("--guard-addr=127.0.0.1:%d", port),
		"--guard-webhook-configuration=" + guardConfig}
	base := plugintest.UniqueName(t)

	// First start: the Secret made, the caBundle written, trusted.
	g := startGuard(t, kubeconfig, args...)
	sec, err := cluster.Kube.CoreV1().Secrets(guardNamespace).Get(ctx, guardSecret, metav1.GetOptions{})
	must(t, err)
	for _, key := range []string{"tls.crt", "tls.key", "ca.crt", "ca.key"} {
		if len(sec.Data[key]) == 0 {
			t.Errorf("the Secret %s/%s has no %s", guardNamespace, guardSecret, key)
		}
	}
	checkCABundle(t, sec.Data["ca.crt"], 1)
	heldNamespace(t, base+"-1", ownerless)
	r, _ := deleteNamespace(t, cp.Kubeconfig, base+"-1")
	checkWarned(t, r, base+"-1", "would stick (FinalizersRemaining)")
	if strings.Contains(g.Stderr.String(), "timeoutSeconds") {
		t.Errorf("deploy/guard's timeoutSeconds is said to be short for the default budget:\n%s", g.Stderr.String())
	}
	g.stop(t)

	// Second start, the CA near its end: rotated, both CAs trusted.
	old, err := webhookcert.Generate(guardHosts, time.Now().Add(-100*time.Minute), webhookcert.Lifetimes{CA: 2 * time.Hour, Serving: 2 * time.Hour})
	must(t, err)
	sec.Data = map[string][]byte{"tls.crt": old.Cert, "tls.key": old.Key, "ca.crt": old.CACerts, "ca.key": old.CAKey}
	_, err = cluster.Kube.CoreV1().Secrets(guardNamespace).Update(ctx, sec, metav1.UpdateOptions{})
	must(t, err)
	// With a budget as long as the webhook's timeoutSeconds, it says so.
	g = startGuard(t, kubeconfig, append(args, "--guard-timeout=3s")...)
	if !strings.Contains(g.Stderr.String(), "webhook configuration "+guardConfig+" has timeoutSeconds 3, not above --guard-timeout=3s") {
		t.Errorf("a budget kube-apiserver does not wait for is not said:\n%s", g.Stderr.String())
	}
	sec, err = cluster.Kube.CoreV1().Secrets(guardNamespace).Get(ctx, guardSecret, metav1.GetOptions{})
	must(t, err)
	cas := checkCABundle(t, sec.Data["ca.crt"], 2)
	if !bytes.Contains(sec.Data["ca.crt"], bytes.TrimSpace(old.CACerts)) || !cas[0].NotAfter.After(time.Now().Add(5*365*24*time.Hour)) {
		t.Errorf("the CA was not rotated to a new one beside the old: %v", cas)
	}
	served, err := cert.ParseCertsPEM(sec.Data["tls.crt"])
	must(t, err)
	if served[0].CheckSignatureFrom(cas[0]) != nil || served[0].NotAfter.Before(time.Now().Add(300*24*time.Hour)) {
		t.Errorf("the serving certificate (until %s) is not the new CA's", served[0].NotAfter)
	}
	heldNamespace(t, base+"-2", ownerless)
	r, _ = deleteNamespace(t, cp.Kubeconfig, base+"-2")
	checkWarned(t, r, base+"-2", "would stick (FinalizersRemaining)")
	g.stop(t)

	// cert-manager's way: the files of a Secret it keeps, the caBundle
	// written by its cainjector; the guard writes neither.
	issued, err := webhookcert.Generate(guardHosts, time.Now(), webhookcert.DefaultLifetimes)
	must(t, err)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "tls.crt"), issued.Cert, 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "tls.key"), issued.Key, 0o600))
	injected, _ := json.Marshal(map[string]any{"webhooks": []any{map[string]any{"name": "guard.ns-doctor.io", "clientConfig": map[string]any{"caBundle": issued.CACerts}}}})
	_, err = cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, guardConfig, types.StrategicMergePatchType, injected, metav1.PatchOptions{})
	must(t, err)
	startGuard(t, kubeconfig, append(args, "--guard-cert-dir="+dir)...)
	heldNamespace(t, base+"-3", ownerless)
	r, _ = deleteNamespace(t, cp.Kubeconfig, base+"-3")
	checkWarned(t, r, base+"-3", "would stick (FinalizersRemaining)")
	after, err := cluster.Kube.CoreV1().Secrets(guardNamespace).Get(ctx, guardSecret, metav1.GetOptions{})
	must(t, err)
	if after.ResourceVersion != sec.ResourceVersion {
		t.Error("with --guard-cert-dir the guard wrote its Secret")
	}
	checkCABundleIs(t, issued.CACerts)
}

// checkCABundle: the webhook configuration trusts exactly the Secret's
// CAs, n of them.
func checkCABundle(t *testing.T, secretCAs []byte, n int) []*x509.Certificate {
	t.Helper()
	checkCABundleIs(t, secretCAs)
	cas, err := cert.ParseCertsPEM(secretCAs)
	if err != nil || len(cas) != n {
		t.Fatalf("the Secret holds %d CAs (%v), want %d", len(cas), err, n)
	}
	return cas
}

func checkCABundleIs(t *testing.T, want []byte) {
	t.Helper()
	cfg, err := cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), guardConfig, metav1.GetOptions{})
	must(t, err)
	if got := cfg.Webhooks[0].ClientConfig.CABundle; !bytes.Equal(got, want) {
		t.Errorf("the caBundle is not the CAs wanted:\n%s\nwant\n%s", got, want)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// watchServiceAccount is a kubeconfig with a token of the watch's
// ServiceAccount (deploy/10-rbac.yaml, and deploy/guard/rbac.yaml's rights).
func watchServiceAccount(t *testing.T) string {
	t.Helper()
	r := kubectl(t, cp.Kubeconfig, "create", "token", "ns-doctor-watch", "-n", guardNamespace, "--duration=1h")
	if r.Code != 0 {
		t.Fatalf("kubectl create token: %s", r.Stderr)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cp.Server(), CertificateAuthorityData: cp.Config.CAData}
	kc.AuthInfos["watch"] = &clientcmdapi.AuthInfo{Token: strings.TrimSpace(r.Stdout)}
	kc.Contexts["watch"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "watch"}
	kc.CurrentContext = "watch"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, clientcmd.WriteToFile(*kc, path))
	return path
}
