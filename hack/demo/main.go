// Command demo is `make demo`: it starts the local control plane, makes a
// namespace stuck for the two most common reasons, and runs
// `kubectl ns-doctor explain` on it through the real kubectl.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

func main() {
	pluginDir := flag.String("plugin-dir", "bin", "folder holding the built kubectl-ns_doctor")
	doMeasure := flag.Bool("measure", false, "after the demo, time explain and the usual shell loop and count their API requests")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *pluginDir, *doMeasure)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, pluginDir string, doMeasure bool) error {
	pluginDir, err := filepath.Abs(pluginDir)
	if err != nil {
		return err
	}
	step("starting a cluster on loopback: etcd, kube-apiserver, kube-controller-manager (its default controllers) and kube-scheduler v1.37.2, two kwok nodes")
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		return err
	}
	defer func() {
		step("tearing down the control plane")
		cp.Stop()
	}()
	cluster, err := scenario.NewCluster(cp.Config)
	if err != nil {
		return err
	}
	step("creating namespace demo: a Widget with finalizer example.com/cleanup, and APIService v1beta1.metrics.k8s.io whose service is missing")
	step("kubectl delete namespace demo, then waiting for the namespace controller's conditions")
	if _, err := cluster.CreateDemo(ctx, "demo", "metrics.k8s.io", 90*time.Second); err != nil {
		return err
	}
	// ns-doctor calls content stuck once it has waited past --grace (30 s):
	// finalizers being processed normally are not blockers.
	step("waiting 30 s, ns-doctor's grace period for content waiting on finalizers")
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(31 * time.Second):
	}
	step("kubectl ns-doctor explain demo")
	env := append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+cp.Kubeconfig)
	cmd := exec.CommandContext(ctx, "kubectl", "ns-doctor", "explain", "demo")
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		step("exit code 3: stuck, blockers found (as expected)")
		if doMeasure {
			step("measuring explain against the shell loop on the same namespace")
			return measure(ctx, cp, env)
		}
		return nil
	}
	if err == nil {
		return errors.New("explain exited 0, but the demo namespace is stuck")
	}
	return fmt.Errorf("kubectl ns-doctor explain: %w", err)
}

func step(msg string) { fmt.Fprintf(os.Stderr, "==> %s\n", msg) }
