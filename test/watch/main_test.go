// Package watch runs `kubectl-ns_doctor watch` as a process, out of the
// cluster with a kubeconfig, against a real control plane with its
// namespace controller: its Events, its /metrics (read directly and by a
// real Prometheus that evaluates the shipped alert rule), leader election
// between two replicas, the janitor, and bad input.
package watch

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
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

// lockedBuffer is a process's output, read while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// watchProc is one running `kubectl-ns_doctor watch`.
type watchProc struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	// metricsURL is http://ADDR, read from its start line.
	metricsURL string
	done       chan struct{}
	code       int
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
	p := &watchProc{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(binary, append([]string{"watch"}, args...)...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "NO_COLOR=1")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting watch: %v", err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("watch %v stderr:\n%s", args, tail(p.stderr.String(), 40))
		}
	})
	if hasFlag(args, "--metrics-addr=0") {
		return p
	}
	poll(t, 60*time.Second, "the watch's start line", func() (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("watch exited %d:\n%s", p.code, p.stderr.String())
		default:
		}
		m := metricsLine.FindStringSubmatch(p.stderr.String())
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

func (p *watchProc) signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// exit waits for the process to end and returns its exit code.
func (p *watchProc) exit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		t.Fatalf("watch still runs after %s:\n%s", timeout, p.stderr.String())
		return -1
	}
}

// get reads one of its endpoints: status code and body.
func (p *watchProc) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(p.metricsURL + path)
	if err != nil {
		t.Fatalf("GET %s%s: %v", p.metricsURL, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
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

// poll checks cond every half second until it holds or timeout passes. It
// bounds a wait for something that must happen; it measures nothing.
func poll(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			lastErr = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %s (last error: %v)", what, timeout, lastErr)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var createOptions = metav1.CreateOptions{}

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
