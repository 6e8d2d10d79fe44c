package rescue

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"

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

// Prepare reads the namespace, checks the cluster and the permissions,
// and plans; it changes nothing. Bad input comes back as ErrNotFound,
// ErrActive, ErrNoPolicyAPI or a *MissingError.
func Prepare(ctx context.Context, c *kube.Clients, namespace, backupDir string) (*Plan, error) {
	ns, err := GetNamespace(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	if ns.DeletionTimestamp == nil {
		return nil, ErrActive
	}
	if err := CheckPolicyAPI(c); err != nil {
		return nil, err
	}
	needs, err := rescuePermissions(c, namespace)
	if err != nil {
		return nil, err
	}
	if err := CheckPermissions(ctx, c, needs); err != nil {
		return nil, err
	}
	p := &Plan{Namespace: namespace, Hold: HoldName(namespace), BackupDir: backupDir}
	if p.AlreadyHeld, err = PolicyExists(ctx, c, p.Hold); err != nil {
		return nil, err
	}
	if p.volumes, err = BoundVolumes(ctx, c, namespace); err != nil {
		return nil, err
	}
	for _, pv := range p.volumes {
		p.Volumes = append(p.Volumes, VolumeOf(pv))
	}
	return p, nil
}

// rescuePermissions are what a rescue needs: the hold, the volumes, the
// namespace, and the list of every namespaced type it saves (Secrets
// among them).
func rescuePermissions(c *kube.Clients, namespace string) ([]Permission, error) {
	needs := policyPermissions("get", "create", "patch")
	needs = append(needs,
		Permission{Verb: "get", Resource: "namespaces"},
		Permission{Verb: "list", Resource: "persistentvolumes"},
		Permission{Verb: "patch", Resource: "persistentvolumes"})
	d, err := kube.Discover(c.Discovery)
	if err != nil {
		return nil, err
	}
	for gvr := range d.DeletableResources() {
		needs = append(needs, Permission{Verb: "list", Group: gvr.Group, Resource: gvr.Resource, Namespace: namespace})
	}
	sortPermissions(needs)
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
	if r.Backup, err = Save(ctx, c, ns, retained, p.BackupDir); err != nil {
		return r, fmt.Errorf("saving namespace %s to %s: %w", p.Namespace, p.BackupDir, err)
	}
	done(StepSaved)
	return r, nil
}

// applyHold applies the hold's policy, marked with who set it and where
// the copy goes, and its binding.
func applyHold(ctx context.Context, c *kube.Clients, p *Plan) error {
	policy := HoldPolicy(p.Namespace)
	if user := whoAmI(ctx, c); user != "" {
		// Who set the hold: explain says it beside the denial.
		policy.Annotations[diagnose.HeldByAnnotation] = user
	}
	if dir, err := filepath.Abs(p.BackupDir); err == nil {
		// Where the copy is: --restore finds it while the hold stands.
		policy.Annotations[BackupAnnotation] = dir
	}
	return ApplyPolicy(ctx, c, policy, Binding(p.Hold, p.Namespace))
}

// retainAll sets every planned volume to Retain, recording each in r.
func retainAll(ctx context.Context, c *kube.Clients, p *Plan, r *Report) ([]*corev1.PersistentVolume, error) {
	var retained []*corev1.PersistentVolume
	r.Volumes = nil
	for _, pv := range p.volumes {
		v, got, err := Retain(ctx, c, pv, p.Namespace)
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
	// Volumes stay Retain: each with how to give its policy back.
	Volumes []Volume `json:"volumes"`
}

// PrepareRelease checks what release needs; it changes nothing.
func PrepareRelease(ctx context.Context, c *kube.Clients) error {
	if err := CheckPolicyAPI(c); err != nil {
		return err
	}
	return CheckPermissions(ctx, c, append(policyPermissions("delete"), Permission{Verb: "list", Resource: "persistentvolumes"}))
}

// Release removes the hold; the volumes stay retained.
func Release(ctx context.Context, c *kube.Clients, namespace string) (*Released, error) {
	r := &Released{Namespace: namespace, Hold: HoldName(namespace)}
	var err error
	if r.WasHeld, err = RemovePolicy(ctx, c, r.Hold); err != nil {
		return r, err
	}
	r.Volumes, err = RetainedVolumes(ctx, c, namespace)
	return r, err
}

// Protected is what protect did.
type Protected struct {
	Namespace string `json:"namespace"`
	Policy    string `json:"policy"`
	// Removed: protect --remove; WasThere: something was there before.
	Removed  bool `json:"removed"`
	WasThere bool `json:"wasThere"`
	// Enforced: a server dry run of the namespace's DELETE was refused by
	// the policy before protect returned.
	Enforced bool `json:"enforced"`
	// Annotation is what lets the namespace be deleted.
	Annotation string `json:"annotation"`
}

// PrepareProtect checks protect's input and permissions; it changes
// nothing. A namespace being deleted already needs rescue, not protect.
func PrepareProtect(ctx context.Context, c *kube.Clients, namespace string, remove bool) (*Protected, error) {
	p := &Protected{Namespace: namespace, Policy: ProtectName(namespace), Removed: remove, Annotation: ConfirmAnnotation + "=" + namespace}
	if err := CheckPolicyAPI(c); err != nil {
		return nil, err
	}
	verbs := []string{"get", "create", "patch"}
	if remove {
		verbs = []string{"get", "delete"}
	} else {
		ns, err := GetNamespace(ctx, c, namespace)
		if err != nil {
			return nil, err
		}
		if ns.DeletionTimestamp != nil {
			return nil, ErrTerminating
		}
	}
	if err := CheckPermissions(ctx, c, policyPermissions(verbs...)); err != nil {
		return nil, err
	}
	var err error
	p.WasThere, err = PolicyExists(ctx, c, p.Policy)
	return p, err
}

// ErrTerminating: protect on a namespace already being deleted.
var ErrTerminating = fmt.Errorf("namespace is being deleted")

// Protect applies (or, with p.Removed, removes) the protection.
func Protect(ctx context.Context, c *kube.Clients, p *Protected) error {
	if p.Removed {
		_, err := RemovePolicy(ctx, c, p.Policy)
		return err
	}
	if err := ApplyPolicy(ctx, c, ProtectPolicy(p.Namespace), Binding(p.Policy, p.Namespace)); err != nil {
		return err
	}
	return waitProtected(ctx, c, p)
}

// waitProtected waits until kube-apiserver enforces the new binding, which
// it loads a moment after it is stored: a server dry run of the
// namespace's DELETE (nothing is persisted) is refused once it does. Until
// then a `kubectl delete namespace` run right after protect would go
// through. A namespace already carrying the confirmation is let through by
// design, so there is nothing to observe.
func waitProtected(ctx context.Context, c *kube.Clients, p *Protected) error {
	ctx, cancel := context.WithTimeout(ctx, enforceTimeout)
	defer cancel()
	for {
		ns, err := GetNamespace(ctx, c, p.Namespace)
		if err != nil {
			return err
		}
		if ns.Annotations[ConfirmAnnotation] == p.Namespace {
			return nil
		}
		err = c.Kube.CoreV1().Namespaces().Delete(ctx, p.Namespace, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), p.Policy) {
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

// checkAll runs the reviews with a bound, as each is a round trip.
func checkAll(ctx context.Context, review func(context.Context, Permission) (bool, error), needs []Permission) ([]Permission, error) {
	allowed := make([]bool, len(needs))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, p := range needs {
		g.Go(func() error {
			// Each goroutine writes its own element: no lock.
			var err error
			allowed[i], err = review(ctx, p)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var missing []Permission
	for i, ok := range allowed {
		if !ok {
			missing = append(missing, needs[i])
		}
	}
	return missing, nil
}
