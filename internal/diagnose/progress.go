package diagnose

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// ProgressKind is what is still going in a namespace that is not stuck.
type ProgressKind string

// Progress kinds.
const (
	// ProgressPodsInGrace: pods whose grace period has not ended; their
	// kubelet is still stopping them.
	ProgressPodsInGrace ProgressKind = "PodsWithinGracePeriod"
	// ProgressFinalizersInGrace: content waiting for finalizers for less
	// than --grace; their owners may still be cleaning up.
	ProgressFinalizersInGrace ProgressKind = "FinalizersWithinGrace"
	// ProgressControllerInGrace: the namespace controller has not acted
	// yet, deleted less than --grace ago.
	ProgressControllerInGrace ProgressKind = "ControllerWithinGrace"
	// ProgressFinalizersGoing: content waiting for finalizers past
	// --grace, but fewer objects than at an earlier read: their owner is
	// making progress.
	ProgressFinalizersGoing ProgressKind = "FinalizersProgressing"
)

// EarlierRead is what an earlier read of a namespace found: when, and how
// many objects each finalizer held (Report.EarlierRead makes one).
type EarlierRead struct {
	At         time.Time
	Finalizers map[string]int
}

// EarlierRead is this diagnosis as the next one compares itself with.
func (r Report) EarlierRead() *EarlierRead {
	e := &EarlierRead{At: r.ObservedAt, Finalizers: map[string]int{}}
	for _, f := range r.Finalizers {
		e.Finalizers[f.Name] = f.Objects
	}
	return e
}

// going tells whether content c's finalizers hold fewer objects than at
// the earlier read: each of them, so that one owner's progress does not
// hide another's stall.
func going(obs Observation, c Content) bool {
	e := obs.Earlier
	if e == nil || len(c.Finalizers) == 0 || !obs.Now.After(e.At) {
		return false
	}
	for f := range c.Finalizers {
		before, seen := e.Finalizers[f]
		if !seen || before <= heldNow(obs, f) {
			return false
		}
	}
	return true
}

// heldNow counts the objects a finalizer holds in the namespace now.
func heldNow(obs Observation, finalizer string) int {
	n := 0
	for _, list := range obs.Snapshot.Lists {
		if list == nil {
			continue
		}
		for _, item := range list.Items {
			for _, f := range item.Finalizers {
				if f == finalizer {
					n++
				}
			}
		}
	}
	return n
}

// goingProgress is c's progress since the earlier read, with the time
// left at that rate.
func goingProgress(obs Observation, c Content) Progress {
	e := obs.Earlier
	interval := obs.Now.Sub(e.At)
	before, now := 0, 0
	for f := range c.Finalizers {
		before += e.Finalizers[f]
		now += heldNow(obs, f)
	}
	p := Progress{Kind: ProgressFinalizersGoing, Subject: strings.Join(slices.Sorted(maps.Keys(c.Finalizers)), ","),
		Resource: c.Name(), Objects: c.Count, GoingSeconds: seconds(interval), Went: before - now}
	if gone := before - now; gone > 0 {
		p.LeftSeconds = seconds(time.Duration(int64(interval) * int64(now) / int64(gone)))
	}
	return p
}

// Progress is one thing still going within its time in a namespace being
// deleted: why it is slow, not stuck, with the timings.
type Progress struct {
	Kind ProgressKind `json:"kind"`
	// Subject is what it names: "pods", or the finalizers waited for.
	Subject string `json:"subject,omitempty"`
	// Resource and Objects: the type and how many of its objects.
	Resource string `json:"resource,omitempty"`
	Objects  int    `json:"objects,omitempty"`
	// GoingSeconds is how long it has been going; LeftSeconds how long
	// before it would be called stuck (a pod: before its grace period
	// ends).
	GoingSeconds int64 `json:"goingSeconds"`
	LeftSeconds  int64 `json:"leftSeconds"`
	// Went is how many of its objects went since the earlier read
	// (FinalizersProgressing: goingSeconds is that read's age, and
	// leftSeconds the time left at that rate).
	Went int `json:"went,omitempty"`
}

// progressOf lists what is still going within its time, for a terminating
// namespace nothing blocks: pods within their grace period, content that
// has waited for finalizers less than --grace, a controller that has not
// written its conditions yet within --grace.
func progressOf(obs Observation, r Report) []Progress {
	if r.Verdict.State != StateTerminating || obs.Namespace.DeletionTimestamp == nil {
		return nil
	}
	var out []Progress
	if p := podsInGrace(obs); p != nil {
		out = append(out, *p)
	}
	for _, c := range r.Content {
		if len(c.Finalizers) == 0 || c.Resource == "pods" || c.OldestDeletion == nil {
			continue
		}
		if waitedLongEnough(obs, c) && going(obs, c) {
			out = append(out, goingProgress(obs, c))
			continue
		}
		going := obs.Now.Sub(*c.OldestDeletion)
		out = append(out, Progress{Kind: ProgressFinalizersInGrace, Subject: strings.Join(slices.Sorted(maps.Keys(c.Finalizers)), ","),
			Resource: c.Name(), Objects: c.Count, GoingSeconds: seconds(going), LeftSeconds: seconds(max(obs.Grace-going, 0))})
	}
	if since := obs.Now.Sub(obs.Namespace.DeletionTimestamp.Time); len(obs.Namespace.Status.Conditions) == 0 && since < obs.Grace {
		out = append(out, Progress{Kind: ProgressControllerInGrace, GoingSeconds: seconds(since), LeftSeconds: seconds(obs.Grace - since)})
	}
	return out
}

// podsInGrace: the terminating pods whose grace period ends later, and
// when the last one ends.
func podsInGrace(obs Observation) *Progress {
	var n int
	var first, last time.Time
	for _, pod := range obs.Snapshot.Pods {
		dt := pod.DeletionTimestamp
		if dt == nil || !obs.Now.Before(dt.Time) {
			continue
		}
		n++
		if dt.After(last) {
			last = dt.Time
		}
		if grace := pod.DeletionGracePeriodSeconds; grace != nil {
			start := dt.Add(-time.Duration(*grace) * time.Second)
			if first.IsZero() || start.Before(first) {
				first = start
			}
		}
	}
	if n == 0 {
		return nil
	}
	p := &Progress{Kind: ProgressPodsInGrace, Subject: "pods", Resource: "pods", Objects: n, LeftSeconds: seconds(last.Sub(obs.Now))}
	if !first.IsZero() {
		p.GoingSeconds = seconds(obs.Now.Sub(first))
	}
	return p
}

// seconds rounds a duration to whole seconds, up: "ends in 0s" would read
// as ended.
func seconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }
