package purge

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// --force-delete-pods deletes with grace period 0 the pods being deleted
// whose grace period is over: their kubelet never confirmed (a lost node,
// a dead kubelet).
var forceDeletePodsEscalation = Escalation{
	Flag:    diagnose.FlagForceDeletePods,
	Help:    "Escalation: delete with grace period 0 the namespace's pods whose grace period is over (their node is gone or its kubelet dead), as kubectl delete --force --grace-period=0 does",
	Leak:    "a pod whose node still runs it keeps running there, unknown to the API server, until its kubelet returns",
	Janitor: true,
	consent: func([]string) []string {
		return []string{"and force-delete (grace period 0) its pods whose grace period is over"}
	},
	answers: func(_ []string, a diagnose.Action) bool { return a.Flag == diagnose.FlagForceDeletePods },
	start:   func([]string) action { return &podForcer{nodes: map[string]NodeState{}} },
	changes: map[ChangeKind]func(Change, string) string{ChangeForceDeletedPod: func(c Change, _ string) string {
		node := c.Node
		if node == "" {
			node = "(none)"
		}
		return fmt.Sprintf("force-deleted pod %s (grace period 0; node %s: %s), saved first", c.Name, node, c.NodeState)
	}},
	warnings: map[WarningKind]func(Warning) string{WarnNodeReady: func(w Warning) string {
		// kubectl's own warning for --force --grace-period=0.
		return fmt.Sprintf("pod %s is on node %s, which is Ready: force deletion does not wait for confirmation that its containers stopped; they may continue to run on the node", w.Name, w.Node)
	}},
}

// ChangeForceDeletedPod: --force-delete-pods.
const ChangeForceDeletedPod ChangeKind = "ForceDeletedPod"

// WarnNodeReady: force-deleting a pod whose node is Ready.
const WarnNodeReady WarningKind = "NodeReady"

// RowForcedPod: a pod deleted (or to delete) with grace period 0.
const RowForcedPod RowKind = "ForcedPod"

// ForcedPod is what a forced pod's row knows beyond the others: its node,
// and how long it has been terminating.
type ForcedPod struct {
	Node      string    `json:"node,omitempty"`
	NodeState NodeState `json:"nodeState"`
	// TerminatingSeconds is how long the pod has been terminating.
	TerminatingSeconds int64 `json:"terminatingSeconds"`
	// AfterSeconds: a plan's pod whose grace period is not over yet is
	// force-deleted that much later.
	AfterSeconds int64 `json:"afterSeconds,omitempty"`
}

// Of is its row kind.
func (ForcedPod) Of() RowKind { return RowForcedPod }

func forcedOf(r Row) ForcedPod {
	fp, _ := r.Extra.(ForcedPod)
	return fp
}

var forcedPodShape = Shape{
	Kind: RowForcedPod, Section: "forcedPods", Key: "pods", Short: "FORCED PODS",
	Title: "Pods to delete with grace period 0 (escalation)",
	Columns: []Column{
		{"POD", func(r Row) []string { return []string{r.Name} }},
		{"NODE", func(r Row) []string { return nonEmpty(forcedOf(r).Node) }},
		{"NODE STATE", func(r Row) []string { return []string{string(forcedOf(r).NodeState)} }},
		{"TERMINATING", func(r Row) []string {
			return []string{(time.Duration(forcedOf(r).TerminatingSeconds) * time.Second).String()}
		}},
	},
	Counted: "%d pod(s) force-deleted", Done: "Deleted",
	Extra: ForcedPod{}, Changes: []ChangeKind{ChangeForceDeletedPod},
	Result: func(r Row) string {
		switch r.Status {
		case RowPlanned:
			if after := forcedOf(r).AfterSeconds; after > 0 {
				return fmt.Sprintf("would delete, once its grace period ends (%ds)", after)
			}
			return "would delete"
		case RowDone:
			return "deleted"
		case RowGone:
			return "gone before its turn"
		}
		return ""
	},
	Fingerprint: func(r Row) string { return fmt.Sprintf("node=%q", forcedOf(r).Node) },
}

// podForcer force-deletes pods after each pass; it reads each pod's node
// once.
type podForcer struct {
	nodes map[string]NodeState
}

func (f *podForcer) needs(s scope) []access.Permission {
	return []access.Permission{{Verb: "delete", Resource: "pods", Namespace: s.ns.Name}}
}

// afterPass deletes the pods whose grace period is over, each saved first;
// a plan plays those whose grace period is not over yet too, saying when.
// It returns how many it deleted (or would).
func (f *podForcer) afterPass(ctx context.Context, a actor, content *deletion.ContentResult) int {
	if content.Totals.GVRToNumRemaining[deletion.PodsGVR] == 0 {
		return 0
	}
	pods, err := a.listPods(ctx)
	if err != nil {
		a.fail(ctx, deletion.PodsGVR, Failure{Verb: "list", Resource: "pods"}, err)
		return 0
	}
	deleted := 0
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp == nil {
			continue // not deleted yet
		}
		wait, now := a.until(pod.DeletionTimestamp.Time)
		if !now {
			continue // still within its grace period
		}
		fp := f.describe(ctx, a, pod)
		if wait > 0 {
			fp.AfterSeconds = int64(wait.Round(time.Second).Seconds())
		}
		row := Row{Kind: RowForcedPod, Resource: "pods", Name: pod.Name, Extra: fp}
		f.forceDelete(ctx, a, pod, &row)
		if row.Counts() {
			deleted++
		}
		a.record(func(r *Report) { r.Rows = addRow(r.Rows, row) })
	}
	return deleted
}

// forceDelete sends one pod's DELETE with grace period 0 and its UID as a
// precondition, the pod saved first.
func (f *podForcer) forceDelete(ctx context.Context, a actor, pod *v1.Pod, row *Row) {
	fp := forcedOf(*row)
	saved, err := toUnstructured(pod, "v1", "Pod")
	var sent Sent
	if err == nil {
		sent, err = a.send(ctx, Write{Verb: "delete", Resource: deletion.PodsGVR, Namespace: a.namespace(), Name: pod.Name, GracePeriod: ptr.To(int64(0)), UID: pod.UID,
			Op: "DELETE", Save: saved, Play: func(p *planState) { p.ops.ForceDelete(deletion.PodsGVR, pod.Name) },
			Change: &Change{Kind: ChangeForceDeletedPod, Resource: "pods", Name: pod.Name, Node: fp.Node, NodeState: fp.NodeState}})
	}
	switch {
	case apierrors.IsNotFound(err):
		row.Status = RowGone
	case err != nil:
		row.Status, row.Error = RowFailed, err.Error()
		row.Refusal = a.fail(ctx, deletion.PodsGVR, Failure{Verb: "force-delete", Resource: "pods", Name: pod.Name}, err)
	default:
		row.Status = pick(sent, RowDone, RowPlanned)
	}
}

// describe is a pod to force-delete: its node and how long it has been
// terminating.
func (f *podForcer) describe(ctx context.Context, a actor, pod *v1.Pod) ForcedPod {
	fp := ForcedPod{Node: pod.Spec.NodeName, NodeState: f.nodeState(ctx, a, pod.Spec.NodeName)}
	if dt := pod.DeletionTimestamp; dt != nil {
		started := dt.Add(-time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second)
		fp.TerminatingSeconds = int64(a.now().Sub(started).Round(time.Second).Seconds())
	}
	if fp.NodeState == NodeReady {
		// kubectl's own warning for --force --grace-period=0.
		a.warn(Warning{Kind: WarnNodeReady, Resource: "pods", Name: pod.Name, Node: fp.Node})
	}
	return fp
}

// nodeState reads a pod's node once per run.
func (f *podForcer) nodeState(ctx context.Context, a actor, name string) NodeState {
	if name == "" {
		return NodeUnscheduled
	}
	if s, ok := f.nodes[name]; ok {
		return s
	}
	state := NodeUnknown
	node, err := a.node(ctx, name)
	switch {
	case apierrors.IsNotFound(err):
		state = NodeMissing
	case err == nil:
		state = NodeNotReady
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
				state = NodeReady
			}
		}
	}
	f.nodes[name] = state
	return state
}
