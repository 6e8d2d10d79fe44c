package diagnose_test

import (
	"errors"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// A list that meets objects the API server cannot read from storage is a
// ListFailed that says so: with the gate on, the server names them and the
// step is the unsafe DELETE of each; with it off, turning it on.
func TestCorruptObjects(t *testing.T) {
	storeRead := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Reason: metav1.StatusReasonStoreReadError, Message: "failed to read one or more widgets.example.com from the storage",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Type: metav1.CauseTypeUnexpectedServerResponse, Field: "/registry/example.com/widgets/demo/w1", Message: "object not decodable"},
			{Type: metav1.CauseTypeUnexpectedServerResponse, Field: "/registry/example.com/widgets/demo/w2", Message: "data from the storage is not transformable"},
			{Type: metav1.CauseTypeTooMany, Message: "too many errors, the list is truncated"},
		}}}}
	for _, tc := range []struct {
		name    string
		err     error
		actions []Action
	}{
		{"gate on", storeRead, []Action{
			{Kind: ActionUnsafeDelete, Namespace: "demo", Target: "/apis/example.com/v1/namespaces/demo/widgets/w1"},
			{Kind: ActionUnsafeDelete, Namespace: "demo", Target: "/apis/example.com/v1/namespaces/demo/widgets/w2"}}},
		{"gate off, the key named", apierrors.NewInternalError(errors.New(`unable to transform key "/registry/example.com/widgets/demo/w1": no matching key`)),
			[]Action{{Kind: ActionEnableUnsafeDelete, Namespace: "demo", Target: "/apis/example.com/v1/namespaces/demo/widgets"},
				{Kind: ActionUnsafeDelete, Namespace: "demo", Target: "/apis/example.com/v1/namespaces/demo/widgets/w1"},
				{Kind: ActionEtcdDelete, Namespace: "demo", Target: "/registry/example.com/widgets/demo/w1"}}},
		{"gate off", apierrors.NewInternalError(errors.New(`unable to transform or decode: illegal base64 data at input byte 3`)),
			[]Action{{Kind: ActionEnableUnsafeDelete, Namespace: "demo", Target: "/apis/example.com/v1/namespaces/demo/widgets"}}},
		{"a key of another namespace", apierrors.NewInternalError(errors.New(`unable to transform key "/registry/example.com/widgets/other/w1": no matching key`)),
			[]Action{{Kind: ActionEnableUnsafeDelete, Namespace: "demo", Target: "/apis/example.com/v1/namespaces/demo/widgets"}}},
		{"another 500", apierrors.NewInternalError(errors.New("etcdserver: request timed out")),
			[]Action{{Kind: ActionGetResource, Namespace: "demo", Target: "widgets.example.com"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := observation()
			obs.Snapshot.ListErrs[widgets] = tc.err
			b := blockerOf(t, Diagnose(obs), BlockerListFailed)
			if len(b.Actions) != len(tc.actions) {
				t.Fatalf("actions %+v", b.Actions)
			}
			for i := range tc.actions {
				if b.Actions[i] != tc.actions[i] {
					t.Errorf("action %d: %+v, want %+v", i, b.Actions[i], tc.actions[i])
				}
			}
			if c := b.Facts.(*ListFacts).Corrupt; (c != nil) != (tc.name != "another 500") {
				t.Errorf("corrupt %+v", c)
			}
		})
	}
	obs := observation()
	obs.Snapshot.ListErrs[configMaps] = storeRead
	if c := blockerOf(t, Diagnose(obs), BlockerListFailed).Facts.(*ListFacts).Corrupt; c.Path != "/api/v1/namespaces/demo/configmaps" {
		t.Errorf("core path %q", c.Path)
	}
}
