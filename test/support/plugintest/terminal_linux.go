package plugintest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns a pseudo-terminal's two ends.
func openPTY(t testing.TB) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	Must(t, err)
	t.Cleanup(func() { _ = master.Close() })
	Must(t, unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	Must(t, err)
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	Must(t, err)
	// The size of a terminal window: a bare pseudo-terminal has none.
	Must(t, unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 160}))
	t.Cleanup(func() { _ = slave.Close() })
	return master, slave
}

// Terminal is the plugin run as a person runs it: through kubectl, on a
// terminal that is its controlling terminal (Ctrl-C typed there
// interrupts it), stdin, stdout and stderr all on it.
type Terminal struct {
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan struct{}
}

// RunOnTerminal starts `kubectl args...` with the plugin on PATH.
func (p Plugin) RunOnTerminal(t testing.TB, kubeconfig string, args ...string) *Terminal {
	t.Helper()
	master, slave := openPTY(t)
	cmd := exec.Command("kubectl", args...)
	cmd.Env = append(os.Environ(), "PATH="+p.Dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig, "NO_COLOR=")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	Must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	term := &Terminal{cmd: cmd, master: master, done: make(chan struct{})}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
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
	// Done only once the terminal is read to the end: with the process
	// gone, closing our side of it ends the reader after what is buffered
	// (on a loaded machine the last lines may still be there).
	go func() { _ = cmd.Wait(); _ = slave.Close(); <-drained; close(term.done) }()
	return term
}

// Output is everything written to the terminal so far, escapes included.
func (term *Terminal) Output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// WaitFor waits until text appears on the terminal.
func (term *Terminal) WaitFor(t testing.TB, text string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(term.Output(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("%q never appeared on the terminal:\n%s", text, term.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Type writes s as if typed at the keyboard.
func (term *Terminal) Type(t testing.TB, s string) {
	t.Helper()
	_, err := term.master.Write([]byte(s))
	Must(t, err)
}

// ExitCode waits for the command to end.
func (term *Terminal) ExitCode(t testing.TB) int {
	t.Helper()
	select {
	case <-term.done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the command did not end:\n%s", term.Output())
	}
	return term.cmd.ProcessState.ExitCode()
}
