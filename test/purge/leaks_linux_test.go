package purge_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ns-doctor/ns-doctor/internal/finalizers"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// Before stripping a known finalizer, the plan and the confirmation say
// what it leaks, from the catalogue; an unknown one says so.
func TestStrippingSaysWhatItLeaks(t *testing.T) {
	ctx := context.Background()
	const argo = "resources-finalizer.argocd.argoproj.io"
	entry := finalizers.Lookup(argo)
	if entry == nil {
		t.Fatalf("%s is not in the catalogue", argo)
	}
	gvr, err := cluster.EnsureCRD(ctx, "leaks.example.com", "App", "apps")
	plugintest.Must(t, err)
	ns := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "App", ns, "guestbook", argo))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "App", ns, "mystery", "leaks.example.com/unknown"))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))

	plan := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", ns, "--remove-all-finalizers", "-o", "json")
	var r printer.PurgeDocument
	if err := json.Unmarshal([]byte(plan.Stdout), &r); err != nil || plan.Code != 0 {
		t.Fatalf("plan: exit %d, %v\n%s", plan.Code, err, plan.Stderr)
	}
	leaks := map[string]purge.Leak{}
	for _, l := range r.Leaks {
		leaks[l.Finalizer] = l
	}
	if l := leaks[argo]; l.Owner != entry.Owner || l.Leak != entry.Leak || l.Source != entry.Source {
		t.Errorf("leak of %s: %+v, want the catalogue's %+v", argo, l, entry)
	}
	if l, ok := leaks["leaks.example.com/unknown"]; !ok || l.Owner != "" {
		t.Errorf("an unknown finalizer: %+v (listed %v), want listed with no owner", l, ok)
	}
	human := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", ns, "--remove-all-finalizers")
	if flat := strings.Join(strings.Fields(human.Stdout), " "); !strings.Contains(flat, "stripping "+argo+" (owner: "+entry.Owner+") leaks: "+entry.Leak) ||
		!strings.Contains(flat, "stripping leaks.example.com/unknown: unknown owner") {
		t.Errorf("the plan does not say what stripping leaks:\n%s", human.Stdout)
	}

	term := runOnTerminal(t, ns, "--force", "--remove-finalizers=resources-finalizer.argocd.argoproj.io", "--backup-dir", t.TempDir())
	term.WaitFor(t, "Type the namespace name to go on: ")
	if flat := strings.Join(strings.Fields(term.Output()), " "); !strings.Contains(flat, "stripping "+argo+" (owner: "+entry.Owner+") leaks:") {
		t.Errorf("the confirmation does not say what stripping leaks:\n%s", term.Output())
	}
	term.Type(t, "no\n")
	if code := term.ExitCode(t); code != 1 {
		t.Errorf("exit %d after refusing", code)
	}
}
