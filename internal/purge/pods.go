package purge

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

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
}

// ChangeForceDeletedPod: --force-delete-pods.
const ChangeForceDeletedPod ChangeKind = "ForceDeletedPod"

// podForcer force-deletes pods after each pass; it reads each pod's node
// once.
type podForcer struct {
	nodes map[string]NodeState
}

func (f *podForcer) needs(s scope) []Permission {
	return []Permission{{Verb: "delete", Resource: "pods", Namespace: s.ns.Name}}
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
		f.forceDelete(ctx, a, pod, &fp)
		if fp.Status == ForceDeleted || fp.Status == ForcePlanned {
			deleted++
		}
		a.record(func(r *Report) { r.ForcedPods = appendForced(r.ForcedPods, fp) })
	}
	return deleted
}

// forceDelete sends one pod's DELETE with grace period 0 and its UID as a
// precondition, the pod saved first.
func (f *podForcer) forceDelete(ctx context.Context, a actor, pod *v1.Pod, fp *ForcedPod) {
	saved, err := toUnstructured(pod, "v1", "Pod")
	var sent Sent
	if err == nil {
		sent, err = a.send(ctx, Write{Verb: "delete", Resource: deletion.PodsGVR, Namespace: a.namespace(), Name: pod.Name, GracePeriod: ptr.To(int64(0)), UID: pod.UID,
			Op: "DELETE", Save: saved, Play: func(p *planState) { p.ops.ForceDelete(deletion.PodsGVR, pod.Name) },
			Change: &Change{Kind: ChangeForceDeletedPod, Resource: "pods", Name: pod.Name, Node: fp.Node, NodeState: fp.NodeState}})
	}
	switch {
	case apierrors.IsNotFound(err):
		fp.Status = ForceGone
	case err != nil:
		fp.Status, fp.Error = ForceFailed, err.Error()
		fp.Refusal = a.fail(ctx, deletion.PodsGVR, Failure{Verb: "force-delete", Resource: "pods", Name: pod.Name}, err)
	default:
		fp.Status = pick(sent, ForceDeleted, ForcePlanned)
	}
}

// describe is a pod to force-delete: its node and how long it has been
// terminating.
func (f *podForcer) describe(ctx context.Context, a actor, pod *v1.Pod) ForcedPod {
	fp := ForcedPod{Name: pod.Name, Node: pod.Spec.NodeName, NodeState: f.nodeState(ctx, a, pod.Spec.NodeName)}
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

// appendForced adds fp unless the same pod with the same status is there.
func appendForced(list []ForcedPod, fp ForcedPod) []ForcedPod {
	for _, x := range list {
		if x.Name == fp.Name && x.Status == fp.Status {
			return list
		}
	}
	return append(list, fp)
}
