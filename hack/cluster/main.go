// Command cluster runs the local control plane in the foreground for
// humans (`make cluster`), writing its kubeconfig to a known path, until
// interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
)

func main() {
	kubeconfig := flag.String("kubeconfig", ".cache/cluster/kubeconfig", "where to copy the admin kubeconfig")
	noController := flag.Bool("without-controller-manager", false, "start no namespace controller")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cp, err := controlplane.Start(ctx, controlplane.Options{WithoutControllerManager: *noController})
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
		os.Exit(1)
	}
	defer cp.Stop()
	data, err := os.ReadFile(cp.Kubeconfig)
	if err == nil {
		err = os.WriteFile(*kubeconfig, data, 0o600)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster: writing kubeconfig: %v\n", err)
		return
	}
	fmt.Printf("control plane up at %s (logs in %s)\nexport KUBECONFIG=%s\n", cp.Server(), cp.Dir, *kubeconfig)
	<-ctx.Done()
}
