package e2e

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// purge --force across clusters asks once, on a terminal, naming every
// context and its namespaces; only their total number goes on, and a
// wrong answer changes nothing anywhere.
func TestPurgeAcrossClustersAsksOnce(t *testing.T) {
	f := newTwoClusters(t)
	term := plugin.RunOnTerminal(t, f.kubeconfig, "ns-doctor", "purge", "-l", "fleet-run="+f.run, "--contexts=east,west",
		"--force", "--remove-finalizers=example.com/*", "--backup-dir", t.TempDir())
	term.WaitFor(t, "Type the number of namespaces (2) to go on: ")
	for _, want := range []string{"on 2 namespaces in 2 clusters", `context "east"`, f.east, `context "west"`, f.west} {
		if !strings.Contains(term.Output(), want) {
			t.Errorf("the prompt does not name %s:\n%s", want, term.Output())
		}
	}
	term.Type(t, "1\n")
	if code := term.ExitCode(t); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, term.Output())
	}
	term.WaitFor(t, "not confirmed: nothing was changed")
	ctx := context.Background()
	if _, err := cluster.Kube.CoreV1().ConfigMaps(f.east).Get(ctx, "a1", metav1.GetOptions{}); err != nil {
		t.Errorf("east changed without consent: %v", err)
	}
	if _, err := f.westCluster.Kube.CoreV1().ConfigMaps(f.west).Get(ctx, "held", metav1.GetOptions{}); err != nil {
		t.Errorf("west changed without consent: %v", err)
	}
}
