package watch

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// Bounds on what one namespace exports: the series stay few whatever the
// cluster says (a blocker naming 500 finalizers is one series, its subject
// cut).
const (
	maxBlockerSeries = 20
	maxSubject       = 120
)

// state is the last diagnosis of each namespace, as the metrics export it
// and as far as a change is judged.
type state struct {
	mu sync.Mutex
	ns map[string]verdict
	// janitorAt is when the janitor last ran on each namespace.
	janitorAt map[string]time.Time
	// earlier is each namespace's last read, which the next diagnosis
	// compares itself with (content still going is not stuck).
	earlier map[string]*diagnose.EarlierRead
}

// verdict is what is kept of a diagnosis.
type verdict struct {
	stuck    bool
	blockers []blockerKey
	// fingerprint changes when anything an operator would act on changes.
	fingerprint string
}

type blockerKey struct{ kind, subject string }

func newState() *state {
	return &state{ns: map[string]verdict{}, janitorAt: map[string]time.Time{}, earlier: map[string]*diagnose.EarlierRead{}}
}

// earlierRead is a namespace's last read, nil before the first.
func (s *state) earlierRead(name string) *diagnose.EarlierRead {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.earlier[name]
}

// janitorDue tells whether the janitor may run on a namespace: never yet,
// or not within every.
func (s *state) janitorDue(name string, now time.Time, every time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.janitorAt[name]
	return !ok || now.Sub(at) >= every
}

func (s *state) janitorRan(name string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.janitorAt[name] = at
}

// set keeps a namespace's diagnosis and tells whether it changed.
func (s *state) set(name string, r diagnose.Report) bool {
	v := verdictOf(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	old, seen := s.ns[name]
	s.ns[name] = v
	s.earlier[name] = r.EarlierRead()
	return !seen || old.fingerprint != v.fingerprint
}

// remove forgets a namespace; it tells whether there was one.
func (s *state) remove(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ns[name]
	delete(s.ns, name)
	delete(s.janitorAt, name)
	delete(s.earlier, name)
	return ok
}

// each calls f for every namespace diagnosed, under the lock.
func (s *state) each(f func(name string, v verdict)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, v := range s.ns {
		f(name, v)
	}
}

func verdictOf(r diagnose.Report) verdict {
	v := verdict{stuck: r.Verdict.State == diagnose.StateStuck}
	seen := map[blockerKey]bool{}
	// Only what holds a stuck namespace: a type that could not be listed
	// says the diagnosis is partial, not that the namespace is stuck.
	var blocking []diagnose.Blocker
	if v.stuck {
		blocking = r.Blocking()
	}
	for _, b := range blocking {
		k := blockerKey{kind: string(b.Kind), subject: cutSubject(b.Subject)}
		if seen[k] || len(v.blockers) == maxBlockerSeries {
			continue
		}
		seen[k] = true
		v.blockers = append(v.blockers, k)
	}
	slices.SortFunc(v.blockers, func(a, b blockerKey) int {
		return strings.Compare(a.kind+"\x00"+a.subject, b.kind+"\x00"+b.subject)
	})
	parts := []string{string(r.Verdict.State)}
	for _, b := range v.blockers {
		parts = append(parts, b.kind+"="+b.subject)
	}
	v.fingerprint = strings.Join(parts, "\n")
	return v
}

// cutSubject bounds a label value on a rune boundary.
func cutSubject(s string) string {
	if len(s) <= maxSubject {
		return s
	}
	cut := maxSubject
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
