package watch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// JanitorOptions switch the janitor on: purge's engine on the terminating
// namespaces Selector chooses, once they have been terminating for After,
// with only the escalations Purge names.
type JanitorOptions struct {
	Selector labels.Selector
	After    time.Duration
	// Purge is the runs' options: DryRunServer unless --purge-force; the
	// BackupDir here is the base, each run saving under NAME-TIME in it.
	Purge purge.Options
}

// Janitor results, the counter's result label.
const (
	resultGone      = "gone"
	resultRemaining = "remaining"
	resultRefused   = "refused"
	resultError     = "error"
)

// offerJanitor hands ns to the janitor when the janitor is on, ns is
// chosen, has been terminating for the janitor's After, and was not purged
// within the last After. The janitor runs apart (janitorLoop), one
// namespace at a time per replica, so a purge's minutes hold no diagnosis
// back.
func (w *Watcher) offerJanitor(ns *v1.Namespace, age time.Duration) {
	j := w.Opts.Janitor
	if j == nil || purge.IsSystemNamespace(ns.Name) || !j.Selector.Matches(labels.Set(ns.Labels)) {
		return
	}
	if age < j.After {
		w.queue.AddAfter(ns.Name, j.After-age)
		return
	}
	if w.state.janitorDue(ns.Name, w.now(), j.After) {
		w.janitorQueue.Add(ns.Name)
	}
}

// janitorLoop purges the namespaces offered, one at a time, until ctx
// ends.
func (w *Watcher) janitorLoop(ctx context.Context) {
	for w.processJanitor(ctx) {
	}
}

func (w *Watcher) processJanitor(ctx context.Context) bool {
	name, quit := w.janitorQueue.Get()
	if quit {
		return false
	}
	defer w.janitorQueue.Done(name)
	if run, ns := w.runJanitor(ctx, name); run != nil && w.OnChange != nil {
		w.OnChange(Change{Namespace: name, At: w.now(), Terminating: w.now().Sub(ns.DeletionTimestamp.Time), Janitor: run})
	}
	return true
}

// runJanitor runs purge's engine on one namespace, after reading it again:
// the cache may lag, and a namespace unlabelled just now is left alone.
func (w *Watcher) runJanitor(ctx context.Context, name string) (*JanitorRun, *v1.Namespace) {
	j := w.Opts.Janitor
	fresh, err := w.Clients.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil || fresh.DeletionTimestamp == nil || purge.IsSystemNamespace(name) || !j.Selector.Matches(labels.Set(fresh.Labels)) ||
		!w.state.janitorDue(name, w.now(), j.After) {
		return nil, nil
	}
	opts := j.Purge
	if opts.BackupDir != "" {
		opts.BackupDir = filepath.Join(opts.BackupDir, name+"-"+w.now().UTC().Format("20060102T150405Z"))
	}
	p := &purge.Purger{Clients: w.Clients, Opts: opts, Now: w.Now}
	report, err := p.Run(ctx, name)
	w.state.janitorRan(name, w.now())
	w.recordJanitor(fresh, report, err)
	return &JanitorRun{Report: report, Err: err}, fresh
}

// recordJanitor says a run in an Event and counts it.
func (w *Watcher) recordJanitor(ns *v1.Namespace, r *purge.Report, err error) {
	action, result := janitorOutcome(w.Opts.Janitor.Purge.DryRun, r, err)
	if w.Metrics != nil {
		w.Metrics.janitorRan(action, result)
	}
	if w.Recorder == nil {
		return
	}
	reason, typ := ReasonPurged, v1.EventTypeNormal
	switch {
	case result == resultError || result == resultRefused || action == "purge" && result != resultGone:
		reason, typ = ReasonPurgeFailed, v1.EventTypeWarning
	case action == "dry-run":
		reason = ReasonPurgePlanned
	}
	w.Recorder.Event(namespaceRef(ns), typ, reason, w.Words.Janitor(r, err))
}

// janitorOutcome is a run's counter labels. A dry run's result is what its
// plan predicts.
func janitorOutcome(mode purge.DryRun, r *purge.Report, err error) (action, result string) {
	action = "purge"
	if mode != purge.DryRunNone {
		action = "dry-run"
	}
	switch {
	case errors.Is(err, access.ErrMissing) || r != nil && r.Outcome == purge.OutcomeRefused:
		return action, resultRefused
	case errors.Is(err, purge.ErrNotFound):
		return action, resultGone
	case err != nil:
		return action, resultError
	case r.Outcome == purge.OutcomeGone || r.Outcome == purge.OutcomePlanned && len(r.Holding) == 0:
		return action, resultGone
	}
	return action, resultRemaining
}

// String names the janitor's mode for a log line.
func (j *JanitorOptions) String() string {
	mode := "server dry run"
	if j.Purge.DryRun == purge.DryRunNone {
		mode = "for real"
	}
	return fmt.Sprintf("janitor on (%s): namespaces matching %q, terminating for %s", mode, j.Selector, j.After)
}
