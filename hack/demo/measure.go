package main

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/ns-doctor/ns-doctor/test/support/apimetrics"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
)

// measure compares explain with the shell loop everyone uses, on the demo
// namespace: wall time, and API requests counted by kube-apiserver's own
// apiserver_request_total (the namespace controller is stopped first so
// only the measured command talks to the server).
func measure(ctx context.Context, cp *controlplane.ControlPlane, env []string) error {
	cp.StopControllerManager()
	client, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	recipe := "kubectl api-resources --verbs=list --namespaced -o name | xargs -n 1 kubectl get --show-kind --ignore-not-found -n demo"
	runs := []struct{ name, script string }{
		{"idle (noise, 1 s)", "sleep 1"},
		{"kubectl ns-doctor explain demo", "kubectl ns-doctor explain demo -o json >/dev/null; true"},
		{"shell recipe", recipe + " >/dev/null 2>&1; true"},
	}
	fmt.Printf("%-32s %10s %10s\n", "command", "seconds", "requests")
	for _, r := range runs {
		before, err := apimetrics.RequestCounts(ctx, client)
		if err != nil {
			return err
		}
		start := time.Now()
		cmd := exec.CommandContext(ctx, "bash", "-c", r.script)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", r.name, err, out)
		}
		elapsed := time.Since(start)
		after, err := apimetrics.RequestCounts(ctx, client)
		if err != nil {
			return err
		}
		fmt.Printf("%-32s %10.2f %10.0f\n", r.name, elapsed.Seconds(), apimetrics.Total(apimetrics.Delta(before, after)))
	}
	return nil
}
