package mcp

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/consent"
)

// A plan is what a plan tool planned, kept for the acting tool: its id
// and the fingerprint of its document (consent.Plan), the cluster, and
// the command's own plan (work), which only the consent path reads.
type plan struct {
	consent.Plan
	cluster Cluster
	work    planned
	expires time.Time
	// asking is the state of the confirmation asked of the human for this
	// plan, echoed by the client with the answer; empty when none is.
	asking string
	// acting: an acting tool's call works on it now.
	acting bool
}

// store keeps each connection's plans: a plan_id is good only on the
// connection (MCP session) that made it, until it expires, and once. Each
// connection keeps at most perSession plans (the oldest go first), and
// connections whose plans all expired are forgotten.
type store struct {
	mu         sync.Mutex
	ttl        time.Duration
	perSession int
	now        func() time.Time
	sessions   map[any][]*plan
}

func newStore(ttl time.Duration, perSession int, now func() time.Time) *store {
	return &store{ttl: ttl, perSession: perSession, now: now, sessions: map[any][]*plan{}}
}

// Errors of a plan_id, each the start of a sentence the agent acts on
// (the acting tool names its plan tool).
var (
	errUnknownPlan = errors.New("unknown plan_id on this connection (a plan is good only on the connection that made it, and once)")
	errExpiredPlan = errors.New("the plan has expired")
	errPlanInUse   = errors.New("this plan is already being acted on by another call")
)

// put keeps p for session, giving it its expiry.
func (s *store) put(session any, p *plan) *plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	p.expires = s.now().Add(s.ttl)
	plans := append(s.sessions[session], p)
	for len(plans) > s.perSession {
		i := slices.IndexFunc(plans, func(p *plan) bool { return !p.acting })
		if i < 0 {
			break
		}
		plans = slices.Delete(plans, i, i+1)
	}
	s.sessions[session] = plans
	return p
}

// claim finds session's plan id and marks it as acted on, so no other call
// acts on it meanwhile; release ends that.
func (s *store) claim(session any, id string) (*plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.sessions[session] {
		if p.ID != id {
			continue
		}
		switch {
		case p.acting:
			return nil, errPlanInUse
		case !s.now().Before(p.expires):
			s.remove(session, id)
			return nil, errExpiredPlan
		}
		p.acting = true
		return p, nil
	}
	return nil, errUnknownPlan
}

// release ends a claim; done: the plan was used (acted on, or it moved),
// and is forgotten.
func (s *store) release(session any, p *plan, done bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.acting = false
	if done {
		s.remove(session, p.ID)
	}
}

// ask records that the human is asked about p; the answer must come with
// the state returned.
func (s *store) ask(p *plan) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.asking = consent.NewID("confirm-")
	return p.asking
}

// answered checks the state echoed with an answer against the question
// asked about p, once.
func (s *store) answered(p *plan, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	asked := p.asking
	p.asking = ""
	if asked == "" || state != asked {
		return fmt.Errorf("this answer does not belong to a confirmation asked about this plan: nothing was changed; call the tool again with the plan_id")
	}
	return nil
}

// count is how many plans session keeps (tests).
func (s *store) count(session any) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	return len(s.sessions[session])
}

// remove forgets one plan; the caller holds the lock.
func (s *store) remove(session any, id string) {
	plans := slices.DeleteFunc(s.sessions[session], func(p *plan) bool { return p.ID == id })
	if len(plans) == 0 {
		delete(s.sessions, session)
		return
	}
	s.sessions[session] = plans
}

// sweep forgets expired plans, and connections left with none; the caller
// holds the lock.
func (s *store) sweep() {
	now := s.now()
	for session, plans := range s.sessions {
		plans = slices.DeleteFunc(plans, func(p *plan) bool { return !p.acting && !now.Before(p.expires) })
		if len(plans) == 0 {
			delete(s.sessions, session)
		} else {
			s.sessions[session] = plans
		}
	}
}
