package plugintest

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a long-running command of the built plugin (watch, with or
// without its guard) started by a test: its output read while it runs,
// signalled, and waited for. It is killed, if it still runs, when the
// test ends, and its stderr's tail logged if the test failed.
type Process struct {
	cmd            *exec.Cmd
	Stdout, Stderr *LockedBuffer
	done           chan struct{}
	code           int
}

// Start starts binary with args and the kubeconfig (colour off).
func Start(t *testing.T, binary, kubeconfig string, args ...string) *Process {
	t.Helper()
	p := &Process{Stdout: &LockedBuffer{}, Stderr: &LockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "NO_COLOR=1")
	p.cmd.Stdout, p.cmd.Stderr = p.Stdout, p.Stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", args, err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Signal(syscall.SIGKILL)
		<-p.done
		failOnRace(t, binary, p.Stderr.String())
		if t.Failed() {
			t.Logf("%v stderr:\n%s", args, Tail(p.Stderr.String(), 40))
		}
	})
	return p
}

// Signal sends sig, unless the process has ended.
func (p *Process) Signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// Exited tells whether the process has ended, and with which code.
func (p *Process) Exited() (bool, int) {
	select {
	case <-p.done:
		return true, p.code
	default:
		return false, 0
	}
}

// Exit waits for the process to end and returns its exit code.
func (p *Process) Exit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		t.Fatalf("still running after %s:\n%s", timeout, p.Stderr.String())
		return -1
	}
}

// Stop ends it with SIGTERM, or kills it when it has not ended within
// timeout.
func (p *Process) Stop(timeout time.Duration) {
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.Signal(syscall.SIGKILL)
		<-p.done
	}
}

// LockedBuffer is a process's output, read while it runs.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Get reads url: status code and body.
func Get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Poll checks cond every half second until it holds or timeout passes. It
// bounds a wait for something that must happen; it measures nothing.
func Poll(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
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

// Tail is the last lines of s.
func Tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
