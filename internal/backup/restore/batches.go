package restore

import (
	"context"
	"sync"

	"github.com/ns-doctor/ns-doctor/internal/backup"
)

// applyWorkers bounds the applies sent at once: kube-apiserver's default
// max-mutating-requests-inflight is 200, and client-go's own limiter is
// ns-doctor's (kube.Clients) either way.
const applyWorkers = 16

// batches cuts a plan's steps, in its order, into runs that may be applied
// together: steps of one stage of the restore order, none the owner of
// another in the run. What comes before a run is applied before it starts,
// so the order and owners-first hold as if one after another.
func batches(steps []backup.Step) [][]backup.Step {
	var out [][]backup.Step
	var run []backup.Step
	inRun := map[string]bool{}
	for _, s := range steps {
		if len(run) > 0 && (s.Stage() != run[0].Stage() || ownedWithin(s, inRun)) {
			out = append(out, run)
			run, inRun = nil, map[string]bool{}
		}
		run = append(run, s)
		if s.UID != "" {
			inRun[s.UID] = true
		}
	}
	if len(run) > 0 {
		out = append(out, run)
	}
	return out
}

func ownedWithin(s backup.Step, uids map[string]bool) bool {
	refs := s.Owners
	if s.Object != nil {
		refs = append(refs, s.Object.GetOwnerReferences()...)
	}
	for _, r := range refs {
		if uids[string(r.UID)] {
			return true
		}
	}
	return false
}

// applyBatch applies one run's steps at once, applyWorkers at a time, and
// returns their outcomes in the run's order. The default ServiceAccount is
// waited for first when a step of the run needs it.
func (a *applier) applyBatch(ctx context.Context, run []backup.Step) []Object {
	out := make([]Object, len(run))
	if err := a.accountFor(ctx, run); err != nil {
		for i, s := range run {
			if out[i] = objectOf(s); s.Verdict == backup.Restore && needsAccount(s) {
				out[i].Status, out[i].Why = Failed, err.Error()
			} else {
				out[i] = a.one(ctx, s)
			}
		}
		return out
	}
	sem := make(chan struct{}, applyWorkers)
	var wg sync.WaitGroup
	for i, s := range run {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i] = a.one(ctx, s)
		})
	}
	wg.Wait()
	return out
}

// accountFor waits, once per restore, for the default ServiceAccount when
// a step of run needs it.
func (a *applier) accountFor(ctx context.Context, run []backup.Step) error {
	if a.accountReady {
		return nil
	}
	for _, s := range run {
		if s.Verdict == backup.Restore && needsAccount(s) {
			if err := a.waitForDefaultAccount(ctx); err != nil {
				return err
			}
			a.accountReady = true
			return nil
		}
	}
	return nil
}
