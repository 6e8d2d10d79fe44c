package rescue

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1 "k8s.io/api/core/v1"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// Plan is what a rescue will do, read before anything changes: the
// confirmation says it, and Run does exactly it.
type Plan struct {
	Namespace string `json:"namespace"`
	// Hold names the policy and its binding.
	Hold string `json:"hold"`
	// AlreadyHeld: an earlier run applied the hold (this one re-applies
	// it and continues).
	AlreadyHeld bool `json:"alreadyHeld"`
	// Volumes are the PersistentVolumes bound to the namespace's claims.
	Volumes   []Volume `json:"volumes"`
	BackupDir string   `json:"backupDir"`
	// Needs are the permissions the rescue needs, checked by Prepare.
	Needs []access.Permission `json:"-"`

	volumes []corev1.PersistentVolume
}

// Report is what a rescue did.
type Report struct {
	Plan
	// Gone: the namespace was deleted before the save could read it.
	Gone bool `json:"gone"`
	// InForce: whether the API server was seen enforcing the hold.
	InForce InForce `json:"inForce"`
	Backup  Backup  `json:"backup"`
}

// Prepare reads the namespace, checks the cluster and every permission
// the rescue needs, and plans; it changes nothing. Bad input comes back as
// ErrNotFound, ErrActive, ErrNoPolicyAPI or a *access.MissingError.
func Prepare(ctx context.Context, c *kube.Clients, namespace, backupDir string) (*Plan, error) {
	return prepare(ctx, c, namespace, backupDir, true)
}

// Replan plans the rescue again as Prepare did, without asking for the
// permissions again: the check of the first plan stands for a plan that
// has not moved, and a plan's Needs are part of it (an agent's consent
// compares them). Every review spared is a round trip inside the window.
func Replan(ctx context.Context, c *kube.Clients, namespace, backupDir string) (*Plan, error) {
	return prepare(ctx, c, namespace, backupDir, false)
}

// prepare is Prepare, the permission check only when asked.
func prepare(ctx context.Context, c *kube.Clients, namespace, backupDir string, checkAccess bool) (*Plan, error) {
	ns, err := GetNamespace(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	if ns.DeletionTimestamp == nil {
		return nil, ErrActive
	}
	if err := checkPolicyAPI(ctx, c); err != nil {
		return nil, err
	}
	p := &Plan{Namespace: namespace, Hold: HoldName(namespace), BackupDir: backupDir}
	if p.Needs, err = holdNeeds(ctx, c, namespace); err != nil {
		return nil, err
	}
	if checkAccess {
		if err := check(ctx, c, p.Needs); err != nil {
			return nil, err
		}
	}
	if p.AlreadyHeld, err = policyExists(ctx, c, p.Hold); err != nil {
		return nil, err
	}
	if p.volumes, err = boundVolumes(ctx, c, namespace); err != nil {
		return nil, err
	}
	for _, pv := range p.volumes {
		p.Volumes = append(p.Volumes, volumeOf(pv))
	}
	return p, nil
}

// holdNeeds are what a rescue needs: the hold, the volumes, the
// namespace, and the list of every namespaced type it saves (Secrets
// among them).
func holdNeeds(ctx context.Context, c *kube.Clients, namespace string) ([]access.Permission, error) {
	needs := policyPermissions("get", "create", "patch")
	needs = append(needs,
		access.Permission{Verb: "get", Resource: "namespaces"},
		access.Permission{Verb: "list", Resource: "persistentvolumes"},
		access.Permission{Verb: "patch", Resource: "persistentvolumes"})
	d, err := kube.Discover(ctx, c.Discovery)
	if err != nil {
		return nil, err
	}
	for gvr := range d.DeletableResources() {
		needs = append(needs, access.Permission{Verb: "list", Group: gvr.Group, Resource: gvr.Resource, Namespace: namespace})
	}
	return needs, nil
}

// Step is a stage of a rescue, told as it ends: a rescue killed half-way
// has said how far it got.
type Step string

// The steps, in order.
const (
	// StepHeld: the policy and its binding are stored.
	StepHeld Step = "Held"
	// StepInForce: the API server was seen refusing the controller (or
	// rescue gave up proving it: Report.InForce says why).
	StepInForce Step = "InForce"
	// StepRetained: the volumes are Retain.
	StepRetained Step = "Retained"
	// StepSaved: the copy is written.
	StepSaved Step = "Saved"
)

// Run holds the namespace first (the window may close any second), then
// retains its volumes, then saves what remains.
func Run(ctx context.Context, c *kube.Clients, p *Plan) (*Report, error) {
	return RunSteps(ctx, c, p, nil)
}

// RunSteps is Run, calling step (when not nil) as each step ends with the
// report so far.
func RunSteps(ctx context.Context, c *kube.Clients, p *Plan, step func(Step, *Report)) (*Report, error) {
	start := time.Now()
	r := &Report{Plan: *p}
	done := func(s Step) {
		if step != nil {
			step(s, r)
		}
	}
	if err := applyHold(ctx, c, p); err != nil {
		return r, err
	}
	done(StepHeld)
	r.InForce = proveHold(ctx, c, p.Namespace, start)
	done(StepInForce)
	retained, err := retainAll(ctx, c, p, r)
	if err != nil {
		return r, err
	}
	done(StepRetained)
	ns, err := GetNamespace(ctx, c, p.Namespace)
	if err != nil {
		r.Gone = true
		return r, err
	}
	if r.Backup, err = save(ctx, c, ns, retained, p.BackupDir); err != nil {
		return r, fmt.Errorf("saving namespace %s to %s: %w", p.Namespace, p.BackupDir, err)
	}
	done(StepSaved)
	return r, nil
}

// applyHold applies the hold's policy, marked with who set it and where
// the copy goes, and its binding.
func applyHold(ctx context.Context, c *kube.Clients, p *Plan) error {
	policy := holdPolicy(p.Namespace)
	if user := whoAmI(ctx, c); user != "" {
		// Who set the hold: explain says it beside the denial.
		policy.Annotations[diagnose.HeldByAnnotation] = user
	}
	if dir, err := filepath.Abs(p.BackupDir); err == nil {
		// Where the copy is: --restore finds it while the hold stands.
		policy.Annotations[BackupAnnotation] = dir
	}
	return applyPolicy(ctx, c, policy, bindingOf(p.Hold, p.Namespace))
}

// retainAll sets every planned volume to Retain, recording each in r.
func retainAll(ctx context.Context, c *kube.Clients, p *Plan, r *Report) ([]*corev1.PersistentVolume, error) {
	var retained []*corev1.PersistentVolume
	r.Volumes = nil
	for _, pv := range p.volumes {
		v, got, err := retainVolume(ctx, c, pv, p.Namespace)
		if err != nil {
			return retained, err
		}
		r.Volumes = append(r.Volumes, v)
		retained = append(retained, got)
	}
	return retained, nil
}

// Released is what release did.
type Released struct {
	Namespace string `json:"namespace"`
	Hold      string `json:"hold"`
	// WasHeld: the hold was there to remove.
	WasHeld bool `json:"wasHeld"`
	// InForce: a server dry run of a DELETE sent as the namespace
	// controller was allowed again before release returned.
	InForce InForce `json:"inForce"`
	// Volumes stay Retain: each with how to give its policy back.
	Volumes []Volume `json:"volumes"`
}

// PrepareRelease checks what release needs, and says what it will do; it
// changes nothing.
func PrepareRelease(ctx context.Context, c *kube.Clients, namespace string) (*Released, error) {
	if err := checkPolicyAPI(ctx, c); err != nil {
		return nil, err
	}
	if err := check(ctx, c, releaseNeeds()); err != nil {
		return nil, err
	}
	return &Released{Namespace: namespace, Hold: HoldName(namespace)}, nil
}

// releaseNeeds are release's: the hold's removal, the volumes it names.
func releaseNeeds() []access.Permission {
	return append(policyPermissions("delete"), access.Permission{Verb: "list", Resource: "persistentvolumes"})
}

// Release removes the hold r names; the volumes stay retained.
func Release(ctx context.Context, c *kube.Clients, r *Released) error {
	start := time.Now()
	var err error
	if r.WasHeld, err = removePolicy(ctx, c, r.Hold); err != nil {
		return err
	}
	if r.WasHeld {
		r.InForce = proveReleased(ctx, c, r.Namespace, start)
	}
	r.Volumes, err = retainedVolumes(ctx, c, r.Namespace)
	return err
}

// Protected is what protect did.
type Protected struct {
	Namespace string `json:"namespace"`
	Policy    string `json:"policy"`
	// Removed: protect --remove; WasThere: something was there before.
	Removed  bool `json:"removed"`
	WasThere bool `json:"wasThere"`
	// Enforced: before protect returned, a server dry run of the
	// namespace's DELETE was refused by the policy (protect), or no longer
	// refused by it (--remove).
	Enforced bool `json:"enforced"`
	// Annotation is what lets the namespace be deleted.
	Annotation string `json:"annotation"`
}

// PrepareProtect checks protect's input and permissions; it changes
// nothing. A namespace being deleted already needs rescue, not protect.
func PrepareProtect(ctx context.Context, c *kube.Clients, namespace string, remove bool) (*Protected, error) {
	p := &Protected{Namespace: namespace, Policy: protectName(namespace), Removed: remove, Annotation: ConfirmAnnotation + "=" + namespace}
	if err := checkPolicyAPI(ctx, c); err != nil {
		return nil, err
	}
	if !remove {
		ns, err := GetNamespace(ctx, c, namespace)
		if err != nil {
			return nil, err
		}
		if ns.DeletionTimestamp != nil {
			return nil, ErrTerminating
		}
	}
	if err := check(ctx, c, protectNeeds(remove)); err != nil {
		return nil, err
	}
	var err error
	p.WasThere, err = policyExists(ctx, c, p.Policy)
	return p, err
}

// protectNeeds are protect's: its policy and binding, applied or removed.
func protectNeeds(remove bool) []access.Permission {
	if remove {
		return policyPermissions("get", "delete")
	}
	return policyPermissions("get", "create", "patch")
}

// ErrTerminating: protect on a namespace already being deleted.
var ErrTerminating = fmt.Errorf("namespace is being deleted")

// Protect applies (or, with p.Removed, removes) the protection.
func Protect(ctx context.Context, c *kube.Clients, p *Protected) error {
	if p.Removed {
		var err error
		if p.WasThere, err = removePolicy(ctx, c, p.Policy); err != nil || !p.WasThere {
			return err
		}
		return waitProtected(ctx, c, p)
	}
	if err := applyPolicy(ctx, c, protectPolicy(p.Namespace), bindingOf(p.Policy, p.Namespace)); err != nil {
		return err
	}
	return waitProtected(ctx, c, p)
}

// waitProtected waits until kube-apiserver enforces the new binding, which
// it loads a moment after it is stored: a server dry run of the
// namespace's DELETE (nothing is persisted) is refused once it does. Until
// then a `kubectl delete namespace` run right after protect would go
// through. A namespace already carrying the confirmation is let through by
// design, so there is nothing to observe. For --remove, the other way: it
// waits until the dry run is no longer refused, or a deletion right after
// would still be.
func waitProtected(ctx context.Context, c *kube.Clients, p *Protected) error {
	ctx, cancel := context.WithTimeout(ctx, enforceTimeout)
	defer cancel()
	for {
		ns, err := GetNamespace(ctx, c, p.Namespace)
		if errors.Is(err, ErrNotFound) && p.Removed {
			return nil // gone: nothing is left to protect, or to observe
		}
		if err != nil {
			return err
		}
		if ns.Annotations[ConfirmAnnotation] == p.Namespace {
			return nil
		}
		err = c.Kube.CoreV1().Namespaces().Delete(ctx, p.Namespace, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if refused := apierrors.IsForbidden(err) && strings.Contains(err.Error(), p.Policy); refused != p.Removed {
			p.Enforced = true
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // reported: Enforced stays false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// enforceTimeout bounds waitProtected.
const enforceTimeout = 10 * time.Second
