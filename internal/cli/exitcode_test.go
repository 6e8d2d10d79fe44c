package cli

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A user refused its namespace is told why it may have lost it (its
// RoleBinding went with the namespace) and what a cluster admin runs, for
// a user and for a ServiceAccount alike; on one line, exit 1.
func TestLostAccessSaysWhatWorks(t *testing.T) {
	for user, want := range map[string]string{
		"tenant-a":                          "kubectl create clusterrolebinding ns-doctor-explain-tenant-a --clusterrole=ns-doctor-explain --user=tenant-a (docs/rbac.md)",
		"system:serviceaccount:ci:deployer": "kubectl create clusterrolebinding ns-doctor-explain-system-serviceaccount-ci-deployer --clusterrole=ns-doctor-explain --serviceaccount=ci:deployer",
	} {
		err := lostAccess(apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "team-a",
			errors.New(`User "`+user+`" cannot get resource "namespaces" in API group "" in the namespace "team-a"`)), "team-a")
		line := describe(err, "https://k8s.example")
		if exitCode(err) != ExitError || strings.Contains(line, "\n") || !strings.Contains(line, "is forbidden") ||
			!strings.Contains(line, "a cluster admin can run kubectl ns-doctor explain team-a") || !strings.Contains(line, want) {
			t.Errorf("%s: exit %d: %s", user, exitCode(err), line)
		}
	}
}
