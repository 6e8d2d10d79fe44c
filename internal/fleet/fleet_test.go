package fleet

import (
	"context"
	"errors"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

func TestContextsMatchGlobsSorted(t *testing.T) {
	cfg := clientcmdapi.Config{Contexts: map[string]*clientcmdapi.Context{
		"prod-eu": {Cluster: "eu"}, "prod-us": {Cluster: "us"}, "stage": {Cluster: "st"}, "kind-dev": {Cluster: "kind"},
	}}
	for _, tc := range []struct {
		patterns []string
		want     []string
	}{
		{nil, []string{"kind-dev", "prod-eu", "prod-us", "stage"}},
		{[]string{"prod-*"}, []string{"prod-eu", "prod-us"}},
		{[]string{"stage", "*-eu"}, []string{"prod-eu", "stage"}},
		{[]string{"nothing"}, nil},
	} {
		got, err := Contexts(cfg, tc.patterns)
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		if err != nil || !reflect.DeepEqual(names, tc.want) {
			t.Errorf("%v: %v, %v; want %v", tc.patterns, names, err, tc.want)
		}
	}
	if got, _ := Contexts(cfg, []string{"stage"}); got[0].Cluster != "st" {
		t.Errorf("cluster %+v", got)
	}
	if _, err := Contexts(cfg, []string{"["}); err == nil {
		t.Error("a bad glob is accepted")
	}
}

// Every cluster is read, in the contexts' order, each with its own
// outcome; one failing stops none.
func TestReadKeepsEveryClustersOutcome(t *testing.T) {
	contexts := []Context{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}
	errs := map[string]error{
		"b": apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "", errors.New("no")),
		"c": errors.New("dial tcp: connection refused"),
		"d": apierrors.NewUnauthorized("who are you"),
	}
	results := Read(context.Background(), contexts, func(_ context.Context, c Context) ([]diagnose.Report, error) {
		if err := errs[c.Name]; err != nil {
			return nil, err
		}
		return []diagnose.Report{{Namespace: diagnose.Namespace{Name: "ns-" + c.Name}}}, nil
	})
	want := []Reach{Reachable, Forbidden, Unreachable, Unauthorized}
	for i, r := range results {
		if r.Name != contexts[i].Name || r.Reach != want[i] {
			t.Errorf("%d: %+v, want %s %s", i, r, contexts[i].Name, want[i])
		}
	}
	if len(results[0].Reports) != 1 || len(Failed(results)) != 3 {
		t.Errorf("results %+v", results)
	}
}
