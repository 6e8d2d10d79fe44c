package diagnose_test

import (
	"testing"
	"time"

	. "github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// Content past --grace whose finalizers hold fewer objects than at an
// earlier read is going, not stuck: the time left at that rate; the same
// count as then, or a finalizer not seen then, is stuck.
func TestFinalizersGoingBetweenTwoReads(t *testing.T) {
	obs := with(observation(), configMaps,
		terminatingItem("a", 5*time.Minute, "example.com/slow"),
		terminatingItem("b", 5*time.Minute, "example.com/slow"),
		terminatingItem("c", 5*time.Minute, "example.com/slow"))
	obs.Grace = 30 * time.Second
	for _, c := range []struct {
		name    string
		earlier *EarlierRead
		state   State
		left    int64
	}{
		{"first read", nil, StateStuck, 0},
		{"seven went in a minute", &EarlierRead{At: now.Add(-time.Minute), Finalizers: map[string]int{"example.com/slow": 10}}, StateTerminating, 26},
		{"none went", &EarlierRead{At: now.Add(-time.Minute), Finalizers: map[string]int{"example.com/slow": 3}}, StateStuck, 0},
		{"another finalizer then", &EarlierRead{At: now.Add(-time.Minute), Finalizers: map[string]int{"example.com/other": 9}}, StateStuck, 0},
	} {
		obs.Earlier = c.earlier
		r := Diagnose(obs)
		if r.Verdict.State != c.state {
			t.Errorf("%s: %s, want %s (%+v)", c.name, r.Verdict.State, c.state, r.Blockers)
			continue
		}
		if c.state != StateTerminating {
			continue
		}
		if len(r.Progress) != 1 || r.Progress[0].Kind != ProgressFinalizersGoing || r.Progress[0].Went != 7 ||
			r.Progress[0].GoingSeconds != 60 || r.Progress[0].LeftSeconds != c.left || r.Progress[0].Objects != 3 {
			t.Errorf("%s: progress %+v", c.name, r.Progress)
		}
	}
	if e := Diagnose(obs).EarlierRead(); e.Finalizers["example.com/slow"] != 3 || !e.At.Equal(now) {
		t.Errorf("EarlierRead %+v", e)
	}
}
