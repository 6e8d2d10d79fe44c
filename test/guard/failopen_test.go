package guard

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestGuardKilled: a guard killed mid-run (SIGKILL: it cannot remove its
// registration) never blocks a deletion: kube-apiserver fails open on it
// within the webhook's timeout. A guard started again under the same name
// replaces what the killed one left, and warns again.
func TestGuardKilled(t *testing.T) {
	ctx := context.Background()
	base := plugintest.UniqueName(t)
	first, second := base+"-1", base+"-2"
	heldNamespace(t, first, ownerless)
	heldNamespace(t, second, ownerless)
	config := configName(t)
	g := startGuard(t, cp.Kubeconfig, "--guard=deny", "--guard-webhook-configuration="+config)
	failedOpen := apiserverMetric(t, "apiserver_admission_webhook_fail_open_count", `name="guard.ns-doctor.io"`)

	g.Signal(syscall.SIGKILL)
	g.Exit(t, 10*time.Second)
	left, err := cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, config, metav1.GetOptions{})
	must(t, err)
	r, took := deleteNamespace(t, cp.Kubeconfig, first)
	t.Logf("kubectl delete namespace %s, the guard killed (%s):\n%s%s", first, took.Round(time.Millisecond), r.Stdout, r.Stderr)
	timeout := time.Duration(*left.Webhooks[0].TimeoutSeconds) * time.Second
	if r.Code != 0 || len(guardWarnings(r.Stderr)) > 0 || took > timeout+5*time.Second {
		t.Errorf("deleting with the guard killed: exit %d after %s (the webhook's timeout: %s)\n%s", r.Code, took, timeout, r.Stderr)
	}
	if got := apiserverMetric(t, "apiserver_admission_webhook_fail_open_count", `name="guard.ns-doctor.io"`); got <= failedOpen {
		t.Errorf("apiserver_admission_webhook_fail_open_count for the guard stayed at %v", got)
	}

	again := startGuard(t, cp.Kubeconfig, "--guard=warn", "--guard-webhook-configuration="+config)
	r, _ = deleteNamespace(t, cp.Kubeconfig, second)
	checkWarned(t, r, second, "would stick (FinalizersRemaining)")
	// A signal ends it cleanly, its registration removed.
	again.Signal(syscall.SIGTERM)
	if code := again.Exit(t, 30*time.Second); code != 0 {
		t.Errorf("the guard exited %d on SIGTERM", code)
	}
	if _, err := cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, config, metav1.GetOptions{}); err == nil {
		t.Errorf("the webhook configuration %s is still there after the guard stopped", config)
	}
}

// TestGuardFailsOpen: a prediction not done within --guard-timeout, and a
// guard that cannot reach the API server, allow the deletion with a
// warning saying it was not checked, and say so in the guard's log. The
// guard reads the cluster through a proxy the test slows down, then cuts.
func TestGuardFailsOpen(t *testing.T) {
	base := plugintest.UniqueName(t)
	slow, cut := base+"-slow", base+"-cut"
	heldNamespace(t, slow, ownerless)
	heldNamespace(t, cut, ownerless)
	proxy := startProxy(t, cp.Server())
	g := startGuard(t, proxy.kubeconfig(t), "--guard=deny", "--guard-timeout=1s")

	proxy.setDelay(300 * time.Millisecond)
	r, took := deleteNamespace(t, cp.Kubeconfig, slow)
	t.Logf("kubectl delete namespace %s, the guard's reads slowed (%s):\n%s%s", slow, took.Round(time.Millisecond), r.Stdout, r.Stderr)
	want := "Warning: ns-doctor: the deletion of namespace " + slow + " was not checked: no prediction within the guard's 1s (--guard-timeout); allowed unchecked, as the guard fails open"
	if r.Code != 0 || !strings.Contains(r.Stderr, want) || took > 5*time.Second {
		t.Errorf("a slow prediction, in deny mode: exit %d after %s, want allowed within the budget with %q\n%s", r.Code, took, want, r.Stderr)
	}

	proxy.cut()
	r, took = deleteNamespace(t, cp.Kubeconfig, cut)
	t.Logf("kubectl delete namespace %s, the guard cut off the API server (%s):\n%s%s", cut, took.Round(time.Millisecond), r.Stdout, r.Stderr)
	want = "Warning: ns-doctor: the deletion of namespace " + cut + " was not checked: the guard could not predict it (cannot reach the API server: "
	if r.Code != 0 || !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, "allowed unchecked, as the guard fails open") {
		t.Errorf("a guard that cannot reach the API server: exit %d, want allowed with %q\n%s", r.Code, want, r.Stderr)
	}
	for _, line := range []string{"DELETE namespace " + slow + " by admin: failed_open after 1", "no prediction within the guard's 1s",
		"DELETE namespace " + cut + " by admin: failed_open after", "could not predict it (cannot reach the API server"} {
		if !strings.Contains(g.Stderr.String(), line) {
			t.Errorf("the guard's log lacks %q", line)
		}
	}
	if got := g.metric(t, "nsdoctor_guard_admissions_total", `mode="deny"`, `outcome="failed_open"`); got != 2 {
		t.Errorf("failed_open counted %v, want 2", got)
	}
}

// proxy forwards TCP to the API server, slowing what comes back, or
// refusing everything once cut.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	delay  time.Duration
	conns  []net.Conn
	closed bool
}

func startProxy(t *testing.T, server string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	p := &proxy{ln: ln, target: strings.TrimPrefix(server, "https://")}
	go p.accept()
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *proxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns = append(p.conns, c, up)
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c) }()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			p.mu.Lock()
			d := p.delay
			p.mu.Unlock()
			time.Sleep(d)
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = c.Close()
			return
		}
	}
}

func (p *proxy) setDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// cut closes the listener and every connection: the API server is
// unreachable from then on.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	_ = p.ln.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// kubeconfig is the admin's, through the proxy (the API server's
// certificate is for 127.0.0.1, so it still verifies).
func (p *proxy) kubeconfig(t *testing.T) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(cp.Kubeconfig)
	must(t, err)
	for _, c := range kc.Clusters {
		c.Server = "https://" + p.ln.Addr().String()
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// TestGuardBadInput: each mistake ends in one line that says what to do,
// with its documented exit code, before anything is registered.
func TestGuardBadInput(t *testing.T) {
	ctx := context.Background()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer func() { _ = busy.Close() }()
	// A user who may read what explain reads, but not write webhook
	// configurations.
	r := plugintest.Command(t, "", time.Minute, []string{"KUBECONFIG=" + cp.Kubeconfig}, "kubectl", "apply", "-f", filepath.Join("..", "..", "docs", "rbac", "explain-clusterrole.yaml"))
	if r.Code != 0 {
		t.Fatalf("applying the explain ClusterRole: %s", r.Stderr)
	}
	reader := "guard-reader"
	_, readerConfig, err := cp.MintUser(reader)
	must(t, err)
	r = plugintest.Command(t, "", time.Minute, []string{"KUBECONFIG=" + cp.Kubeconfig}, "kubectl", "create", "clusterrolebinding", reader, "--clusterrole=ns-doctor-explain", "--user="+reader)
	if r.Code != 0 {
		t.Fatalf("binding the explain ClusterRole: %s", r.Stderr)
	}
	// Someone else's webhook configuration of the name the guard would use.
	theirs := "guard-theirs"
	must(t, createForeignConfig(ctx, theirs))
	t.Cleanup(func() {
		_ = cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), theirs, metav1.DeleteOptions{})
	})

	for _, c := range []struct {
		name       string
		kubeconfig string
		args       []string
		code       int
		want       string
	}{
		{"unknown mode", cp.Kubeconfig, []string{"--guard=block", "--guard-addr=127.0.0.1:0"}, 2, `--guard must be warn or deny, got "block"`},
		{"a guard flag without --guard", cp.Kubeconfig, []string{"--guard-addr=127.0.0.1:0"}, 2, "--guard-addr is the guard's: it needs --guard=warn or --guard=deny"},
		{"no address", cp.Kubeconfig, []string{"--guard=warn"}, 2, "--guard needs --guard-addr=HOST:PORT"},
		{"a wildcard address", cp.Kubeconfig, []string{"--guard=warn", "--guard-addr=0.0.0.0:8443"}, 2, "HOST must be an address it reaches"},
		{"a budget kube-apiserver would not wait for", cp.Kubeconfig, []string{"--guard=warn", "--guard-addr=127.0.0.1:0", "--guard-timeout=45s"}, 2, "--guard-timeout must be above 0 and at most 29s"},
		{"an address in use", cp.Kubeconfig, []string{"--guard=warn", "--guard-addr=" + busy.Addr().String()}, 1, "address already in use: choose a free address with --guard-addr"},
		{"no permission to register", readerConfig, []string{"--guard=warn", "--guard-addr=127.0.0.1:0", "--guard-webhook-configuration=guard-denied"}, 1,
			"the guard cannot create validatingwebhookconfiguration guard-denied: no permission (it needs create, update and delete on validatingwebhookconfigurations.admissionregistration.k8s.io; docs/guard.md)"},
		{"someone else's configuration", cp.Kubeconfig, []string{"--guard=warn", "--guard-addr=127.0.0.1:0", "--guard-webhook-configuration=" + theirs}, 1,
			"it exists and was not registered by an out-of-cluster guard"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"watch", "--metrics-addr=0"}, c.args...)
			r := plugintest.Command(t, "", time.Minute, []string{"KUBECONFIG=" + c.kubeconfig, "NO_COLOR=1"}, binary, args...)
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			if r.Code != c.code || len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], c.want) {
				t.Errorf("watch %v: exit %d, stderr %q; want exit %d and one error line with %q", c.args, r.Code, r.Stderr, c.code, c.want)
			}
		})
	}
	if _, err := cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, theirs, metav1.GetOptions{}); err != nil {
		t.Errorf("someone else's configuration: %v", err)
	}
}

// createForeignConfig is a webhook configuration the guard did not
// register, harmless (it catches nothing the tests send).
func createForeignConfig(ctx context.Context, name string) error {
	cfg := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:                    "theirs.example.com",
			ClientConfig:            admissionregv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/none")},
			Rules:                   []admissionregv1.RuleWithOperations{{Operations: []admissionregv1.OperationType{admissionregv1.Delete}, Rule: admissionregv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}}}},
			FailurePolicy:           ptr.To(admissionregv1.Ignore),
			SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	_, err := cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{})
	return err
}
