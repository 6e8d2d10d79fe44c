// Package guard runs the deletion guard (`kubectl-ns_doctor watch
// --guard`) as a process against a real control plane with its namespace
// controller: the real kube-apiserver calls it over TLS, and the real
// `kubectl delete namespace` prints its warnings or its refusal. Out of the
// cluster (--guard-addr, its own CA, registered and removed by the guard),
// and in the cluster's way (--guard-service, its Secret and caBundle, or
// cert-manager's files), through an ExternalName Service to loopback.
//
// The tests run one after another: a registered guard is asked about every
// namespace deletion of the control plane.
package guard

import (
	"bufio"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

var (
	cp      *controlplane.ControlPlane
	cluster *scenario.Cluster
	plugin  plugintest.Plugin
	binary  string
)

func TestMain(m *testing.M) {
	plugintest.Main(m, plugintest.Setup{Name: "guard", Race: true}, func(b plugintest.Bed) {
		cp, cluster, plugin = b.CP, b.Cluster, b.Plugin
		binary = filepath.Join(b.Plugin.Dir, "kubectl-ns_doctor")
	})
}

// guardProc is one running `kubectl-ns_doctor watch --guard=...`.
type guardProc struct {
	*plugintest.Process
	metricsURL string
	// config is its webhook configuration's name; inCluster: it runs as
	// in the cluster (--guard-service), and registers nothing.
	config    string
	inCluster bool
}

var startLine = regexp.MustCompile(`metrics on (http://[^/\s]+)/metrics; guard \((\w+), budget [^)]+\) serving at (.+), webhook configuration (\S+)$`)

// startGuard starts the watch with the guard, kubeconfig and args (out of
// the cluster on a free loopback port, with a webhook configuration of the
// test's own, unless args say otherwise), waits for its start line and
// for kube-apiserver to call it. It is stopped (SIGTERM, which removes its
// registration) when the test ends.
func startGuard(t *testing.T, kubeconfig string, args ...string) *guardProc {
	t.Helper()
	p := launchGuard(t, kubeconfig, args...)
	p.waitStarted(t)
	p.waitCalled(t)
	return p
}

// launchGuard starts it and returns at once.
func launchGuard(t *testing.T, kubeconfig string, args ...string) *guardProc {
	t.Helper()
	defaults := map[string]string{
		"--after":                       "1h", // no diagnoses: the guard is what is tested
		"--metrics-addr":                "127.0.0.1:0",
		"--guard-webhook-configuration": configName(t),
	}
	if !hasFlag(args, "--guard-service") {
		defaults["--guard-addr"] = "127.0.0.1:0"
	}
	for flag, value := range defaults {
		if !hasFlag(args, flag) {
			args = append(args, flag+"="+value)
		}
	}
	p := &guardProc{Process: plugintest.Start(t, binary, kubeconfig, append([]string{"watch"}, args...)...),
		config: flagValue(args, "--guard-webhook-configuration"), inCluster: hasFlag(args, "--guard-service")}
	t.Cleanup(func() { p.stop(t) })
	return p
}

// configName is a webhook configuration name of the test's own.
func configName(t *testing.T) string {
	return "guard-" + plugintest.UniqueName(t)
}

func (p *guardProc) waitStarted(t *testing.T) {
	t.Helper()
	poll(t, time.Minute, "the guard's start line", func() (bool, error) {
		if exited, code := p.Exited(); exited {
			return false, fmt.Errorf("the guard exited %d:\n%s", code, p.Stderr.String())
		}
		for _, line := range strings.Split(p.Stderr.String(), "\n") {
			if m := startLine.FindStringSubmatch(line); m != nil {
				p.metricsURL = m[1]
				return true, nil
			}
		}
		return false, nil
	})
}

// waitCalled deletes namespaces until kube-apiserver asks the guard about
// one: its webhook configuration reaches kube-apiserver's informer a
// moment after it is written.
func (p *guardProc) waitCalled(t *testing.T) {
	t.Helper()
	p.probe(t, "kube-apiserver calling the guard", func(name string) bool {
		return strings.Contains(p.Stderr.String(), "DELETE namespace "+name+" ")
	})
}

// waitWarm deletes namespaces until the guard predicts from its informers
// (its reads kept ready, warm).
func (p *guardProc) waitWarm(t *testing.T) {
	t.Helper()
	p.probe(t, "a prediction from the guard's informers", func(string) bool {
		return p.metric(t, "nsdoctor_guard_prediction_duration_seconds_count", `reads="informers"`) > 0
	})
}

// probe creates and deletes a namespace of its own until seen says so.
func (p *guardProc) probe(t *testing.T, what string, seen func(name string) bool) {
	t.Helper()
	ctx := context.Background()
	n := 0
	poll(t, time.Minute, what, func() (bool, error) {
		n++
		name := fmt.Sprintf("probe-%s-%d", plugintest.UniqueName(t), n)
		if len(name) > 63 {
			name = name[len(name)-63:]
			name = strings.TrimLeft(name, "-")
		}
		if err := cluster.CreateNamespace(ctx, name); err != nil {
			return false, err
		}
		if err := cluster.DeleteNamespace(ctx, name); err != nil {
			return false, err
		}
		time.Sleep(200 * time.Millisecond)
		return seen(name), nil
	})
}

// stop ends the guard with SIGTERM (it removes its registration), or kills
// it when it does not end; a registration left behind is removed.
func (p *guardProc) stop(t *testing.T) {
	t.Helper()
	p.Stop(30 * time.Second)
	if p.inCluster {
		return
	}
	err := cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), p.config, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Logf("removing the webhook configuration %s: %v", p.config, err)
	}
}

// get reads one of its metrics endpoints.
func (p *guardProc) get(t *testing.T, path string) (int, string) {
	t.Helper()
	return plugintest.Get(t, p.metricsURL+path)
}

// metric is the value of the one series of /metrics with these labels.
func (p *guardProc) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	_, body := p.get(t, "/metrics")
	return sumSeries(body, name, labels...)
}

// sumSeries adds up the series of a metric with these labels in a
// Prometheus text exposition.
func sumSeries(body, name string, labels ...string) float64 {
	total := 0.0
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(line, l)
		}
		if !all {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err == nil {
			total += v
		}
	}
	return total
}

// apiserverMetric sums a series of kube-apiserver's own /metrics.
func apiserverMetric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	body, err := cluster.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("kube-apiserver's /metrics: %v", err)
	}
	return sumSeries(string(body), name, labels...)
}

// kubectl runs the real kubectl as kubeconfig's user.
func kubectl(t *testing.T, kubeconfig string, args ...string) plugintest.Result {
	t.Helper()
	return plugin.Kubectl(t, kubeconfig, args...)
}

// deleteNamespace is `kubectl delete namespace NAME --wait=false`, timed.
func deleteNamespace(t *testing.T, kubeconfig, name string) (plugintest.Result, time.Duration) {
	t.Helper()
	started := time.Now()
	r := kubectl(t, kubeconfig, "delete", "namespace", name, "--wait=false")
	return r, time.Since(started)
}

// guardWarnings are the "Warning: ns-doctor: ..." lines kubectl printed.
func guardWarnings(stderr string) []string {
	var out []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "Warning: ns-doctor: ") {
			out = append(out, line)
		}
	}
	return out
}

func hasFlag(args []string, flag string) bool { return flagValue(args, flag) != "" }

func flagValue(args []string, flag string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// The waits, tails and checks every package that runs the plugin uses.
var (
	poll = plugintest.Poll
	must = plugintest.Must
)

func gone(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	poll(t, timeout, "namespace "+name+" gone", func() (bool, error) {
		_, err := cluster.Kube.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// active tells whether a namespace exists and is not being deleted.
func active(t *testing.T, name string) bool {
	t.Helper()
	ns, err := cluster.Kube.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
	return err == nil && ns.DeletionTimestamp == nil
}

// ownerless is a finalizer in ns-doctor's catalogue whose owner (the
// External Secrets Operator's Deployment) the test cluster does not run:
// a prediction ns-doctor is sure of.
const ownerless = "externalsecrets.external-secrets.io/externalsecret-cleanup"

// heldNamespace makes an Active namespace holding a ConfigMap with
// finalizers, released when the test ends.
func heldNamespace(t *testing.T, name string, finalizers ...string) {
	t.Helper()
	ctx := context.Background()
	must(t, cluster.CreateNamespace(ctx, name))
	must(t, cluster.CreateConfigMap(ctx, name, "held", nil, finalizers...))
	t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), name, "held") })
}

var (
	getOptions    = metav1.GetOptions{}
	updateOptions = metav1.UpdateOptions{}
)
