package purge_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// openPTY returns a pseudo-terminal's two ends.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	plugintest.Must(t, err)
	t.Cleanup(func() { _ = master.Close() })
	plugintest.Must(t, unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	plugintest.Must(t, err)
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	plugintest.Must(t, err)
	t.Cleanup(func() { _ = slave.Close() })
	return master, slave
}

// terminal is purge run as a person runs it: on a terminal that is its
// controlling terminal, so Ctrl-C typed there interrupts it.
type terminal struct {
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan struct{}
}

func runOnTerminal(t *testing.T, args ...string) *terminal {
	t.Helper()
	master, slave := openPTY(t)
	cmd := exec.Command("kubectl", append([]string{"ns-doctor", "purge"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+plugin.Dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+cp.Kubeconfig)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	plugintest.Must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	term := &terminal{cmd: cmd, master: master, done: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(term.done) }()
	return term
}

func (term *terminal) output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

func (term *terminal) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(term.output(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("%q never appeared on the terminal:\n%s", text, term.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (term *terminal) type_(t *testing.T, s string) {
	t.Helper()
	_, err := term.master.Write([]byte(s))
	plugintest.Must(t, err)
}

func (term *terminal) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-term.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("purge did not end:\n%s", term.output())
	}
	return term.cmd.ProcessState.ExitCode()
}

// The confirmation prompt on a terminal: typing the namespace's name is
// consent, anything else and Ctrl-C are not, and Ctrl-C ends the command at
// once, without waiting for Enter.
func TestConfirmationOnATerminal(t *testing.T) {
	ctx := context.Background()
	const prompt = "Type the namespace name to go on: "
	cases := []struct {
		name, typed, want string
		code              int
	}{
		{"Ctrl-C at the prompt", "\x03", "interrupted: nothing was changed", 1},
		{"another name", "default\n", "not confirmed: nothing was changed", 1},
		{"the namespace's name", "", "is gone", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := plugintest.UniqueName(t)
			plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
			plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "plain", nil))
			plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
			term := runOnTerminal(t, ns, "--force", "--backup-dir", t.TempDir(), "--timeout=1m")
			term.waitFor(t, prompt)
			if !strings.Contains(term.output(), fmt.Sprintf("namespace %q", ns)) {
				t.Errorf("the prompt does not name the namespace:\n%s", term.output())
			}
			typed := c.typed
			if typed == "" {
				typed = ns + "\n"
			}
			term.type_(t, typed)
			if code := term.exitCode(t); code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", code, c.code, term.output())
			}
			// What it printed last may still be on its way through the terminal.
			term.waitFor(t, c.want)
			_, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "plain", metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); gone != (c.code == 0) {
				t.Errorf("configmap gone: %v (err %v), want gone only with consent", gone, err)
			}
		})
	}
}
