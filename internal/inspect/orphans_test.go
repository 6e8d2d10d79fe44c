package inspect

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

// Leftovers are objects of namespaces that do not exist: never one of a
// namespace that exists, default and kube-system included.
func TestOrphansNeverListsALiveNamespace(t *testing.T) {
	c := kubetest.New()
	c.Serve(gadgets, "Gadget", kubetest.AllVerbs)
	for _, ns := range []string{"default", "kube-system", "team-a"} {
		c.AddNamespace(ns, 0)
		c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", ns, "cm"))
	}
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "old", "a"))
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "old", "b", "example.com/hold"))
	c.Add(gadgets, kubetest.Object("Gadget", "older", "g"))
	in := New(c.Clients(), Config{})

	obs, err := in.Orphans(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for gvr, items := range obs.Lists {
		for _, item := range items {
			got[item.Namespace+"/"+gvr.Resource]++
		}
	}
	want := map[string]int{"old/configmaps": 2, "older/gadgets": 1}
	if len(got) != len(want) || got["old/configmaps"] != 2 || got["older/gadgets"] != 1 {
		t.Errorf("leftovers %v, want %v", got, want)
	}

	one, err := in.Orphans(context.Background(), "older")
	if err != nil || len(one.Lists) != 1 || len(one.Lists[gadgets]) != 1 {
		t.Errorf("only older: %v, %v", one.Lists, err)
	}
	if _, err := in.Orphans(context.Background(), "team-a"); !errors.Is(err, ErrNamespaceExists) {
		t.Errorf("a live namespace: %v, want ErrNamespaceExists", err)
	}
}

// A type that cannot be listed is named, not silently skipped.
func TestOrphansNamesWhatItCouldNotList(t *testing.T) {
	c := kubetest.New()
	c.Serve(gadgets, "Gadget", kubetest.AllVerbs)
	c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "old", "a"))
	c.Fail = func(verb string, gvr schema.GroupVersionResource, _, _ string) error {
		if verb == "list" && gvr == gadgets {
			return apierrors.NewServiceUnavailable("gadget backend down")
		}
		return nil
	}
	obs, err := New(c.Clients(), Config{}).Orphans(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Lists[kubetest.ConfigMaps]) != 1 {
		t.Errorf("leftovers %v", obs.Lists)
	}
	if len(obs.Unchecked) != 1 || obs.Unchecked[0].Name != "gadgets.example.com" {
		t.Errorf("unchecked %q", obs.Unchecked)
	}
}
