package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one running binary of the control plane, logging to a file in
// the control plane's directory.
type process struct {
	name    string
	path    string
	args    []string
	logPath string
	cmd     *exec.Cmd
	cancel  context.CancelFunc // stops it: SIGTERM, then SIGKILL after 10 s
	done    chan struct{}
	waitErr error
}

func (p *process) start() error {
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s log: %w", p.name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, p.path, p.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	// Asked politely, then killed: a wedged etcd must not hang a test run.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	p.cmd, p.cancel, p.done = cmd, cancel, make(chan struct{})
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return nil
}

func (p *process) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *process) stop() {
	if p.running() {
		p.cancel()
		<-p.done
	}
}

// kill ends the process at once (SIGKILL), as a machine that loses power:
// it says goodbye to nobody.
func (p *process) kill() {
	if p.running() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exitedError describes a process that died, with the end of its log, so a
// failed start says why without digging through temp dirs.
func (p *process) exitedError() error {
	tail, _ := os.ReadFile(p.logPath)
	if len(tail) > 2000 {
		tail = tail[len(tail)-2000:]
	}
	tail = bytes.TrimSpace(tail)
	return fmt.Errorf("%s exited (%v); end of %s:\n%s", p.name, p.waitErr, filepath.Base(p.logPath), tail)
}

var errNotReady = errors.New("not ready")
