package purge

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// forceDeletePods deletes with grace period 0 the pods being deleted whose
// grace period is over: their kubelet never confirmed (a lost node, a dead
// kubelet). Each is saved first. It returns how many it deleted.
func (r *run) forceDeletePods(ctx context.Context) int {
	list, err := r.Clients.Kube.CoreV1().Pods(r.Opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		r.report.Errors = appendNew(r.report.Errors, fmt.Sprintf("listing pods to force-delete: %v", err))
		return 0
	}
	deleted := 0
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.DeletionTimestamp == nil || r.now().Before(pod.DeletionTimestamp.Time) {
			continue // not deleted yet, or still within its grace period
		}
		fp := r.forcedPod(ctx, pod)
		if err := r.savePod(pod); err != nil {
			fp.Status, fp.Error = ForceFailed, err.Error()
		} else {
			err = r.Clients.Kube.CoreV1().Pods(r.Opts.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
				GracePeriodSeconds: ptr.To(int64(0)), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
			switch {
			case apierrors.IsNotFound(err):
				fp.Status = ForceGone
			case err != nil:
				fp.Status, fp.Error = ForceFailed, err.Error()
			default:
				fp.Status = ForceDeleted
				deleted++
				r.change("force-deleted pod %s (grace period 0; node %s: %s), saved first", pod.Name, orNone(fp.Node), fp.NodeState)
			}
		}
		if fp.Status == ForceFailed {
			r.report.Errors = appendNew(r.report.Errors, fmt.Sprintf("force-deleting pod %s: %s", pod.Name, fp.Error))
		}
		r.report.ForcedPods = appendForced(r.report.ForcedPods, fp)
	}
	return deleted
}

// planForcePods plays the force-deletion of the pods a plan's pass leaves
// terminating: sent as dry runs in server mode, refused in a client plan
// when a fail-closed webhook catches it. It returns how many it played.
func (r *run) planForcePods(ctx context.Context, planOps *deletion.PlanOps, pods map[string]*v1.Pod, server bool) int {
	left, err := planOps.List(ctx, deletion.PodsGVR, r.Opts.Namespace)
	if err != nil {
		return 0
	}
	played := 0
	for _, item := range left.Items {
		pod := pods[item.Name]
		if item.DeletionTimestamp == nil || pod == nil || r.refused["pods/"+item.Name] {
			continue
		}
		fp := r.forcedPod(ctx, pod)
		fp.Status = ForcePlanned
		if pod.DeletionTimestamp == nil {
			// Deleted by this plan's first pass: its grace period starts now.
			fp.AfterSeconds = ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, 30)
		} else if wait := pod.DeletionTimestamp.Sub(r.now()); wait > 0 {
			fp.AfterSeconds = int64(wait.Round(time.Second).Seconds())
		}
		if err := r.forceDeleteDryRun(ctx, pod.Name, server); err != nil {
			fp.Status, fp.Error = ForceFailed, err.Error()
			r.refused["pods/"+item.Name] = true
			r.report.Errors = appendNew(r.report.Errors, fmt.Sprintf("force-delete pod %s: %v", pod.Name, err))
		} else {
			planOps.ForceDelete(deletion.PodsGVR, item.Name)
			played++
		}
		r.report.ForcedPods = appendForced(r.report.ForcedPods, fp)
	}
	return played
}

// forceDeleteDryRun asks the server (server mode) or the prediction
// (client mode) whether a force-delete would be accepted.
func (r *run) forceDeleteDryRun(ctx context.Context, name string, server bool) error {
	if !server {
		return r.rejections.Delete[deletion.PodsGVR]
	}
	err := r.Clients.Kube.CoreV1().Pods(r.Opts.Namespace).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To(int64(0)), DryRun: []string{metav1.DryRunAll}})
	return r.unlessBypassed(err, "force-delete pod "+name)
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
		r.report.Warnings = appendNew(r.report.Warnings, fmt.Sprintf("pod %s is on node %s, which is Ready: force deletion does not wait for confirmation that its containers stopped; they may continue to run on the node", pod.Name, fp.Node))
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

func (r *run) savePod(pod *v1.Pod) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	return r.bk.Save(deletion.PodsGVR, u)
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

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
