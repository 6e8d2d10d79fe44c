package mcp

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/consent"
	"github.com/ns-doctor/ns-doctor/internal/kube/kubetest"
)

// newPlan is a plan with an id, as keep makes one.
func newPlan() *plan { return &plan{Plan: consent.Plan{ID: consent.NewID("plan-")}} }

// A plan is good on its own connection only, until it expires, and a
// connection keeps a bounded number.
func TestPlansAreBoundToTheirConnection(t *testing.T) {
	now := time.Unix(0, 0)
	s := newStore(time.Minute, 3, func() time.Time { return now })
	a, b := new(int), new(int)
	p := s.put(a, newPlan())
	if _, err := s.claim(b, p.ID); !errors.Is(err, errUnknownPlan) {
		t.Fatalf("another connection claimed it: %v", err)
	}
	got, err := s.claim(a, p.ID)
	if err != nil || got != p {
		t.Fatalf("claim: %v", err)
	}
	if _, err := s.claim(a, p.ID); !errors.Is(err, errPlanInUse) {
		t.Fatalf("claimed twice at once: %v", err)
	}
	s.release(a, p, false)
	now = now.Add(2 * time.Minute)
	if _, err := s.claim(a, p.ID); !errors.Is(err, errExpiredPlan) && !errors.Is(err, errUnknownPlan) {
		t.Fatalf("expired: %v", err)
	}
	for range 5 {
		s.put(a, newPlan())
	}
	if n := s.count(a); n != 3 {
		t.Fatalf("a connection keeps %d plans, want 3", n)
	}
	now = now.Add(2 * time.Minute)
	if n := s.count(a); n != 0 || len(s.sessions) != 0 {
		t.Fatalf("expired plans kept: %d, %d sessions", n, len(s.sessions))
	}
}

// An answer counts only with the state of the question asked, once.
func TestAnswersBelongToTheirQuestion(t *testing.T) {
	s := newStore(time.Minute, 3, time.Now)
	p := s.put("c", newPlan())
	if err := s.answered(p, ""); err == nil {
		t.Fatal("an answer to no question")
	}
	s.ask(p)
	if err := s.answered(p, "confirm-forged"); err == nil {
		t.Fatal("a forged state")
	}
	state := s.ask(p)
	if err := s.answered(p, state); err != nil {
		t.Fatal(err)
	}
	if err := s.answered(p, state); err == nil {
		t.Fatal("an answer used twice")
	}
}

// Many connections planning and claiming at once (run with -race).
func TestStoreConcurrently(t *testing.T) {
	s := newStore(time.Minute, 4, time.Now)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				p := s.put(i, newPlan())
				if got, err := s.claim(i, p.ID); err == nil {
					s.ask(got)
					s.release(i, got, true)
				}
				_ = s.count(i)
			}
		})
	}
	wg.Wait()
}

// A plan whose would-change set moved after it was made is refused, and
// spent; a namespace changed since, too.
func TestStalePlanIsRefused(t *testing.T) {
	c := stuck()
	cs := session(t, testConfig(c, PurgeWithoutConfirmation), nil, "")
	var plan PlanResult
	call(t, cs, ToolPlan, map[string]any{"namespace": "demo", "escalations": map[string]any{"remove-finalizers": []string{"example.com/*"}}}, &plan)
	held := c.Get(kubetest.ConfigMaps, "demo", "held")
	held.SetFinalizers(append(held.GetFinalizers(), "example.com/more"))
	c.Add(kubetest.ConfigMaps, held)
	res := call(t, cs, ToolPurge, map[string]any{"plan_id": plan.PlanID}, nil)
	if !res.IsError || !strings.Contains(text(res), "has moved since") || !strings.Contains(text(res), "plan again") || c.Namespace("demo") == nil {
		t.Fatalf("%s", text(res))
	}
	if res := call(t, cs, ToolPurge, map[string]any{"plan_id": plan.PlanID}, nil); !strings.Contains(text(res), "unknown plan_id") {
		t.Errorf("a stale plan is not spent: %s", text(res))
	}
	// The namespace itself changed.
	call(t, cs, ToolPlan, map[string]any{"namespace": "demo", "escalations": map[string]any{"remove-finalizers": []string{"example.com/*"}}}, &plan)
	c.SetNamespaceFinalizers("demo", "example.com/ns")
	res = call(t, cs, ToolPurge, map[string]any{"plan_id": plan.PlanID}, nil)
	if !res.IsError || !strings.Contains(text(res), "changed since the plan (resourceVersion") {
		t.Fatalf("%s", text(res))
	}
}
