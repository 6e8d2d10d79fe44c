package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

var identityLine = regexp.MustCompile(`\(identity (\S+)\)`)

// TestWatchLeaderElection runs two replicas as deploy/ runs them (the
// ServiceAccount and RBAC of deploy/10-rbac.yaml, the Lease in
// ns-doctor): the first leads and diagnoses, the second is ready but waits
// on the Lease and exports no diagnosis; the first killed (SIGKILL: it
// cannot hand over), the second takes the Lease and diagnoses.
func TestWatchLeaderElection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kubeconfig := watchServiceAccount(t)
	ns := plugintest.UniqueName(t)
	must(t, cluster.CreateNamespace(ctx, ns))
	must(t, cluster.CreateConfigMap(ctx, ns, "held", nil, "example.com/leader-test"))
	must(t, cluster.DeleteNamespace(ctx, ns))
	t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), ns, "held") })
	label := fmt.Sprintf(`namespace=%q`, ns)

	args := []string{"--leader-elect", "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=1s", "--after=0s", "--resync=3s", "--grace=0s"}
	first := startWatch(t, kubeconfig, args...)
	poll(t, time.Minute, "the first replica leading and diagnosing", func() (bool, error) {
		return len(first.series(t, "nsdoctor_leader", "nsdoctor_leader 1")) == 1 &&
			len(first.series(t, "nsdoctor_namespace_blocker", label)) > 0, nil
	})
	// client-go's own metrics, on the watch's registry: leader election's
	// (leaderelection.SetProvider) and the work queue's (workqueue.SetProvider);
	// /healthz asks the leader election's HealthzAdaptor.
	if got := first.series(t, "leader_election_master_status", `name="ns-doctor-watch"`); len(got) != 1 || !strings.HasSuffix(got[0], " 1") {
		t.Errorf("the leader exports %v, want leader_election_master_status{name=\"ns-doctor-watch\"} 1", got)
	}
	if got := first.series(t, "workqueue_adds_total", `name="namespaces"`); len(got) != 1 || strings.HasSuffix(got[0], " 0") {
		t.Errorf("the leader exports %v, want workqueue_adds_total{name=\"namespaces\"} above 0", got)
	}
	if code, body := first.get(t, "/healthz"); code != 200 || body != "ok" {
		t.Errorf("the leader's /healthz: %d %q", code, body)
	}
	second := startWatch(t, kubeconfig, args...)
	// The standby: ready, waiting, exporting no diagnosis while the first
	// renews (three retry periods and more).
	for range 3 {
		time.Sleep(2 * time.Second)
		if code, _ := second.get(t, "/readyz"); code != 200 {
			t.Errorf("the standby's /readyz answered %d, want 200", code)
		}
		if got := second.series(t, "nsdoctor_leader"); len(got) != 1 || !strings.HasSuffix(got[0], " 0") {
			t.Fatalf("the standby exports %v, want nsdoctor_leader 0", got)
		}
		if got := second.series(t, "nsdoctor_namespace_blocker", label); len(got) > 0 {
			t.Fatalf("the standby diagnosed %s: %v", ns, got)
		}
	}
	if !strings.Contains(second.Stderr.String(), "waiting for the Lease ns-doctor/ns-doctor-watch") {
		t.Errorf("the standby does not say it waits for the Lease:\n%s", second.Stderr.String())
	}

	first.Signal(syscall.SIGKILL)
	first.Exit(t, 10*time.Second)
	poll(t, time.Minute, "the second replica taking over", func() (bool, error) {
		return len(second.series(t, "nsdoctor_leader", "nsdoctor_leader 1")) == 1 &&
			len(second.series(t, "nsdoctor_namespace_blocker", label, `kind="FinalizersRemaining"`)) > 0, nil
	})
	if got := second.series(t, "leader_election_master_status", `name="ns-doctor-watch"`); len(got) != 1 || !strings.HasSuffix(got[0], " 1") {
		t.Errorf("the new leader exports %v, want leader_election_master_status 1", got)
	}
	lease, err := cluster.Kube.CoordinationV1().Leases("ns-doctor").Get(ctx, "ns-doctor-watch", metav1.GetOptions{})
	must(t, err)
	m := identityLine.FindStringSubmatch(second.Stderr.String())
	if m == nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != m[1] {
		t.Errorf("the Lease is held by %v, want the second replica (%v)", ptrString(lease.Spec.HolderIdentity), m)
	}
}

func ptrString(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// watchServiceAccount installs deploy/'s namespace and RBAC (once per
// package run) and returns a kubeconfig with a token of the watch's
// ServiceAccount.
func watchServiceAccount(t *testing.T) string {
	t.Helper()
	for _, f := range []string{"00-namespace.yaml", "10-rbac.yaml"} {
		r := plugintest.Command(t, "", time.Minute, []string{"KUBECONFIG=" + cp.Kubeconfig}, "kubectl", "apply", "-f", filepath.Join("..", "..", "deploy", f))
		if r.Code != 0 {
			t.Fatalf("kubectl apply -f deploy/%s: %s", f, r.Stderr)
		}
	}
	r := plugintest.Command(t, "", time.Minute, []string{"KUBECONFIG=" + cp.Kubeconfig}, "kubectl", "create", "token", "ns-doctor-watch", "-n", "ns-doctor", "--duration=1h")
	if r.Code != 0 {
		t.Fatalf("kubectl create token: %s", r.Stderr)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cp.Server(), CertificateAuthorityData: cp.Config.CAData}
	kc.AuthInfos["watch"] = &clientcmdapi.AuthInfo{Token: strings.TrimSpace(r.Stdout)}
	kc.Contexts["watch"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "watch"}
	kc.CurrentContext = "watch"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// TestWatchJanitor: a namespace the selector chooses and one beside it,
// both held by an orphaned finalizer. Without --purge-force the janitor
// only plans (a NamespacePurgePlanned Event; nothing changed, nothing
// saved); with it, the chosen namespace is purged after --purge-after with
// the escalation given, its objects saved first, and the other one is
// only reported.
func TestWatchJanitor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := plugintest.UniqueName(t)
	chosen, other := base+"-on", base+"-off"
	finalizer := "example.com/janitor-" + base[len(base)-5:]
	must(t, cluster.CreateNamespaceWithLabels(ctx, chosen, map[string]string{"ci-run": base}))
	must(t, cluster.CreateNamespace(ctx, other))
	for _, ns := range []string{chosen, other} {
		must(t, cluster.CreateConfigMap(ctx, ns, "held", nil, finalizer))
		must(t, cluster.DeleteNamespace(ctx, ns))
	}
	t.Cleanup(func() {
		for _, ns := range []string{chosen, other} {
			_ = cluster.ReleaseConfigMap(context.Background(), ns, "held")
		}
	})
	backups := t.TempDir()
	args := []string{"--after=0s", "--resync=3s", "--grace=0s", "--purge-selector=ci-run=" + base, "--purge-after=3s",
		"--remove-finalizers=" + finalizer, "--backup-dir=" + backups}

	planning := startWatch(t, cp.Kubeconfig, args...)
	poll(t, time.Minute, "a NamespacePurgePlanned Event on "+chosen, func() (bool, error) {
		return len(events(t, chosen, "NamespacePurgePlanned")) > 0, nil
	})
	poll(t, 30*time.Second, "a NamespaceStuck Event on "+other, func() (bool, error) {
		return len(events(t, other, "NamespaceStuck")) > 0, nil
	})
	planning.Signal(syscall.SIGTERM)
	if code := planning.Exit(t, 30*time.Second); code != 0 {
		t.Errorf("watch exited %d on SIGTERM", code)
	}
	if e := events(t, chosen, "NamespacePurgePlanned")[0]; !strings.Contains(e.Message, "server dry run") || !strings.Contains(e.Message, "--purge-force") {
		t.Errorf("NamespacePurgePlanned says %q", e.Message)
	}
	for _, ns := range []string{chosen, other} {
		cm, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "held", metav1.GetOptions{})
		if err != nil || len(cm.Finalizers) != 1 {
			t.Fatalf("after the planning janitor, configmap %s/held: %v %v", ns, cm, err)
		}
	}
	if entries, _ := os.ReadDir(backups); len(entries) > 0 {
		t.Errorf("the planning janitor saved %d backup(s)", len(entries))
	}
	if len(events(t, other, "NamespacePurgePlanned")) > 0 {
		t.Errorf("the janitor planned a purge of %s, which its selector does not choose", other)
	}

	acting := startWatch(t, cp.Kubeconfig, append(args, "--purge-force")...)
	poll(t, 2*time.Minute, chosen+" purged", func() (bool, error) {
		_, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, chosen, metav1.GetOptions{})
		return err != nil && len(events(t, chosen, "NamespacePurged")) > 0, nil
	})
	saved, _ := filepath.Glob(filepath.Join(backups, chosen+"-*", "objects", "configmaps.core.json"))
	if len(saved) != 1 {
		t.Fatalf("backups of %s: %v, want one configmaps file", chosen, saved)
	}
	objs, err := backup.ObjectsIn(saved[0])
	held := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetName() == "held" })
	if err != nil || held < 0 || !slices.Contains(objs[held].GetFinalizers(), finalizer) {
		t.Errorf("the backup %s does not hold configmap held with its finalizer: %v %v", saved[0], err, objs)
	}
	if !strings.Contains(planning.Stdout.String(), chosen+": janitor: server dry run") || !strings.Contains(acting.Stdout.String(), chosen+": janitor: purged") {
		t.Errorf("the janitor's runs are not in the watch's lines:\n%s\n%s", planning.Stdout.String(), acting.Stdout.String())
	}
	if got := acting.series(t, "nsdoctor_janitor_actions_total", `action="purge"`, `result="gone"`); len(got) != 1 || !strings.HasSuffix(got[0], " 1") {
		t.Errorf("nsdoctor_janitor_actions_total: %v, want one purge gone", got)
	}
	// The other namespace is untouched, and still reported.
	cm, err := cluster.Kube.CoreV1().ConfigMaps(other).Get(ctx, "held", metav1.GetOptions{})
	if err != nil || len(cm.Finalizers) != 1 {
		t.Errorf("configmap %s/held after the janitor: %v %v", other, cm, err)
	}
	if len(acting.series(t, "nsdoctor_namespace_blocker", fmt.Sprintf(`namespace=%q`, other))) == 0 {
		t.Errorf("%s is not reported by the acting janitor's watch", other)
	}
	if len(events(t, other, "NamespacePurged")) > 0 || len(events(t, other, "NamespacePurgeFailed")) > 0 {
		t.Errorf("the janitor acted on %s, which its selector does not choose", other)
	}
}
