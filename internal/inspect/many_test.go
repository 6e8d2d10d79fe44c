package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

// manyStuck is a cluster of n terminating namespaces, each holding three
// ConfigMaps held by a finalizer, five plain ones, a held widget and a
// Warning event, and one Active namespace holding the same.
func manyStuck(n int) (*kubetest.Cluster, []v1.Namespace, []runtime.Object) {
	c := kubetest.New()
	c.Serve(gadgets, "Gadget", kubetest.AllVerbs)
	var nss []v1.Namespace
	var events []runtime.Object
	for k := range n + 1 {
		name := fmt.Sprintf("team-%03d", k)
		deleted := time.Hour
		if k == n {
			name, deleted = "active", 0
		}
		ns := c.AddNamespace(name, deleted)
		if k < n {
			nss = append(nss, *ns)
		}
		for j := range 3 {
			c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", name, fmt.Sprintf("held-%d", j), "example.com/gone"))
		}
		for j := range 5 {
			c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", name, fmt.Sprintf("plain-%d", j)))
		}
		c.Add(gadgets, kubetest.Object("Gadget", name, "g", "example.com/gadget"))
		events = append(events, &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e-" + name, Namespace: name}, Type: v1.EventTypeWarning,
			Reason: "FailedDelete", Message: "cannot delete " + name, InvolvedObject: v1.ObjectReference{Kind: "Gadget", Name: "g"},
			LastTimestamp: metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))})
	}
	return c, nss, events
}

// Over many namespaces, explain's census keeps what each namespace's own
// sweep would keep, and the Warning events: the diagnoses are those each
// namespace gets alone, and nothing is listed per namespace.
func TestExplainAllReadsEachTypeOnce(t *testing.T) {
	const n = 12
	c, nss, events := manyStuck(n)
	in := New(c.Clients(events...), Config{Compact: true})
	reports, err := in.ExplainAll(context.Background(), nss, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range c.Requests {
		verb, rest, _ := strings.Cut(req, " ")
		if verb == "list" && strings.Contains(rest, " team-") {
			t.Errorf("%s: a list in one namespace, want one across the cluster per type", req)
		}
	}
	if got := len(c.RequestsMatching("list configmaps")); got != 1 {
		t.Errorf("configmaps listed %d times, want once across the cluster", got)
	}
	alone, _, _ := manyStuck(n)
	for k, r := range reports {
		one, err := New(alone.Clients(events...), Config{Compact: true}).Explain(context.Background(), &nss[k], Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.ObservedAt, one.ObservedAt = time.Time{}, time.Time{}
		if got, want := asJSON(t, r), asJSON(t, one); got != want {
			t.Errorf("%s: the census's diagnosis differs from its own:\n%s\nalone:\n%s", nss[k].Name, got, want)
		}
		if r.Verdict.State != diagnose.StateStuck || len(r.Events) != 1 || r.Remaining() != 9 {
			t.Errorf("%s: verdict %s, %d events, %d remaining; want stuck, its event, 9 objects", nss[k].Name, r.Verdict.State, len(r.Events), r.Remaining())
		}
	}
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
