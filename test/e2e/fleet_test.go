package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ns-doctor/ns-doctor/internal/fleet"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// Two clusters in one kubeconfig (east: the shared control plane; west: a
// second one), a stuck namespace on each, and a third context whose
// server accepts connections and never answers: explain over all of them
// reports each cluster's namespaces with their context, the silent one as
// unreachable within --request-timeout, and exits 1 for it; over the two
// that answer, 3 for the stuck ones. Impersonation applies to each
// context; a flag that belongs to one cluster (--context, a CA, a client
// certificate) is a usage error.
func TestExplainAcrossClusters(t *testing.T) {
	ctx := context.Background()
	west, err := controlplane.Start(ctx, controlplane.Options{Minimal: true})
	plugintest.Must(t, err)
	t.Cleanup(west.Stop)
	westCluster, err := scenario.NewCluster(west.Config)
	plugintest.Must(t, err)

	eastName := heldByFinalizers(t, true, nil)
	westName := plugintest.UniqueName(t) + "-west"
	plugintest.Must(t, westCluster.CreateNamespace(ctx, westName))
	plugintest.Must(t, westCluster.CreateConfigMap(ctx, westName, "held", nil, "example.com/west"))
	plugintest.Must(t, westCluster.DeleteNamespace(ctx, westName))
	waitCondition(t, eastName, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	_, err = westCluster.WaitForConditionStatus(ctx, westName, time.Minute, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	plugintest.Must(t, err)
	kubeconfig := fleetKubeconfig(t, map[string]string{"east": cp.Kubeconfig, "west": west.Kubeconfig}, silentServer(t))

	run := func(args ...string) plugintest.Result {
		return plugintest.Kubectl(t, plugin.Dir, kubeconfig, append([]string{"ns-doctor", "explain", "--grace=0s"}, args...)...)
	}
	r := run("--contexts=east,w*")
	if r.Code != 3 || !strings.Contains(lineWith(r.Stdout, eastName), "east") || !strings.Contains(lineWith(r.Stdout, westName), "west") ||
		!strings.HasPrefix(r.Stdout, "CONTEXT") {
		t.Errorf("two clusters: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	// The list view as data; --full the full reports, as before.
	r = run("--contexts=east,west", "-o", "json")
	var lines printer.SummaryListDocument
	plugintest.Must(t, json.Unmarshal([]byte(r.Stdout), &lines))
	contextOf := map[string]string{}
	for _, item := range lines.Items {
		contextOf[item.Namespace.Name] = item.Context
	}
	if r.Code != 3 || lines.Kind != printer.SummaryListKind || contextOf[eastName] != "east" || contextOf[westName] != "west" || len(lines.Clusters) != 2 ||
		lines.Clusters[0].Reach != fleet.Reachable || lines.Clusters[1].Reach != fleet.Reachable {
		t.Errorf("-o json: exit %d, kind %s, contexts %v, clusters %+v", r.Code, lines.Kind, contextOf, lines.Clusters)
	}
	r = run("--contexts=east,west", "-o", "json", "--full")
	var list printer.DiagnosisListDocument
	plugintest.Must(t, json.Unmarshal([]byte(r.Stdout), &list))
	clear(contextOf)
	for _, item := range list.Items {
		contextOf[item.Namespace.Name] = item.Context
	}
	if r.Code != 3 || list.Kind != printer.DiagnosisListKind || contextOf[eastName] != "east" || contextOf[westName] != "west" || len(list.Clusters) != 2 {
		t.Errorf("-o json --full: exit %d, kind %s, contexts %v, clusters %+v", r.Code, list.Kind, contextOf, list.Clusters)
	}

	r = run("--all-contexts", "--request-timeout=3s")
	down := lineWith(r.Stdout, "down")
	if r.Code != 1 || !strings.Contains(down, string(fleet.Unreachable)) || !strings.Contains(down, "no answer within --request-timeout") || !strings.Contains(lineWith(r.Stdout, westName), "west") ||
		strings.TrimSpace(r.Stderr) != "error: 1 of 3 clusters could not be read: down (unreachable); the others' namespaces are above" {
		t.Errorf("a silent cluster: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	// Impersonation goes to every context: each cluster answers for the
	// user impersonated, and the group given with it.
	r = run("--contexts=east,west", "--as=ns-doctor-nobody")
	if want := "error: 2 of 2 clusters could not be read: east (forbidden), west (forbidden); the others' namespaces are above"; r.Code != 1 || strings.TrimSpace(r.Stderr) != want {
		t.Errorf("--as=ns-doctor-nobody: exit %d, stderr %q, want %q", r.Code, r.Stderr, want)
	}
	if r := run("--contexts=east,west", "--as=ns-doctor-nobody", "--as-group=system:masters"); r.Code != 3 || !strings.Contains(lineWith(r.Stdout, westName), "west") {
		t.Errorf("--as with --as-group=system:masters: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	for _, args := range [][]string{{"--contexts=nowhere-*"}, {"--contexts=east", eastName}, {"--all-contexts", "--context=east"}, {"--all-contexts", "--contexts=east"},
		{"--all-contexts", "--certificate-authority=" + filepath.Join(t.TempDir(), "ca.crt")}, {"--contexts=east", "--client-certificate=" + filepath.Join(t.TempDir(), "tls.crt")}} {
		if r := run(args...); r.Code != 2 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, r.Code, r.Stderr)
		}
	}
	if r := run("--all-contexts", "--certificate-authority=ca.crt"); !strings.Contains(r.Stderr, "set certificate-authority on that cluster in the kubeconfig instead") {
		t.Errorf("a refused CA does not say what to do instead: %q", r.Stderr)
	}
	if r := run("--contexts=nowhere-*"); !strings.Contains(r.Stderr, "the contexts are: down, east, west") {
		t.Errorf("no match does not list the contexts: %q", r.Stderr)
	}
}

// fleetKubeconfig merges one context from each kubeconfig under a new
// name, and adds "down", whose server is silent.
func fleetKubeconfig(t *testing.T, from map[string]string, silent string) string {
	t.Helper()
	out := clientcmdapi.NewConfig()
	for name, path := range from {
		cfg, err := clientcmd.LoadFromFile(path)
		plugintest.Must(t, err)
		c := cfg.Contexts[cfg.CurrentContext]
		out.Clusters[name] = cfg.Clusters[c.Cluster]
		out.AuthInfos[name] = cfg.AuthInfos[c.AuthInfo]
		out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	out.Clusters["down"] = &clientcmdapi.Cluster{Server: "https://" + silent, InsecureSkipTLSVerify: true}
	out.Contexts["down"] = &clientcmdapi.Context{Cluster: "down", AuthInfo: "east"}
	out.CurrentContext = "east"
	file := filepath.Join(t.TempDir(), "kubeconfig")
	plugintest.Must(t, clientcmd.WriteToFile(*out, file))
	return file
}

// purge -l across two clusters: the plan first (nothing changes), then one
// forced run that finishes the label's namespaces in both, each backed up
// under its context, and leaves a namespace the label does not choose.
func TestPurgeAcrossClusters(t *testing.T) {
	ctx := context.Background()
	f := newTwoClusters(t)
	run, eastName, westName, westCluster, kubeconfig := f.run, f.east, f.west, f.westCluster, f.kubeconfig
	other := run + "-other"
	plugintest.Must(t, westCluster.CreateNamespace(ctx, other))
	plugintest.Must(t, westCluster.CreateConfigMap(ctx, other, "held", nil, "example.com/a"))
	plugintest.Must(t, westCluster.DeleteNamespace(ctx, other))
	purgeIn := func(args ...string) (printer.PurgeListDocument, plugintest.Result) {
		r := plugintest.Kubectl(t, plugin.Dir, kubeconfig, append([]string{"ns-doctor", "purge", "-l", "fleet-run=" + run, "--contexts=east,west", "-o", "json"}, args...)...)
		var list printer.PurgeListDocument
		if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
			t.Fatalf("purge -o json: %v\n%s%s", err, r.Stdout, r.Stderr)
		}
		return list, r
	}

	plan, r := purgeIn("--remove-finalizers=example.com/*")
	if r.Code != 0 || len(plan.Items) != 2 {
		t.Fatalf("plan: exit %d, %d items\n%s", r.Code, len(plan.Items), r.Stderr)
	}
	backups := t.TempDir()
	done, r := purgeIn("--remove-finalizers=example.com/*", "--force", "--yes", "--backup-dir", backups, "--timeout=2m")
	where := map[string]string{}
	for _, item := range done.Items {
		where[item.Namespace] = item.Context + " " + string(item.Outcome)
	}
	if r.Code != 0 || where[eastName] != "east Gone" || where[westName] != "west Gone" || len(where) != 2 {
		t.Fatalf("force: exit %d, %v\n%s", r.Code, where, r.Stderr)
	}
	for _, c := range []string{"east", "west"} {
		if !strings.Contains(r.Stderr, `writing to context "`+c+`"`) {
			t.Errorf("stderr does not say it writes to %s:\n%s", c, r.Stderr)
		}
	}
	for dir, ns := range map[string]string{"east": eastName, "west": westName} {
		if matches, _ := filepath.Glob(filepath.Join(backups, dir, ns, "*")); len(matches) == 0 {
			t.Errorf("no backup under %s/%s", dir, ns)
		}
	}
	if _, err := westCluster.Kube.CoreV1().Namespaces().Get(ctx, other, metav1.GetOptions{}); err != nil {
		t.Errorf("the namespace the label does not choose was touched: %v", err)
	}
}

// twoClusters is a kubeconfig with contexts east (the shared control
// plane) and west (one of its own), and down (silent); a terminating
// namespace labelled fleet-run=run in each, held by example.com/a.
type twoClusters struct {
	run, east, west string
	westCluster     *scenario.Cluster
	kubeconfig      string
}

func newTwoClusters(t *testing.T) twoClusters {
	t.Helper()
	ctx := context.Background()
	west, err := controlplane.Start(ctx, controlplane.Options{Minimal: true})
	plugintest.Must(t, err)
	t.Cleanup(west.Stop)
	f := twoClusters{run: plugintest.UniqueName(t)}
	f.westCluster, err = scenario.NewCluster(west.Config)
	plugintest.Must(t, err)
	labels := map[string]string{"fleet-run": f.run}
	f.east = heldByFinalizers(t, true, labels)
	f.west = f.run + "-west"
	plugintest.Must(t, f.westCluster.CreateNamespaceWithLabels(ctx, f.west, labels))
	plugintest.Must(t, f.westCluster.CreateConfigMap(ctx, f.west, "held", nil, "example.com/a"))
	plugintest.Must(t, f.westCluster.DeleteNamespace(ctx, f.west))
	f.kubeconfig = fleetKubeconfig(t, map[string]string{"east": cp.Kubeconfig, "west": west.Kubeconfig}, silentServer(t))
	return f
}
