package purge

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// tally is what a pass's requests reached and read, as the writer's
// content operations counted them: bookkeeping the recorder and holding
// read, not requests (those are the writer's). realTally and planTally
// mirror realWriter and planWriter.
type tally interface {
	// startPass begins a pass's counts.
	startPass()
	// reached is how many objects a pass's request for gvr reached;
	// reachedAfter tells whether it is known only once sent; spared
	// whether a deletecollection was not sent (nothing to delete).
	reached(gvr schemaGVR) int
	reachedAfter() bool
	spared(gvr schemaGVR) bool
	// seenPods are the pods as the last pass's estimate read them.
	seenPods() []v1.Pod
}

// realTally counts what a force run's content operations saved before
// sending: known once a request is sent.
type realTally struct{ content *backupOps }

func (t realTally) startPass()                { t.content.counts = newCounts() }
func (t realTally) reached(gvr schemaGVR) int { return t.content.counts.get(gvr) }
func (t realTally) reachedAfter() bool        { return true }
func (t realTally) spared(gvr schemaGVR) bool { return t.content.counts.state(gvr) == skipped }
func (t realTally) seenPods() []v1.Pod        { return t.content.seenPods() }

// planTally counts what a plan's snapshot holds: known before a request
// is played.
type planTally struct{ ops *deletion.PlanOps }

func (t planTally) startPass()                {}
func (t planTally) reached(gvr schemaGVR) int { return t.ops.Count(gvr) }
func (t planTally) reachedAfter() bool        { return false }
func (t planTally) spared(schemaGVR) bool     { return false }

func (t planTally) seenPods() []v1.Pod {
	pods, _ := t.ops.ListPods(context.Background(), "")
	return pods
}
