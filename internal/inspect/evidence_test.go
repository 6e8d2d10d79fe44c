package inspect

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

// The holders' status reads stay a constant few however many types hold
// the namespace: one object per type first, then a second, so a namespace
// with 150 held types costs 6 GETs, not 450.
func TestHolderReadsDoNotGrowWithTheNamespace(t *testing.T) {
	for _, tc := range []struct {
		types, perType int
		want           []string
	}{
		{types: 1, perType: 5, want: []string{"t0/o0", "t0/o1", "t0/o2"}},
		{types: 2, perType: 5, want: []string{"t0/o0", "t0/o1", "t0/o2", "t1/o0", "t1/o1", "t1/o2"}},
		{types: 4, perType: 2, want: []string{"t0/o0", "t0/o1", "t1/o0", "t1/o1", "t2/o0", "t3/o0"}},
		{types: 150, perType: 3, want: []string{"t0/o0", "t1/o0", "t2/o0", "t3/o0", "t4/o0", "t5/o0"}},
	} {
		t.Run(fmt.Sprintf("%d types of %d", tc.types, tc.perType), func(t *testing.T) {
			c := kubetest.New()
			ns := c.AddNamespace("demo", time.Minute)
			for k := range tc.types {
				gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: fmt.Sprintf("t%03d", k)}
				c.Serve(gvr, fmt.Sprintf("T%d", k), kubetest.AllVerbs)
				for j := range tc.perType {
					c.Add(gvr, kubetest.Object(fmt.Sprintf("T%d", k), "demo", fmt.Sprintf("o%d", j), "example.com/hold"))
				}
			}
			in := New(c.Clients(), Config{})
			obs, err := in.Observe(context.Background(), ns, Options{})
			if err != nil {
				t.Fatal(err)
			}
			before := len(c.RequestsMatching("full get"))
			in.Evidence(context.Background(), ns, obs.Snapshot)
			var got []string
			for _, r := range c.RequestsMatching("full get")[before:] {
				var k int
				var name string
				if _, err := fmt.Sscanf(r, "full get t%d demo/%s", &k, &name); err != nil {
					t.Fatalf("request %q: %v", r, err)
				}
				got = append(got, fmt.Sprintf("t%d/%s", k, name))
			}
			if !sameSet(got, tc.want) {
				t.Errorf("status reads %v, want %v", got, tc.want)
			}
		})
	}
}

// sameSet ignores the order the concurrent reads were sent in.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Helm's and Argo CD's annotations name what re-creates a holder; an
// object without them names nothing.
func TestManagedByReadsHelmAndArgoCD(t *testing.T) {
	cases := []struct {
		annotations map[string]string
		want        *diagnose.Manager
	}{
		{map[string]string{"meta.helm.sh/release-name": "web", "meta.helm.sh/release-namespace": "team-a"}, &diagnose.Manager{Tool: diagnose.ManagerHelm, Name: "team-a/web"}},
		{map[string]string{"meta.helm.sh/release-name": "web"}, &diagnose.Manager{Tool: diagnose.ManagerHelm, Name: "web"}},
		{map[string]string{"argocd.argoproj.io/tracking-id": "guestbook:apps/Deployment:default/web"}, &diagnose.Manager{Tool: diagnose.ManagerArgoCD, Name: "guestbook"}},
		{map[string]string{"example.com/note": "x"}, nil},
		{nil, nil},
	}
	for _, c := range cases {
		if got := managedBy(c.annotations); !reflect.DeepEqual(got, c.want) {
			t.Errorf("managedBy(%v) = %+v, want %+v", c.annotations, got, c.want)
		}
	}
}
