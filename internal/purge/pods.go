package purge

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// forceDeletePods deletes with grace period 0 the pods being deleted whose
// grace period is over (--force-delete-pods): their kubelet never
// confirmed (a lost node, a dead kubelet). Each is saved first. A plan
// plays the pods whose grace period is not over yet too, saying when. It
// returns how many it deleted (or would).
func (r *run) forceDeletePods(ctx context.Context, content *deletion.ContentResult) int {
	if content.Totals.GVRToNumRemaining[deletion.PodsGVR] == 0 {
		return 0
	}
	pods, err := r.w.listPods(ctx, r.ns())
	if err != nil {
		r.fail(Failure{Verb: "list", Resource: "pods", Error: err.Error()})
		return 0
	}
	deleted := 0
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp == nil {
			continue // not deleted yet
		}
		wait, now := r.w.until(pod.DeletionTimestamp.Time)
		if !now {
			continue // still within its grace period
		}
		fp := r.forcedPod(ctx, pod)
		if wait > 0 {
			fp.AfterSeconds = int64(wait.Round(time.Second).Seconds())
		}
		fp.Status, fp.Error = r.forceDelete(ctx, pod, &fp)
		if fp.Status == ForceDeleted || fp.Status == ForcePlanned {
			deleted++
		}
		r.report.ForcedPods = appendForced(r.report.ForcedPods, fp)
	}
	return deleted
}

// forceDelete sends one pod's DELETE with grace period 0 and its UID as a
// precondition, the pod saved first.
func (r *run) forceDelete(ctx context.Context, pod *v1.Pod, fp *ForcedPod) (ForceStatus, string) {
	saved, err := toUnstructured(pod, "v1", "Pod")
	if err == nil {
		_, err = r.w.send(ctx, Write{Verb: "delete", Resource: deletion.PodsGVR, Namespace: r.ns(), Name: pod.Name, GracePeriod: ptr.To(int64(0)), UID: pod.UID,
			Op: "DELETE", Save: saved, Play: func(p *deletion.PlanOps, _ *deletion.PlanNamespaces) { p.ForceDelete(deletion.PodsGVR, pod.Name) }})
	}
	switch {
	case apierrors.IsNotFound(err):
		return ForceGone, ""
	case err != nil:
		fp.Refusal = r.whoRefused(ctx, deletion.PodsGVR, err)
		r.fail(Failure{Verb: "force-delete", Resource: "pods", Name: pod.Name, Error: err.Error(), Refusal: fp.Refusal})
		return ForceFailed, err.Error()
	}
	r.changed(Change{Kind: ChangeForceDeletedPod, Resource: "pods", Name: pod.Name, Node: fp.Node, NodeState: fp.NodeState})
	return done(r, ForceDeleted, ForcePlanned), ""
}

// forcedPod describes a pod to force-delete: its node and how long it has
// been terminating.
func (r *run) forcedPod(ctx context.Context, pod *v1.Pod) ForcedPod {
	fp := ForcedPod{Name: pod.Name, Node: pod.Spec.NodeName, NodeState: r.nodeState(ctx, pod.Spec.NodeName)}
	if dt := pod.DeletionTimestamp; dt != nil {
		started := dt.Add(-time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second)
		fp.TerminatingSeconds = int64(r.now().Sub(started).Round(time.Second).Seconds())
	}
	if fp.NodeState == NodeReady {
		// kubectl's own warning for --force --grace-period=0.
		r.warn(Warning{Kind: WarnNodeReady, Resource: "pods", Name: pod.Name, Node: fp.Node})
	}
	return fp
}

// nodeState reads a pod's node once per run.
func (r *run) nodeState(ctx context.Context, name string) NodeState {
	if name == "" {
		return NodeUnscheduled
	}
	if s, ok := r.nodes[name]; ok {
		return s
	}
	state := NodeUnknown
	node, err := r.Clients.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
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
	if r.nodes == nil {
		r.nodes = map[string]NodeState{}
	}
	r.nodes[name] = state
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
