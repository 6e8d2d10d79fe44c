// Command kubectl-ns_doctor is the ns-doctor kubectl plugin: `kubectl
// ns-doctor explain|purge|version`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	// Auth providers for kubeconfigs that name them (OIDC); exec
	// credential plugins work without this.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/ns-doctor/ns-doctor/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}
