package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// fakeFactory hands the commands clients over an in-memory cluster.
type fakeFactory struct {
	*genericclioptions.ConfigFlags
	cluster *kubetest.Cluster
}

func (f fakeFactory) Clients() (*kube.Clients, error) { return f.cluster.Clients(), nil }

func (fakeFactory) ClientsFor(*genericclioptions.ConfigFlags) (*kube.Clients, error) {
	return nil, errors.New("one cluster only: use fleetFactory for --all-contexts and --contexts")
}

// runFake runs ns-doctor in-process against c.
func runFake(t *testing.T, c *kubetest.Cluster, args ...string) (int, string, string) {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(true)
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, flags, fakeFactory{flags, c})
	return code, out.String(), errOut.String()
}

func stuckCluster() *kubetest.Cluster {
	c := kubetest.New()
	c.AddNamespace("demo", 10*time.Minute)
	held := kubetest.Object("ConfigMap", "demo", "held", "example.com/hold")
	deleted := metav1.NewTime(time.Now().Add(-9 * time.Minute))
	held.SetDeletionTimestamp(&deleted)
	c.Add(kubetest.ConfigMaps, held)
	return c
}

func TestExplainThroughTheCommand(t *testing.T) {
	c := stuckCluster()
	code, out, errOut := runFake(t, c, "explain", "demo")
	if code != ExitStuck || errOut != "" || !strings.Contains(out, "STUCK namespace demo") || !strings.Contains(out, "--remove-finalizers=example.com/hold") {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	code, out, _ = runFake(t, c, "explain", "-n", "demo", "-o", "json")
	var r printer.DiagnosisDocument
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != ExitStuck || r.Namespace.Name != "demo" || r.Kind != printer.DiagnosisKind {
		t.Fatalf("-o json: exit %d, %v, %+v", code, err, r.Namespace)
	}
	code, out, _ = runFake(t, c, "explain", "-o", "yaml")
	if code != ExitStuck || !strings.Contains(out, "kind: NamespaceSummaryList") || strings.Contains(out, "conditions:") {
		t.Fatalf("no name -o yaml, the list view: exit %d\n%s", code, out)
	}
	code, out, _ = runFake(t, c, "explain", "-o", "yaml", "--full")
	if code != ExitStuck || !strings.Contains(out, "kind: NamespaceDiagnosisList") || !strings.Contains(out, "conditions:") {
		t.Fatalf("no name -o yaml --full, the full reports: exit %d\n%s", code, out)
	}
	if code, _, errOut := runFake(t, c, "explain", "--orphans", "--full"); code != ExitUsage || !strings.Contains(errOut, "--full") {
		t.Fatalf("--orphans --full: exit %d, %q", code, errOut)
	}
	code, _, errOut = runFake(t, c, "explain", "gone")
	if code != ExitNotFound || !strings.Contains(errOut, `namespace "gone" not found`) {
		t.Fatalf("not found: exit %d, %q", code, errOut)
	}
}

func TestPurgeThroughTheCommand(t *testing.T) {
	c := stuckCluster()
	code, out, errOut := runFake(t, c, "purge", "demo", "--remove-finalizers=example.com/*")
	if code != ExitOK || !strings.Contains(out, "PLAN namespace demo") || !strings.Contains(out, "would remove") || c.Namespace("demo") == nil {
		t.Fatalf("plan: exit %d, stderr %q\n%s", code, errOut, out)
	}
	code, _, errOut = runFake(t, c, "purge", "demo", "--force")
	if code != ExitUsage || !strings.Contains(errOut, "add --yes") {
		t.Fatalf("--force without a terminal: exit %d, %q", code, errOut)
	}
	code, out, errOut = runFake(t, c, "purge", "demo", "--force", "--yes", "--remove-finalizers=example.com/*", "--backup-dir", t.TempDir(), "-o", "json")
	var r printer.PurgeDocument
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != ExitOK || r.Outcome != purge.OutcomeGone || c.Namespace("demo") != nil {
		t.Fatalf("force: exit %d, %v, outcome %s\nstderr %s", code, err, r.Outcome, errOut)
	}
	if !strings.Contains(errOut, "backup: ") || !strings.Contains(errOut, "pass 1:") {
		t.Errorf("no progress on stderr: %q", errOut)
	}
}

func TestPurgeTimesOutWithItsExitCode(t *testing.T) {
	c := stuckCluster()
	code, out, errOut := runFake(t, c, "purge", "demo", "--force", "--yes", "--timeout=200ms", "--backup-dir", t.TempDir())
	if code != ExitIncomplete || !strings.Contains(out, "INCOMPLETE") || !strings.Contains(errOut, "error: namespace demo still exists after --timeout=200ms") {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
}

// Usage errors are found before any request.
func TestUsageErrors(t *testing.T) {
	for args, want := range map[string]string{
		"purge demo --force --dry-run=server":                      "--force conflicts with --dry-run=server",
		"purge demo --dry-run=all":                                 "invalid --dry-run",
		"purge kube-system":                                        "--allow-system-namespace",
		"purge demo --remove-all-finalizers --remove-finalizers=a": "conflicts with --remove-all-finalizers",
		"purge demo --remove-finalizers=[":                         "invalid --remove-finalizers pattern",
		"purge demo --timeout=0s":                                  "--timeout must be positive",
		"explain demo -o xml":                                      "unknown output format",
		"explain demo --color=sometimes":                           "invalid --color",
		"explain Demo_X":                                           "not a valid namespace name",
		"explain --if-deleted":                                     "--if-deleted needs a namespace NAME",
		"explain demo --grace=-1s":                                 "--grace must not be negative",
		"version -o toml":                                          "unknown output format",
		"explain demo --bogus":                                     "unknown flag: --bogus",
	} {
		c := stuckCluster()
		code, _, errOut := runFake(t, c, strings.Fields(args)...)
		if code != ExitUsage || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q, want %q on one line", args, code, errOut, want)
		}
		if len(c.Requests) != 0 {
			t.Errorf("%s: sent %v before refusing", args, c.Requests)
		}
	}
}

// -v=6 makes client-go log each request, as in kubectl.
func TestVerbosityFlag(t *testing.T) {
	code, _, errOut := runFake(t, stuckCluster(), "version", "-v=3")
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	code, _, errOut = runFake(t, stuckCluster(), "version", "-v=x")
	if code != ExitUsage || !strings.Contains(errOut, "-v") {
		t.Fatalf("bad -v: exit %d, %q", code, errOut)
	}
}

// explain --orphans lists a former namespace's leftovers (exit 3) and
// purge --orphans plans their deletion; the flags' misuses are usage
// errors.
func TestOrphansThroughTheCommands(t *testing.T) {
	c := kubetest.New()
	c.AddNamespace("live", 0)
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "live", "mine"))
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "old", "left", "example.com/hold"))
	code, out, errOut := runFake(t, c, "explain", "--orphans")
	if code != ExitStuck || !strings.Contains(out, "LEFTOVERS 1 objects of 1 namespace(s)") || strings.Contains(out, "live") {
		t.Fatalf("explain --orphans: exit %d, stderr %q\n%s", code, errOut, out)
	}
	code, out, _ = runFake(t, c, "purge", "--orphans", "old", "-o", "json")
	var r printer.PurgeDocument
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != ExitOK || !r.Orphans || r.Outcome != purge.OutcomePlanned {
		t.Fatalf("purge --orphans: exit %d, %v\n%s", code, err, out)
	}
	for _, args := range [][]string{
		{"explain", "--orphans", "live"},
		{"explain", "--orphans", "a", "b"},
		{"explain", "--orphans", "--wait=1m"},
		{"purge", "--orphans"},
		{"purge", "--orphans", "old", "--delete-namespace"},
		{"purge", "--orphans", "live"},
	} {
		if code, _, errOut := runFake(t, c, args...); code != ExitUsage || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want a one-line usage error", args, code, errOut)
		}
	}
	if code, out, _ := runFake(t, kubetest.New(), "explain", "--orphans"); code != ExitOK || !strings.Contains(out, "no leftovers") {
		t.Errorf("none: exit %d\n%s", code, out)
	}
}

// A refused purge of several namespaces prints a table without the missing
// permissions: the error line names them itself.
func TestRefusedPurgeNamesWhatIsMissing(t *testing.T) {
	c := kubetest.New()
	for _, ns := range []string{"a", "b"} {
		c.AddNamespace(ns, time.Minute)
		c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", ns, "plain"))
	}
	c.Allowed = func(a kubetest.ResourceAttributes) bool {
		// As RBAC: who may not deletecollection may not do everything.
		return a.Verb != "*" && a.Verb != "deletecollection" && a.Subresource != "finalize"
	}
	code, out, errOut := runFake(t, c, "purge", "a", "b", "--force", "--yes", "--backup-dir", t.TempDir())
	if code != ExitError || !strings.Contains(errOut, "missing ") || !strings.Contains(errOut, "permission(s): deletecollection ") ||
		!strings.Contains(errOut, "more (the report lists all); nothing was changed") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// Over several namespaces, a caller who may do everything is asked once,
// not once per namespace.
func TestPurgeOfManyAsksOnceWhoMayDoEverything(t *testing.T) {
	c := kubetest.New()
	for _, ns := range []string{"a", "b", "c"} {
		c.AddNamespace(ns, time.Minute)
		c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", ns, "plain"))
	}
	if code, out, errOut := runFake(t, c, "purge", "a", "b", "c", "--force", "--yes", "--backup-dir", t.TempDir()); code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if rules, reviews := len(c.RequestsMatching("ask selfsubjectrulesreviews")), len(c.RequestsMatching("ask selfsubjectaccessreviews")); rules != 0 || reviews != 1 {
		t.Errorf("%d rules reviews and %d access reviews, want one access review for the three namespaces", rules, reviews)
	}
}
