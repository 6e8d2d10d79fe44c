// Package restore re-applies an ns-doctor backup folder (any command's:
// purge's, rescue's, the janitor's) into a namespace, as internal/backup's
// restore table and order decide: the namespace first, the volumes bound
// again, each object applied server-side with its owner's new uid, the
// volumes' reclaim policies given back once their claims are bound. Every
// step can run again: a restore killed half-way is finished by the next.
package restore

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// FieldManager owns what a restore writes (server-side apply).
const FieldManager = "ns-doctor"

// ErrStillTerminating: the namespace to restore into is being deleted;
// nothing can be created in it until it is gone.
var ErrStillTerminating = errors.New("namespace still terminating")

// Status is what became, or would become, of one saved object.
type Status string

// The statuses.
const (
	// Planned: a plan; it would be applied.
	Planned  Status = "Planned"
	Restored Status = "Restored"
	LeftOut  Status = "LeftOut"
	Failed   Status = "Failed"
)

// Object is one saved object in a restore's report.
type Object struct {
	Resource string `json:"resource"`
	Name     string `json:"name"`
	Status   Status `json:"status"`
	// Rule is the restore table's row that decided it.
	Rule string `json:"rule"`
	// Why is the row's reason, or the API server's answer when it failed.
	Why string `json:"why,omitempty"`
	// Notes say what the row changed, and what the cluster made it change
	// (a node port taken, an owner not restored).
	Notes []string `json:"notes,omitempty"`
}

// Volume is a volume a rescue retained for the namespace, and whether its
// reclaim policy is back.
type Volume struct {
	Name  string `json:"name"`
	Claim string `json:"claim"`
	// Before is the policy it had before the rescue, Now its policy now.
	Before string `json:"reclaimPolicyBefore"`
	Now    string `json:"reclaimPolicy"`
	// Bound: its claim is bound to it again.
	Bound bool `json:"bound"`
	// Why says why it is still Retain, and Command how to give its policy
	// back once it is bound.
	Why     string `json:"why,omitempty"`
	Command string `json:"command,omitempty"`
}

// Report is what a restore did, or, for a plan, would do.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Dir        string `json:"dir"`
	// From is the namespace saved, Into the one restored into.
	From string `json:"from"`
	Into string `json:"into"`
	// Plan: nothing was changed.
	Plan bool `json:"plan"`
	// NamespaceCreated: the namespace was created (not there before).
	NamespaceCreated bool     `json:"namespaceCreated"`
	Objects          []Object `json:"objects"`
	Volumes          []Volume `json:"volumes"`
	Notes            []string `json:"notes"`
}

// Counts are a report's objects by status.
func (r *Report) Counts() map[Status]int {
	out := map[Status]int{}
	for _, o := range r.Objects {
		out[o.Status]++
	}
	return out
}

// Step is a stage of a restore, told as it ends.
type Step string

// The steps, in order.
const (
	StepNamespace Step = "Namespace"
	StepApplied   Step = "Applied"
	StepVolumes   Step = "Volumes"
)

// Restorer applies plans.
type Restorer struct {
	Clients *kube.Clients
	// Wait bounds each wait: for the ServiceAccount controller's default
	// account, for claims to bind.
	Wait time.Duration
	// Told, when set, is called as each step ends, with the report so far.
	Told func(Step, *Report)
	// Object, when set, is called with each object's outcome as it comes.
	Object func(Object)
}

// Prepare reads a folder and plans its restore into into (empty: the
// namespace saved), reading of the cluster only the volumes the claims
// name.
func Prepare(ctx context.Context, c *kube.Clients, dir, into string) (*backup.Folder, *backup.Plan, error) {
	f, err := backup.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	if into == "" {
		into = f.Manifest.Namespace
	}
	facts, err := volumeFacts(ctx, c, f, into)
	if err != nil {
		return nil, nil, err
	}
	return f, backup.MakePlan(f, into, backup.Context{Volumes: facts}), nil
}

// PlanReport is a plan told as a report: what would be applied, what left
// out and why.
func PlanReport(p *backup.Plan) *Report {
	r := newReport(p)
	r.Plan = true
	for _, s := range p.Steps {
		o := objectOf(s)
		if s.Verdict == backup.Restore {
			o.Status = Planned
		}
		r.Objects = append(r.Objects, o)
	}
	return r
}

func newReport(p *backup.Plan) *Report {
	return &Report{APIVersion: backup.ManifestAPIVersion, Kind: "RestoreReport", Dir: p.Dir, From: p.From, Into: p.Into,
		Objects: []Object{}, Volumes: []Volume{}, Notes: p.Notes}
}

func objectOf(s backup.Step) Object {
	o := Object{Resource: s.TypeName(), Name: s.Name, Rule: s.Rule, Why: s.Why, Notes: s.Notes, Status: LeftOut}
	if s.Verdict == backup.Restore {
		o.Status = Restored
	}
	return o
}

// Run applies the plan: the namespace, the claims' volumes, every object
// in order, then the volumes' policies. It stops at the first step that
// cannot go on (the namespace); an object that fails is reported and the
// others go on.
func (r *Restorer) Run(ctx context.Context, f *backup.Folder, p *backup.Plan) (*Report, error) {
	rep := newReport(p)
	created, err := r.namespace(ctx, f, p.Into)
	if err != nil {
		return rep, err
	}
	rep.NamespaceCreated = created
	r.told(StepNamespace, rep)
	if err := r.rebind(ctx, p); err != nil {
		return rep, err
	}
	a := &applier{Restorer: r, into: p.Into, uids: map[string]types.UID{}}
	for _, run := range batches(p.Steps) {
		for _, o := range a.applyBatch(ctx, run) {
			rep.Objects = append(rep.Objects, o)
			if r.Object != nil {
				r.Object(o)
			}
		}
	}
	r.told(StepApplied, rep)
	if rep.Volumes, err = r.givePoliciesBack(ctx, p); err != nil {
		return rep, err
	}
	r.told(StepVolumes, rep)
	return rep, nil
}

func (r *Restorer) told(s Step, rep *Report) {
	if r.Told != nil {
		r.Told(s, rep)
	}
}

// copyOf is the object to apply: the plan's, in the namespace restored into.
func copyOf(s backup.Step, into string) *unstructured.Unstructured {
	o := s.Object.DeepCopy()
	o.SetNamespace(into)
	return o
}
