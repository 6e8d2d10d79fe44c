package purge

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// example is what an entry is asked with in the tests of every entry.
func example(e Escalation) []string {
	if e.Switch() {
		return nil
	}
	return []string{e.Example}
}

// Every entry of the one list declares all that the places deriving from
// it read: its flag and help, its consent line, what it leaks, the
// permissions it needs, the next step it answers, the report's record of
// it, and the words of every change it makes. The command layer's test
// (internal/cli TestEveryEscalationEverywhere) checks the flags, the
// janitor, the prompt, the completion and docs/purge.md.
func TestEveryEscalationDeclaresItself(t *testing.T) {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Finalizers: []string{"example.com/meta"}}}
	snap := &deletion.Snapshot{Lists: map[schemaGVR]*metav1.PartialObjectMetadataList{
		deletion.PodsGVR: {Items: []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Name: "p", Finalizers: []string{"example.com/x"}}}}},
	}}
	disc := &kube.Discovery{Resources: []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", Namespaced: true, Verbs: []string{"list", "delete", "deletecollection", "get", "patch"}},
	}}}}
	s := scope{ns: ns, disc: disc, snap: snap}
	seen := map[string]bool{}
	for _, e := range Escalations() {
		t.Run(e.Name(), func(t *testing.T) {
			if seen[e.Flag] || !strings.HasPrefix(e.Flag, "--") {
				t.Fatalf("flag %q: twice, or without its dashes", e.Flag)
			}
			seen[e.Flag] = true
			values := example(e)
			if e.Help == "" || e.Leak == "" || (!e.Switch() && e.Example == "") {
				t.Errorf("help %q, leak %q, example %q", e.Help, e.Leak, e.Example)
			}
			if err := e.Check(values); err != nil {
				t.Errorf("its example is refused: %v", err)
			}
			if lines := e.Consent(values); len(lines) == 0 || !strings.HasPrefix(lines[0], "and") {
				t.Errorf("consent %q: the confirmation must say it, as \"and ...\"", lines)
			}
			act := e.start(values)
			if r, ok := act.(*bypasser); ok {
				r.found = []Row{bypassRow("ValidatingWebhookConfiguration", e.Example, Bypass{})} // what resolve finds
			}
			if len(act.needs(s)) == 0 {
				t.Error("it needs no permission: the check before acting would not know it")
			}
			step := diagnose.PurgeAction("ns", e.Flag, strings.Join(values, ","))
			if !(Asked{e.Flag: values}).Gives(step) {
				t.Errorf("it does not answer its own next step %+v", step)
			}
			used := Asked{e.Flag: values}.Used()
			if len(used) != 1 || used[0].Flag != e.Flag || len(used[0].Consent) == 0 {
				t.Errorf("the report's escalations: %+v", used)
			}
			for kind := range e.changes {
				if words, ok := ChangeWords(Change{Kind: kind, Name: "x", Resource: "r"}, "ns"); !ok || words == "" {
					t.Errorf("change %s has no words", kind)
				}
			}
		})
	}
	if len(seen) < 7 {
		t.Fatalf("only %d escalations", len(seen))
	}
}

// What is asked is checked in one place: unknown flags, bad values,
// conflicts.
func TestAskedCheck(t *testing.T) {
	for _, tc := range []struct {
		asked Asked
		want  string
	}{
		{Asked{diagnose.FlagRemoveFinalizers: {"example.com/*"}}, ""},
		{Asked{"--nope": nil}, "--nope is not an escalation"},
		{Asked{diagnose.FlagRemoveFinalizers: {"[bad"}}, "invalid --remove-finalizers pattern"},
		{Asked{diagnose.FlagRemoveFinalizers: {"a/*"}, diagnose.FlagRemoveAllFinalizers: nil}, "--remove-finalizers conflicts with --remove-all-finalizers"},
		{Asked{diagnose.FlagForceDeletePods: {"x"}}, "takes no value"},
		{Asked{diagnose.FlagBypassWebhook: nil}, "needs a value"},
		{Asked{diagnose.FlagBypassWebhook: {"Not_A_Name"}}, "invalid --bypass-webhook"},
	} {
		err := tc.asked.Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.asked, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want %q", tc.asked, err, tc.want)
		}
	}
}

// The escalations act in the list's order, and a next step's command
// line repeats them in it.
func TestAskedActionsInOrder(t *testing.T) {
	asked := Asked{diagnose.FlagForceDeletePods: nil, diagnose.FlagBypassWebhook: {"a", "b"}, diagnose.FlagRemoveFinalizers: {"x/*"}}
	var got []string
	for _, a := range asked.Actions("ns") {
		got = append(got, a.Flag+"="+a.Value)
	}
	want := "--bypass-webhook=a,b --remove-finalizers=x/* --force-delete-pods="
	if strings.Join(got, " ") != want {
		t.Errorf("actions %q, want %q", strings.Join(got, " "), want)
	}
}

// An escalation's file never asks which mode the run is in (its actions
// reach the run only through their actor, an interface): the writer alone
// decides what a write does (a plan plays it, a server dry run sends it with dryRun=All, a
// force run saves and sends it), so no escalation can act differently in
// a plan than it would for real.
func TestEscalationsNeverAskTheMode(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declaring := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !declaresEscalation(f) || name == "escalation.go" {
			continue
		}
		declaring++
		ast.Inspect(f, func(n ast.Node) bool {
			if x, ok := n.(*ast.Ident); ok && strings.HasPrefix(x.Name, "DryRun") {
				t.Errorf("%s: %s asks which mode the run is in", fset.Position(x.Pos()), x.Name)
			}
			return true
		})
	}
	if declaring < len(Escalations())-2 {
		t.Fatalf("only %d files declare an escalation", declaring)
	}
}

// declaresEscalation tells whether f declares an entry of the list.
func declaresEscalation(f *ast.File) bool {
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CompositeLit); ok {
			if id, ok := c.Type.(*ast.Ident); ok && id.Name == "Escalation" {
				found = true
			}
		}
		return !found
	})
	return found
}
