package purge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// operatorLeftovers makes n namespaces labelled batch=<id>, each holding
// a custom resource whose operator was uninstalled (its finalizer stays)
// beside plain content, and deletes them: the shape an operator's removal
// leaves in many namespaces at once.
func operatorLeftovers(t *testing.T, n int) (string, []string) {
	t.Helper()
	ctx := context.Background()
	batch := plugintest.UniqueName(t)
	gvr, err := cluster.EnsureCRD(ctx, "uninstalled.example.com", "Thing", "things")
	plugintest.Must(t, err)
	var names []string
	for i := range n {
		ns := fmt.Sprintf("%s-%02d", batch, i)
		names = append(names, ns)
		plugintest.Must(t, cluster.CreateNamespaceWithLabels(ctx, ns, map[string]string{"batch": batch}))
		plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Thing", ns, "thing", "uninstalled.example.com/cleanup"))
		plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "plain", nil))
		plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
	}
	return batch, names
}

// One run empties 20 namespaces an uninstalled operator left stuck: one
// discovery for all, a backup folder each, a report listing each outcome.
func TestPurgeManyNamespacesInOneRun(t *testing.T) {
	ctx := context.Background()
	batch, names := operatorLeftovers(t, 20)

	plan := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", "--all-terminating", "-l", "batch="+batch, "--remove-finalizers=uninstalled.example.com/*")
	if plan.Code != 0 || !strings.Contains(plan.Stdout, "PLAN 20 namespaces") || strings.Count(plan.Stdout, batch+"-") != 20 {
		t.Fatalf("plan: exit %d\n%s\n%s", plan.Code, plan.Stdout, plan.Stderr)
	}

	started := time.Now()
	dir := t.TempDir()
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", "--all-terminating", "-l", "batch="+batch, "--force", "--yes",
		"--remove-finalizers=uninstalled.example.com/*", "--backup-dir", dir, "--timeout=2m", "-o", "json", "-v=6")
	var list printer.PurgeListDocument
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || r.Code != 0 || list.Kind != printer.PurgeListKind {
		t.Fatalf("exit %d, %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if len(list.Items) != 20 {
		t.Fatalf("%d reports, want 20", len(list.Items))
	}
	for _, rep := range list.Items {
		if rep.Outcome != purge.OutcomeGone {
			t.Errorf("%s: %s: %s", rep.Namespace, rep.Outcome, rep.Message)
		}
		if _, err := os.Stat(filepath.Join(dir, rep.Namespace, "namespace.yaml")); err != nil {
			t.Errorf("%s has no backup folder of its own: %v", rep.Namespace, err)
		}
	}
	for _, ns := range names {
		if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
			t.Errorf("namespace %s still there", ns)
		}
	}
	// The first passes share one discovery; later passes rediscover as the
	// controller does, at most once per 5 s for all the namespaces. Counted
	// from purge's own request log: the bed's garbage collector and quota
	// controller rediscover on their own clock, which the API server's
	// counters would add in.
	elapsed := time.Since(started)
	if n, most := discoveries(r.Stderr), 1+int(elapsed/(5*time.Second)); n < 1 || n > most {
		t.Errorf("%v discoveries (GET /apis) for 20 namespaces in %s, want 1 to %d", n, elapsed.Round(time.Millisecond), most)
	}
	// The bed's admin may do everything: one access review answers for
	// the 20 runs, and no namespace's rules are asked for.
	if access, rules := posts(r.Stderr, "selfsubjectaccessreviews"), posts(r.Stderr, "selfsubjectrulesreviews"); access != 1 || rules != 0 {
		t.Errorf("%d SelfSubjectAccessReviews and %d SelfSubjectRulesReviews for 20 namespaces, want 1 and 0", access, rules)
	}
}

// posts counts the POSTs to a resource (its path's last segment) in a
// -v=6 log.
func posts(log, resource string) int {
	n := 0
	for _, m := range requestLine.FindAllStringSubmatch(log, -1) {
		if m[1] == "POST" && strings.HasSuffix(m[2], "/"+resource) {
			n++
		}
	}
	return n
}

// The exit code is the worst namespace's: one held by a finalizer no flag
// strips makes the run incomplete, the others are gone.
func TestPurgeManyReportsTheWorst(t *testing.T) {
	ctx := context.Background()
	batch, names := operatorLeftovers(t, 3)
	plugintest.Must(t, cluster.CreateNamespaceWithLabels(ctx, batch+"-held", map[string]string{"batch": batch}))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, batch+"-held", "held", nil, "other.io/hold"))
	t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), batch+"-held", "held") })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, batch+"-held"))

	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", "-l", "batch="+batch, "--force", "--yes",
		"--remove-finalizers=uninstalled.example.com/*", "--backup-dir", t.TempDir(), "--timeout=15s")
	if r.Code != 5 || !strings.Contains(r.Stdout, "INCOMPLETE 4 namespaces") || !strings.Contains(r.Stderr, batch+"-held") {
		t.Fatalf("exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, ns := range names {
		if line := lineWith(r.Stdout, ns+" "); !strings.Contains(line, " Gone ") {
			t.Errorf("%s not reported gone: %q\n%s", ns, line, r.Stdout)
		}
	}
}

// discoveries counts the GETs of /apis in a -v=6 log.
func discoveries(log string) int {
	n := 0
	for _, m := range requestLine.FindAllStringSubmatch(log, -1) {
		if m[1] == "GET" && m[2] == "/apis" {
			n++
		}
	}
	return n
}

func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// Several names, with one confirmation naming their number; a system
// namespace among them is refused before anything is sent.
func TestPurgeSeveralNamesRefusesSystemNamespaces(t *testing.T) {
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", "a-namespace", "kube-system")
	if r.Code != 2 || !strings.Contains(r.Stderr, `refusing to purge the system namespace "kube-system"`) {
		t.Fatalf("exit %d, %s", r.Code, r.Stderr)
	}
	r = plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", "a", "-l", "x=y")
	if r.Code != 2 || !strings.Contains(r.Stderr, "not both") {
		t.Fatalf("names and a selector: exit %d, %s", r.Code, r.Stderr)
	}
}
