package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestMain runs a test package against one shared control plane (each
// test works in namespaces of its own) and always tears it down: after
// the tests, on a failed start, and on SIGINT/SIGTERM. A SIGKILL is covered
// by the children's parent-death signal.
func TestMain(m *testing.M, opts Options, use func(*ControlPlane)) {
	os.Exit(RunTests(m, opts, use))
}

// RunTests is TestMain returning the exit code, for packages with their own
// clean-up to do before exiting.
func RunTests(m *testing.M, opts Options, use func(*ControlPlane)) int {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var started atomic.Pointer[ControlPlane]
	go func() {
		if _, ok := <-signals; ok {
			cancel()
			if cp := started.Load(); cp != nil {
				cp.Stop()
			}
			os.Exit(130)
		}
	}()
	cp, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the control plane: %v\n", err)
		return 1
	}
	started.Store(cp)
	defer cp.Stop()
	use(cp)
	return m.Run()
}
