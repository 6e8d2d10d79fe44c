package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// explained is explain's answer on one namespace, human and JSON.
type explained struct {
	human  string
	report printer.DiagnosisDocument
	code   int
}

// explain runs explain with --grace=0s unless the test sets --grace:
// tests look right after the controller acted, well within the default.
func explain(t *testing.T, kubeconfig, name string, extra ...string) explained {
	t.Helper()
	if !strings.Contains(strings.Join(extra, " "), "--grace") {
		extra = append(extra, "--grace=0s")
	}
	h := plugin.Kubectl(t, kubeconfig, append([]string{"ns-doctor", "explain", name}, extra...)...)
	j := plugin.Kubectl(t, kubeconfig, append([]string{"ns-doctor", "explain", name, "-o", "json"}, extra...)...)
	if h.Code != j.Code {
		t.Fatalf("human and JSON exit codes differ: %d vs %d", h.Code, j.Code)
	}
	var r printer.DiagnosisDocument
	if err := json.Unmarshal([]byte(j.Stdout), &r); err != nil {
		t.Fatalf("explain -o json: %v\nstdout %q\nstderr %q", err, j.Stdout, j.Stderr)
	}
	return explained{human: h.Stdout, report: r, code: h.Code}
}

// blocker asserts a blocker of kind whose evidence and next step contain
// the given texts, in the JSON and in the human output alike.
func (e explained) blocker(t *testing.T, kind diagnose.BlockerKind, evidence, next string) printer.BlockerDocument {
	t.Helper()
	for _, b := range e.report.Blockers {
		if b.Kind != kind {
			continue
		}
		if !strings.Contains(strings.Join(b.Evidence, "\n"), evidence) || !strings.Contains(b.NextStep, next) {
			continue
		}
		if !strings.Contains(e.human, string(kind)) || !strings.Contains(e.human, b.NextStep) {
			t.Errorf("human output lacks blocker %s or its next step %q:\n%s", kind, b.NextStep, e.human)
		}
		return b
	}
	t.Fatalf("no blocker %s with evidence %q and next step %q; blockers: %+v\n%s", kind, evidence, next, e.report.Blockers, e.human)
	return printer.BlockerDocument{}
}

// hasAction tells whether b's next steps include want, typed: its kind,
// and each of its other fields that want sets.
func hasAction(b printer.BlockerDocument, want diagnose.Action) bool {
	for _, a := range b.Actions {
		if a.Kind == want.Kind && (want.Namespace == "" || a.Namespace == want.Namespace) && (want.Flag == "" || a.Flag == want.Flag) &&
			(want.Value == "" || a.Value == want.Value) && (want.Target == "" || a.Target == want.Target) && (want.Of == "" || a.Of == want.Of) {
			return true
		}
	}
	return false
}

// agrees asserts ns-doctor's computed conditions equal the controller's.
func (e explained) agrees(t *testing.T) {
	t.Helper()
	for _, c := range e.report.Conditions {
		if !c.Agree {
			t.Errorf("condition %s: controller %+v, ns-doctor %+v", c.Type, c.Controller, c.Computed)
		}
	}
}

// waitCondition waits until the controller has set condition t to status.
func waitCondition(t *testing.T, name string, ct v1.NamespaceConditionType, status v1.ConditionStatus) *v1.Namespace {
	t.Helper()
	return waitConditionSaying(t, name, ct, status, "")
}

// waitConditionSaying waits until the controller has set condition t to
// status with a message that says said: a pass made once what it read
// earlier is gone.
func waitConditionSaying(t *testing.T, name string, ct v1.NamespaceConditionType, status v1.ConditionStatus, said string) *v1.Namespace {
	t.Helper()
	var ns *v1.Namespace
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if ns, err = cluster.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, c := range ns.Status.Conditions {
			if c.Type == ct && c.Status == status && strings.Contains(c.Message, said) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s=%s saying %q on %s: %v (status %+v)", ct, status, said, name, err, ns.Status)
	}
	return ns
}

// withoutController stops the namespace controller for a test; restart
// starts it again, once, and the test's end does if the test did not.
func withoutController(t *testing.T) (restart func()) {
	t.Helper()
	return plugintest.Quiet(t, cp, "namespace-controller")
}
