package inspect

import (
	"context"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// maxStuckPods bounds the pods past their grace period whose node is read:
// the ones a report names.
const maxStuckPods = 5

// nodeRead is a node's state as read.
type nodeRead struct {
	state     diagnose.NodeState
	since     *time.Time
	unchecked *diagnose.Unchecked
}

// podNodes reads, for the pods past their grace period (the first few by
// name), their node (a Table row: never their spec) and its state: a node
// gone, or whose kubelet stopped reporting, will never confirm their end.
// Getting nodes is optional: without it their state is Unknown.
func (i *Inspector) podNodes(ctx context.Context, namespace string, snap *deletion.Snapshot, ev *evidence) []diagnose.PodNode {
	now := time.Now()
	var names []string
	for _, p := range snap.Pods {
		if dt := p.DeletionTimestamp; dt != nil && now.After(dt.Time) {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 || i.clients.Placement == nil {
		return nil
	}
	sort.Strings(names)
	if len(names) > maxStuckPods {
		names = names[:maxStuckPods]
	}
	nodes, err := i.clients.Placement.NodesOf(ctx, namespace, names)
	if err != nil {
		ev.uncheckedOnce(diagnose.Unchecked{Subject: diagnose.UncheckedPods, Name: "in " + namespace, Error: err.Error()})
	}
	var out []diagnose.PodNode
	for _, pod := range names {
		node, ok := nodes[pod]
		if !ok {
			continue
		}
		n := i.inference.nodes.get(node, func() nodeRead { return i.readNode(ctx, node) })
		if n.unchecked != nil {
			ev.uncheckedOnce(*n.unchecked)
		}
		out = append(out, diagnose.PodNode{Pod: pod, Node: node, State: n.state, Since: n.since})
	}
	return out
}

// readNode reads a node's Ready condition: gone, not ready since when, or
// ready.
func (i *Inspector) readNode(ctx context.Context, name string) nodeRead {
	if name == "" {
		return nodeRead{state: diagnose.NodeUnscheduled}
	}
	node, err := i.clients.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nodeRead{state: diagnose.NodeMissing}
	case err != nil:
		return nodeRead{state: diagnose.NodeUnknown, unchecked: &diagnose.Unchecked{Subject: diagnose.UncheckedNode, Name: name, Error: err.Error()}}
	case node.DeletionTimestamp != nil:
		t := node.DeletionTimestamp.UTC()
		return nodeRead{state: diagnose.NodeMissing, since: &t}
	}
	r := nodeRead{state: diagnose.NodeNotReady}
	for _, c := range node.Status.Conditions {
		if c.Type != v1.NodeReady {
			continue
		}
		if c.Status == v1.ConditionTrue {
			return nodeRead{state: diagnose.NodeReady}
		}
		if !c.LastTransitionTime.IsZero() {
			t := c.LastTransitionTime.UTC()
			r.since = &t
		}
	}
	return r
}
