package rescue

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/backup/restore"
	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// BackupAnnotation names, on a hold's policy, the folder rescue saved the
// namespace to: --restore finds it there while the hold stands.
const BackupAnnotation = "ns-doctor.io/backup-dir"

// ErrNotABackup: --restore's folder holds a backup of another namespace
// (backup.ErrNotABackup: of none).
var ErrNotABackup = errors.New("not a backup of the namespace")

// ErrStillTerminating: the namespace is still being deleted when restore's
// wait ends; nothing was re-created.
var ErrStillTerminating = errors.New("namespace still terminating")

// Restoring is what --restore will do, read and checked before anything
// changes: release the hold, finish the deletion with purge's own pass,
// and restore the folder (Plan says each object's fate).
type Restoring struct {
	Namespace string       `json:"namespace"`
	Dir       string       `json:"dir"`
	Hold      string       `json:"hold"`
	Plan      *backup.Plan `json:"plan"`
	folder    *backup.Folder
	ordering  compat.Ordering
}

// RestoreReport is what --restore did.
type RestoreReport struct {
	Namespace string `json:"namespace"`
	Dir       string `json:"dir"`
	// WasHeld: the hold was there, and was released first.
	WasHeld bool `json:"wasHeld"`
	// Released says whether the API server was seen letting the namespace
	// controller delete again before the deletion went on.
	Released InForce `json:"released"`
	// Deletion is purge's pass finishing the deletion (nil: the namespace
	// was gone already, or someone had made it again).
	Deletion *purge.Report `json:"deletion,omitempty"`
	// Restore is the folder's restore into the namespace.
	Restore *restore.Report `json:"restore,omitempty"`
}

// BackupDirOf is the folder the hold of namespace names, empty when there
// is no hold (or it names none).
func BackupDirOf(ctx context.Context, c *kube.Clients, namespace string) string {
	p, err := c.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, HoldName(namespace), metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return p.Annotations[BackupAnnotation]
}

// PrepareRestore reads the folder (it must be a backup of namespace),
// plans its restore and checks, in one access check, everything --restore
// will send: the hold's removal, purge's pass, the restore's writes.
func PrepareRestore(ctx context.Context, c *kube.Clients, namespace, dir string) (*Restoring, error) {
	folder, plan, err := restore.Prepare(ctx, c, dir, namespace)
	if err != nil {
		return nil, err // backup.ErrNotABackup for a folder that is none
	}
	if folder.Manifest.Namespace != namespace {
		return nil, fmt.Errorf("%w: %s holds a backup of namespace %s", ErrNotABackup, dir, folder.Manifest.Namespace)
	}
	disc, err := kube.Discover(ctx, c.Discovery)
	if err != nil {
		return nil, err
	}
	gitVersion, _ := kube.ServerVersion(ctx, c.Discovery)
	ordering, err := compat.OrderingFor("auto", gitVersion)
	if err != nil {
		return nil, err
	}
	needs := append(releaseNeeds(), purge.Needs(disc, namespace)...)
	if err := check(ctx, c, append(needs, restore.Needs(plan)...)); err != nil {
		return nil, err
	}
	return &Restoring{Namespace: namespace, Dir: dir, Hold: HoldName(namespace), Plan: plan, folder: folder, ordering: ordering}, nil
}

// RestoreStep is a stage of --restore, told as it ends: a restore killed
// half-way has said how far it got, and the next run finishes it.
type RestoreStep string

// The steps, in order.
const (
	// StepReleased: the hold is gone (or was not there).
	StepReleased RestoreStep = "Released"
	// StepDeleted: the namespace is gone, purge's pass having finished
	// what the controller would have.
	StepDeleted RestoreStep = "Deleted"
	// StepRecreated: the namespace is there again, with its labels and
	// annotations.
	StepRecreated RestoreStep = "Recreated"
	// StepReapplied: every saved object was gone through.
	StepReapplied RestoreStep = "Reapplied"
	// StepGivenBack: the volumes whose claims are bound again have their
	// reclaim policy back.
	StepGivenBack RestoreStep = "GivenBack"
)

var restoreSteps = map[restore.Step]RestoreStep{
	restore.StepNamespace: StepRecreated, restore.StepApplied: StepReapplied, restore.StepVolumes: StepGivenBack,
}

// RestoreNamespace releases the hold (and waits until the API server lets
// the controllers delete again), finishes the deletion with purge's own
// pass (no escalation; it saves into the same folder, whose first copies
// stay) within wait, then restores the folder into the namespace. Every
// step can run again. told, when set, is called as each step ends.
func RestoreNamespace(ctx context.Context, c *kube.Clients, r *Restoring, wait time.Duration, told func(RestoreStep, *RestoreReport)) (*RestoreReport, error) {
	rep := &RestoreReport{Namespace: r.Namespace, Dir: r.Dir}
	tell := func(s RestoreStep) {
		if told != nil {
			told(s, rep)
		}
	}
	start := time.Now()
	var err error
	if rep.WasHeld, err = removePolicy(ctx, c, r.Hold); err != nil {
		return rep, err
	}
	rep.Released = proveReleased(ctx, c, r.Namespace, start)
	tell(StepReleased)
	if rep.Deletion, err = finishDeletion(ctx, c, r, wait); err != nil {
		return rep, err
	}
	tell(StepDeleted)
	restorer := &restore.Restorer{Clients: c, Wait: wait, Told: func(s restore.Step, rr *restore.Report) {
		rep.Restore = rr
		tell(restoreSteps[s])
	}}
	rep.Restore, err = restorer.Run(ctx, r.folder, r.Plan)
	return rep, err
}

// finishDeletion runs purge's pass on the namespace until it is gone,
// instead of waiting for the controller's next pass (half the longest
// grace period of its pods, or its failure backoff after the hold's
// refusals: up to a minute). A namespace gone already, or made again by
// someone, needs nothing.
func finishDeletion(ctx context.Context, c *kube.Clients, r *Restoring, wait time.Duration) (*purge.Report, error) {
	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, r.Namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp == nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", r.Namespace, err)
	}
	p := &purge.Purger{Clients: c, Opts: purge.Options{DryRun: purge.DryRunNone, BackupDir: r.Dir, Timeout: wait,
		OrderedDeletion: r.ordering, AccessChecked: true}}
	rep, err := p.Run(ctx, r.Namespace)
	switch {
	case errors.Is(err, purge.ErrNotFound):
		return rep, nil
	case err != nil:
		return rep, err
	case rep.Outcome == purge.OutcomeRemaining:
		return rep, fmt.Errorf("%w after %s: the hold is released; the report says what holds it and the step past it; run --restore again once it is cleared", ErrStillTerminating, wait)
	}
	return rep, nil
}
