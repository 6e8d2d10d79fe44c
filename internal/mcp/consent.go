package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ns-doctor/ns-doctor/internal/consent"
)

// Every tool that changes a cluster gets the person's consent one way,
// actOn, as one confirmation rule applies to every destructive tool: a
// plan tool keeps a plan (keep), and the acting tool claims it, plans
// again and compares fingerprints, asks the person through the client (an
// MCP elicitation with the command's own confirmation), checks the answer,
// plans again and acts. What differs between commands is their planned.

// planned is one command's plan, as the consent path handles it: what
// only the command knows. A plan is checked for access once, when the
// plan tool makes it; planning again (again) checks nothing, so the acting
// call sends no access review unless the plan moved, which refuses it.
type planned interface {
	// kind names its tools, and its change in the person's words.
	kind() planKind
	// namespace is the namespace it is bound to.
	namespace() string
	// doc is the plan's document, which its fingerprint hashes.
	doc() any
	// again plans anew, as the plan was made, without the access check;
	// a namespace no longer the one planned on is a moved error.
	again(ctx context.Context, s *server) (planned, error)
	// now says the plan in a few words, for the error that says it moved.
	now() string
	// confirmation is what the person is asked, in the command's words.
	confirmation(c Cluster) consent.Request
	// act changes the cluster as the command does after its confirmation;
	// who says who agreed.
	act(ctx context.Context, s *server, id, who string, detail Detail) (*sdk.CallToolResult, any, error)
}

// planKind names a command's tools: the one that plans, the one that
// acts, and its change as the refusals say it.
type planKind struct{ plan, act, change string }

// keep stores work for the connection: a plan with an id, the
// fingerprint of its document, and an expiry.
func (s *server) keep(session any, c Cluster, work planned) (*plan, error) {
	cp, err := consent.NewPlan(work.doc())
	if err != nil {
		return nil, err
	}
	return s.plans.put(session, &plan{Plan: cp, cluster: c, work: work}), nil
}

// confirmKey names the one question an acting tool asks.
const confirmKey = "confirm"

// The consent recorded in an acting tool's result.
const (
	consentNobody = "nobody was asked: the server runs with --allow-purge=without-confirmation"
	consentPerson = "the person confirmed in the client (MCP elicitation), typing the namespace's name"
)

// actOn is the acting tool k's call on plan id: the one consent path.
func actOn[Out any](ctx context.Context, s *server, req *sdk.CallToolRequest, k planKind, id string, d Detail) (*sdk.CallToolResult, Out, error) {
	var out Out
	detail, err := parseDetail(string(d), DetailNormal)
	if err != nil {
		return nil, out, err
	}
	if id == "" {
		return nil, out, fmt.Errorf("plan_id is required: %s returns one", k.plan)
	}
	p, err := s.plans.claim(req.Session, id)
	if err != nil {
		return nil, out, fmt.Errorf("%w: plan again with %s", err, k.plan)
	}
	spent := false
	defer func() { s.plans.release(req.Session, p, spent) }()
	if mine := p.work.kind(); mine != k {
		return nil, out, fmt.Errorf("this plan_id is %s's, not %s's: nothing was changed; %s acts on it", mine.plan, k.plan, mine.act)
	}
	act := func(fresh planned, who string) (*sdk.CallToolResult, Out, error) {
		res, o, err := fresh.act(ctx, s, p.ID, who, detail)
		out, _ = o.(Out)
		return res, out, err
	}
	if req.Params.InputResponses == nil {
		fresh, err := s.stillHolds(ctx, p)
		if err != nil {
			spent = isMoved(err)
			return nil, out, err
		}
		if s.cfg.Purge == PurgeWithoutConfirmation {
			spent = true
			return act(fresh, consentNobody)
		}
		if !canElicit(req) {
			return nil, out, fmt.Errorf("this client cannot ask the person (it offers no MCP elicitation), and %s acts only with their consent: nothing was changed; give them %s's command to run, or run the server with --allow-purge=without-confirmation", k.change, k.plan)
		}
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{confirmKey: question(p.work.confirmation(p.cluster), k)}, RequestState: s.plans.ask(p)}, out, nil
	}
	// The person's answer: whatever it is, the plan is spent.
	spent = true
	if err := s.plans.answered(p, req.Params.RequestState); err != nil {
		spent = false
		return nil, out, err
	}
	if err := answerOf(req.Params.InputResponses[confirmKey], k.change, p.work.namespace(), p.work.confirmation(p.cluster)); err != nil {
		return nil, out, err
	}
	// Time passed while the person read: look again right before acting.
	fresh, err := s.stillHolds(ctx, p)
	if err != nil {
		return nil, out, err
	}
	return act(fresh, consentPerson)
}

// stillHolds plans p again, as it was made (its access check not asked
// again), and refuses a plan whose document moved: the fresh plan, which
// says the cluster as it is now, is what is acted on.
func (s *server) stillHolds(ctx context.Context, p *plan) (planned, error) {
	fresh, err := p.work.again(ctx, s)
	if err != nil {
		return nil, err
	}
	moved, err := p.Moved(fresh.doc())
	if err != nil {
		return nil, err
	}
	if moved {
		k := fresh.kind()
		return nil, movedf("the %s plan of namespace %q has moved since (now %s): nothing was changed; plan again with %s and show the person the new plan",
			k.change, fresh.namespace(), fresh.now(), k.plan)
	}
	return fresh, nil
}

// canElicit tells whether the client can ask its person a question (a
// form: the only kind the acting tools ask).
func canElicit(req *sdk.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// question is the elicitation: the confirmation's words, and one field,
// what the person types to go on.
func question(r consent.Request, k planKind) *sdk.ElicitParams {
	return &sdk.ElicitParams{
		Message: r.Message(),
		RequestedSchema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"namespace": {Type: "string", Title: r.Question, Description: "the namespace's name, as a person types it at " + k.change + "'s confirmation on a terminal; anything else, declining or cancelling changes nothing"},
			},
			Required: []string{"namespace"},
		},
	}
}

// answerOf checks the person's answer to the confirmation r of change on
// namespace: accepted, with what r wants typed.
func answerOf(answer sdk.InputResponse, change, namespace string, r consent.Request) error {
	res, ok := answer.(*sdk.ElicitResult)
	switch {
	case !ok || res == nil:
		return errors.New("no answer to the confirmation came back: nothing was changed")
	case res.Action == "decline":
		return fmt.Errorf("the person declined the %s of namespace %q: nothing was changed (do not %s unless they ask again)", change, namespace, change)
	case res.Action != "accept":
		return fmt.Errorf("the person cancelled the confirmation of the %s of namespace %q: nothing was changed", change, namespace)
	}
	if typed, _ := res.Content["namespace"].(string); !r.Accepts(typed) {
		return fmt.Errorf("not confirmed: the name typed is not the namespace's, %q; nothing was changed", r.Want)
	}
	return nil
}

// moved is a plan that no longer holds: nothing was changed, and the plan
// is spent.
type moved struct{ msg string }

func (m *moved) Error() string { return m.msg }

func movedf(format string, args ...any) error { return &moved{msg: fmt.Sprintf(format, args...)} }

func isMoved(err error) bool {
	var m *moved
	return errors.As(err, &m)
}
