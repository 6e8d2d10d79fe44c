package purge

import (
	"reflect"
	"slices"
	"sync"
	"time"
)

// ledger is the report as a run fills it, safe for concurrent use: a
// pass's requests are answered on its workers, the API server's warnings
// on client-go's goroutines, and a shared discovery's failures on any
// run's. Every change to the report goes through it.
type ledger struct {
	mu     sync.Mutex
	report *Report
	now    func() time.Time
	// pass are this pass's refused requests.
	pass []Failure
}

func newLedger(r *Report, now func() time.Time) *ledger { return &ledger{report: r, now: now} }

// update changes the report under the ledger's lock.
func (l *ledger) update(fn func(r *Report)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fn(l.report)
}

// end records how the run ended (its outcome, and why it stopped).
func (l *ledger) end(o Outcome, stop *Stop) {
	l.update(func(r *Report) { r.Outcome, r.Stop = o, stop })
}

// changed records a change made to the cluster.
func (l *ledger) changed(c Change) {
	l.update(func(r *Report) { r.Changes = append(r.Changes, c) })
}

// step records a request the passes do not (an escalation's own).
func (l *ledger) step(s Step) {
	l.update(func(r *Report) { r.Steps = append(r.Steps, s) })
}

// warn records a warning once; it tells whether it was new.
func (l *ledger) warn(w Warning) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.ContainsFunc(l.report.Warnings, func(x Warning) bool { return reflect.DeepEqual(x, w) }) {
		return false
	}
	l.report.Warnings = append(l.report.Warnings, w)
	return true
}

// fail records a refused request; the same answer to the same request is
// one failure, counted, with when it came first and last.
func (l *ledger) fail(f Failure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.pass = append(l.pass, f)
	for i := range l.report.Failures {
		x := &l.report.Failures[i]
		if sameRequest(*x, f) {
			x.Count, x.Last = x.Count+1, now
			return
		}
	}
	f.Count, f.First, f.Last = 1, now, now
	l.report.Failures = append(l.report.Failures, f)
}

// startPass forgets the last pass's refusals.
func (l *ledger) startPass() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pass = nil
}

// passFailures are this pass's refused requests.
func (l *ledger) passFailures() []Failure {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.pass)
}

// thisPass are the report's failures this pass met, with their counts so
// far.
func (l *ledger) thisPass() []Failure {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Failure
	for _, f := range l.report.Failures {
		if slices.ContainsFunc(l.pass, func(x Failure) bool { return sameRequest(x, f) }) {
			out = append(out, f)
		}
	}
	return out
}

func sameRequest(a, b Failure) bool {
	return a.Verb == b.Verb && a.Resource == b.Resource && a.Name == b.Name && a.Error == b.Error
}
