// Package watch runs `kubectl-ns_doctor watch` as a process, out of the
// cluster with a kubeconfig, against a real control plane with its
// namespace controller: its Events, its /metrics (read directly and by a
// real Prometheus that evaluates the shipped alert rule), leader election
// between two replicas, the janitor, and bad input.
package watch

import (
	"bufio"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

var (
	cp      *controlplane.ControlPlane
	cluster *scenario.Cluster
	binary  string
)

func TestMain(m *testing.M) {
	plugintest.Main(m, plugintest.Setup{Name: "watch", Race: true}, func(b plugintest.Bed) {
		cp, cluster, binary = b.CP, b.Cluster, filepath.Join(b.Plugin.Dir, "kubectl-ns_doctor")
	})
}

// watchProc is one running `kubectl-ns_doctor watch`.
type watchProc struct {
	*plugintest.Process
	// metricsURL is http://ADDR, read from its start line.
	metricsURL string
}

var metricsLine = regexp.MustCompile(`metrics on (http://[^/\s]+)/metrics`)

// startWatch starts the watch with kubeconfig and args (its metrics on a
// free loopback port unless args say otherwise) and waits for its start
// line; it is killed when the test ends.
func startWatch(t *testing.T, kubeconfig string, args ...string) *watchProc {
	t.Helper()
	if !hasFlag(args, "--metrics-addr") {
		args = append(args, "--metrics-addr=127.0.0.1:0")
	}
	p := &watchProc{Process: plugintest.Start(t, binary, kubeconfig, append([]string{"watch"}, args...)...)}
	if hasFlag(args, "--metrics-addr=0") {
		return p
	}
	poll(t, 60*time.Second, "the watch's start line", func() (bool, error) {
		if exited, code := p.Exited(); exited {
			return false, fmt.Errorf("watch exited %d:\n%s", code, p.Stderr.String())
		}
		m := metricsLine.FindStringSubmatch(p.Stderr.String())
		if m != nil {
			p.metricsURL = m[1]
		}
		return m != nil, nil
	})
	return p
}

func hasFlag(args []string, prefix string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

// get reads one of its endpoints: status code and body.
func (p *watchProc) get(t *testing.T, path string) (int, string) {
	t.Helper()
	return plugintest.Get(t, p.metricsURL+path)
}

// series are the lines of /metrics for one metric (a name and labels
// each), with the labels given.
func (p *watchProc) series(t *testing.T, metric string, labels ...string) []string {
	t.Helper()
	_, body := p.get(t, "/metrics")
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(line, l)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

// events are the Events about namespace name with reason.
func events(t *testing.T, name, reason string) []v1.Event {
	t.Helper()
	sel := fields.Set{"involvedObject.kind": "Namespace", "involvedObject.name": name, "reason": reason}.AsSelector().String()
	list, err := cluster.Kube.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	return list.Items
}

// The waits, tails and checks every package that runs the plugin uses.
var (
	poll = plugintest.Poll
	tail = plugintest.Tail
	must = plugintest.Must
)

var createOptions = metav1.CreateOptions{}

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
