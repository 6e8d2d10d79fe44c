// Command kubectl-ns_doctor is the ns-doctor kubectl plugin: `kubectl
// ns-doctor explain|purge|version`.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	// Auth providers for kubeconfigs that name them (OIDC); exec
	// credential plugins work without this.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/ns-doctor/ns-doctor/internal/cli"
)

// memoryLimit is the Go runtime's soft memory limit unless GOMEMLIMIT
// sets one. With Go's default GOGC=100 alone, the heap of a purge of
// 100,000 objects grows to about three times what it holds (195 MiB for
// 62): the limit makes the collector run before that, and costs nothing
// while the heap stays well under it. It is soft: a run that needs more
// gets more, collecting more often.
const memoryLimit = 96 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
