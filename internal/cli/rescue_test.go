package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

// Each refusal of rescue and protect is one line with its documented
// code, from what the command line or a read shows.
func TestRescueAndProtectRefusals(t *testing.T) {
	c := kubetest.New()
	c.AddNamespace("active", 0)
	c.AddNamespace("going", time.Minute)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"rescue"}, ExitUsage, "takes exactly 1 argument (the namespace NAME)"},
		{[]string{"rescue", "a", "b"}, ExitUsage, "takes exactly 1 argument"},
		{[]string{"rescue", "Bad_Name", "--yes"}, ExitUsage, "is not a valid namespace name"},
		{[]string{"rescue", "going", "-o", "wide", "--yes"}, ExitUsage, "unknown output format"},
		{[]string{"rescue", "active", "--yes"}, ExitUsage, "use 'kubectl ns-doctor protect active'"},
		{[]string{"rescue", "missing", "--yes"}, ExitNotFound, `namespace "missing" not found`},
		{[]string{"rescue", "going", "--yes"}, ExitError, "no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy"},
		{[]string{"protect", "active", "--yes"}, ExitError, "no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy"},
		{[]string{"protect"}, ExitUsage, "takes exactly 1 argument"},
		{[]string{"rescue", "going", "--release", "--restore", "--yes"}, ExitUsage, "--release and --restore conflict"},
		{[]string{"rescue", "going", "--restore", "--wait=0s", "--yes"}, ExitUsage, "--wait must be positive"},
		{[]string{"rescue", "going", "--restore", "--yes"}, ExitUsage, "give the folder rescue saved it to with --backup-dir"},
	} {
		code, _, errOut := runFake(t, c, tc.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != tc.code || len(lines) != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d (want %d), stderr %q, want one line with %q", tc.args, code, tc.code, errOut, tc.want)
		}
	}
}
