package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// The bounds a human report keeps whatever the cluster holds: a screenful
// of sections, each list cut to a count past its limit. Memory is bounded
// by what a report must hold, not by what the cluster sends.
const (
	maxLines = 400
	maxBytes = 64 << 10
	maxRSS   = 256 << 20
)

// measured runs the plugin binary itself (its own peak memory, not
// kubectl's), logs what it printed and the memory it took, and fails the
// test if the human view outgrows a screenful or memory its bound.
func measured(t *testing.T, human bool, args ...string) plugintest.Result {
	t.Helper()
	r := plugin.Direct(t, cp.Kubeconfig, args...)
	lines := strings.Count(r.Stdout, "\n")
	t.Logf("%s: exit %d, stdout %d bytes in %d lines, stderr %d bytes, peak RSS %.1f MiB",
		strings.Join(args, " "), r.Code, len(r.Stdout), lines, len(r.Stderr), float64(r.MaxRSS)/(1<<20))
	if human && (lines > maxLines || len(r.Stdout) > maxBytes) {
		t.Errorf("%s: the human view is %d lines, %d bytes; want at most %d lines, %d bytes", strings.Join(args, " "), lines, len(r.Stdout), maxLines, maxBytes)
	}
	if r.MaxRSS > maxRSS {
		t.Errorf("%s: peak RSS %d MiB, want at most %d MiB", strings.Join(args, " "), r.MaxRSS>>20, maxRSS>>20)
	}
	if bad := terminalBytes(r.Stdout + r.Stderr); len(bad) > 0 {
		t.Errorf("%s: %v reached the terminal", strings.Join(args, " "), bad)
	}
	return r
}

func explainJSON(t *testing.T, name string) printer.DiagnosisDocument {
	t.Helper()
	r := measured(t, false, "explain", name, "-o", "json")
	var doc printer.DiagnosisDocument
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("explain -o json: %v\n%s", err, r.Stderr)
	}
	return doc
}

// stuckTenant makes a namespace held by one custom resource with the
// given finalizers and status message, deleted, and returns its name.
func stuckTenant(t *testing.T, message string, finalizers ...string) string {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("s%d.example.com", time.Now().UnixNano()%100000)
	gvr, err := cluster.EnsureCRD(ctx, group, "Tenant", "tenants")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateHolder(ctx, gvr, "Tenant", name, "t1", finalizers[0], message, nil))
	if len(finalizers) > 1 {
		obj, err := cluster.Dynamic.Resource(gvr).Namespace(name).Get(ctx, "t1", getOpts)
		plugintest.Must(t, err)
		obj.SetFinalizers(finalizers)
		_, err = cluster.Dynamic.Resource(gvr).Namespace(name).Update(ctx, obj, updateOpts)
		plugintest.Must(t, err)
	}
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	return name
}

// A 100 KB status message (many lines of it) is cut to a few lines in
// the human view, and whole in -o json.
func TestHugeMessageIsCut(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 100<<10; i++ {
		fmt.Fprintf(&b, "line %d of a cleanup log that an operator put in its status\n", i)
	}
	message := b.String()
	name := stuckTenant(t, message, "example.com/cleanup")
	r := measured(t, true, "explain", name)
	if !strings.Contains(r.Stdout, "more characters)") {
		t.Errorf("the human view does not say it cut the message:\n%s", r.Stdout)
	}
	doc := explainJSON(t, name)
	if len(doc.Holders) != 1 || len(doc.Holders[0].Conditions) != 1 || doc.Holders[0].Conditions[0].Message != message {
		t.Errorf("-o json does not carry the message whole: %d holders", len(doc.Holders))
	}
}

// An object with 500 finalizers: the human views list a screenful and
// count the rest; -o json lists them all.
func TestFiveHundredFinalizersAreCounted(t *testing.T) {
	fins := make([]string, 500)
	for i := range fins {
		fins[i] = fmt.Sprintf("f%03d.example.com/cleanup", i)
	}
	name := stuckTenant(t, "waiting", fins...)
	r := measured(t, true, "explain", name, "--grace=0")
	if !strings.Contains(r.Stdout, "more finalizers") {
		t.Errorf("explain does not count the finalizers past its list:\n%s", r.Stdout)
	}
	doc := explainJSON(t, name)
	listed := sets.New[string]()
	for _, f := range doc.Finalizers {
		listed.Insert(f.Name)
	}
	if listed.Len() != 500 {
		t.Errorf("-o json lists %d finalizers, want 500", listed.Len())
	}
	measured(t, true, "purge", name, "--remove-finalizers=*.example.com/cleanup")
}

// 10,000 Warning events: explain reads them in pages and keeps the
// latest few; its memory does not grow with them.
func TestTenThousandEventsStayBounded(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	// The controller deletes Events with the rest of the content: a
	// policy keeps them.
	keep, err := cluster.StartDenyingWebhook(ctx, "event-guard-"+name, name, "events stay",
		schema.GroupVersionResource{Version: "v1", Resource: "events"}, admissionregv1.Delete)
	plugintest.Must(t, err)
	t.Cleanup(func() { keep.Close(context.Background()) })
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range 10000 {
		g.Go(func() error {
			return cluster.CreateWarningEvent(gctx, name, "ConfigMap", fmt.Sprintf("cm-%d", i), "Flapping", strings.Repeat("noisy ", 20))
		})
	}
	plugintest.Must(t, g.Wait())
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	r := measured(t, true, "explain", name)
	if strings.Count(r.Stdout, "Flapping") > 10 {
		t.Errorf("explain lists more than the latest events:\n%s", r.Stdout)
	}
	doc := explainJSON(t, name)
	if len(doc.Events) == 0 || len(doc.Events) > 10 {
		t.Errorf("-o json: %d events, want the latest few", len(doc.Events))
	}
}

// 5,000 resource types whose every list fails: each is a blocker in -o
// json; the human view names a screenful and counts the rest.
func TestFiveThousandFailingTypesAreCounted(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("b%d.example.com", time.Now().UnixNano()%100000)
	api, err := cluster.StartAggregatedAPIWithBrokenTypes(ctx, group, "Widget", "widgets", 5000)
	plugintest.Must(t, err)
	t.Cleanup(func() { api.Close(context.Background()) })
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	r := measured(t, true, "explain", name)
	if !strings.Contains(r.Stdout, "more blockers") {
		t.Errorf("explain does not count the blockers past its list:\n%s", r.Stdout)
	}
	doc := explainJSON(t, name)
	failed := 0
	for _, b := range doc.Blockers {
		if b.Kind == "ListFailed" {
			failed++
		}
	}
	if failed != 5000 {
		t.Errorf("-o json: %d ListFailed blockers, want 5000", failed)
	}
	measured(t, true, "purge", name)
	measured(t, true, "purge", name, "--dry-run=server")
}
