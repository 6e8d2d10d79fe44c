package purge

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

// A server dry run on 1.37 puts each object a failed list names as
// unreadable to the unsafe DELETE's dry run: accepted proves it, a 409 says
// it is decodable now (one warning each); 1.36 is never sent it, nor is a
// real run, a plan, or a list that failed for another reason.
func TestUnreadableProvenOnlyByAServerDryRunOn137(t *testing.T) {
	unreadable := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Reason: metav1.StatusReasonStoreReadError, Message: "failed to read one or more configmaps from the storage",
		Details: &metav1.StatusDetails{Kind: "configmaps", Causes: []metav1.StatusCause{
			{Type: metav1.CauseTypeUnexpectedServerResponse, Field: "/registry/configmaps/ns/broken"},
			{Type: metav1.CauseTypeUnexpectedServerResponse, Field: "/registry/configmaps/ns/fixed"}}}}}
	for _, tc := range []struct {
		name     string
		version  string
		mode     DryRun
		listErr  error
		proven   bool
		requests int
	}{
		{"1.37 server dry run", "v1.37.2", DryRunServer, unreadable, true, 2},
		{"1.36 server dry run", "v1.36.3", DryRunServer, unreadable, false, 0},
		{"unknown version", "", DryRunServer, unreadable, false, 0},
		{"1.37 plan", "v1.37.2", DryRunClient, unreadable, false, 0},
		{"1.37, another failure", "v1.37.2", DryRunServer, apierrors.NewInternalError(errors.New("etcdserver: leader changed")), false, 0},
	} {
		c := stuck()
		c.Add(kubetest.ConfigMaps, kubetest.Object("ConfigMap", "ns", "broken"))
		c.Fail = func(verb string, gvr schema.GroupVersionResource, ns, name string) error {
			switch {
			case verb == "list" && gvr == kubetest.ConfigMaps:
				return tc.listErr
			case verb == "delete" && name == "fixed":
				return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, name, errors.New("unsafe deletion is not allowed because the object is decodable from storage"))
			}
			return nil
		}
		p := purger(c, Options{DryRun: tc.mode})
		p.Opts.OrderedDeletion, _ = compat.OrderingFor("auto", tc.version)
		r, _ := p.Run(context.Background())
		if r == nil {
			t.Fatalf("%s: no report", tc.name)
		}
		proven := slices.ContainsFunc(r.Warnings, func(w Warning) bool {
			return w.Kind == WarnUnreadableProven && w.Name == "broken" && w.Request == "/api/v1/namespaces/ns/configmaps/broken"
		})
		decodable := slices.ContainsFunc(r.Warnings, func(w Warning) bool { return w.Kind == WarnUnreadableDecodable && w.Name == "fixed" })
		if proven != tc.proven || decodable != tc.proven {
			t.Errorf("%s: proven %v, decodable %v; warnings %+v", tc.name, proven, decodable, r.Warnings)
		}
		if n := len(c.RequestsMatching("delete configmaps ns/broken (dry run)")) + len(c.RequestsMatching("delete configmaps ns/fixed (dry run)")); n != tc.requests {
			t.Errorf("%s: %d unsafe dry runs sent, want %d: %v", tc.name, n, tc.requests, c.Requests)
		}
	}
}
