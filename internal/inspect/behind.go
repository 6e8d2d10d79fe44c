package inspect

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// maxBehindPods bounds the pods of a backend that are listed, and
// maxNotReadyPods those whose reason is kept: a report names examples.
const (
	maxBehindPods   = 100
	maxNotReadyPods = 2
	maxWorkloads    = 3
)

// behind follows a Service that exists but has no ready endpoint to what
// its selector selects: the workloads whose pod template it matches, and
// why their pods are not ready. "Restore the service" would send the
// reader to what is there; what is not ready is behind it. Nil for a
// Service without a selector (its endpoints are someone else's to keep).
func (i *Inspector) behind(ctx context.Context, svc *v1.Service) *diagnose.ServiceBackend {
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	b := &diagnose.ServiceBackend{Selector: sel.String()}
	where := "behind service " + svc.Namespace + "/" + svc.Name
	ws, err := i.namespaceWorkloads(ctx, svc.Namespace)
	if err != nil {
		i.uncheck(diagnose.UncheckedWorkloads, where, err)
	}
	for _, w := range ws {
		if sel.Matches(labels.Set(w.template)) && len(b.Workloads) < maxWorkloads {
			b.Workloads = append(b.Workloads, w.state)
		}
	}
	pods, err := i.clients.Kube.CoreV1().Pods(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String(), Limit: maxBehindPods})
	if err != nil {
		i.uncheck(diagnose.UncheckedWorkloads, where, fmt.Errorf("listing its pods: %w", err))
		return b
	}
	b.Pods = len(pods.Items)
	sort.Slice(pods.Items, func(a, c int) bool { return pods.Items[a].Name < pods.Items[c].Name })
	for _, p := range pods.Items {
		if len(b.NotReady) == maxNotReadyPods {
			break
		}
		if !podReady(p) {
			b.NotReady = append(b.NotReady, diagnose.PodNotReady{Name: p.Name, Phase: string(p.Status.Phase), Why: whyNotReady(p)})
		}
	}
	return b
}

// selected is a workload with the labels of its pods.
type selected struct {
	state    diagnose.WorkloadState
	template map[string]string
}

// namespaceWorkloads lists a namespace's Deployments, StatefulSets and
// DaemonSets with their pod templates' labels.
func (i *Inspector) namespaceWorkloads(ctx context.Context, namespace string) ([]selected, error) {
	apps := i.clients.Kube.AppsV1()
	var out []selected
	add := func(kind string, m metav1.ObjectMeta, tmpl map[string]string, ready, want int32) {
		out = append(out, selected{diagnose.WorkloadState{WorkloadRef: diagnose.WorkloadRef{Kind: kind, Namespace: m.Namespace, Name: m.Name}, Ready: ready, Want: want}, tmpl})
	}
	ds, err := apps.Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing deployments: %w", err)
	}
	for _, d := range ds.Items {
		add("Deployment", d.ObjectMeta, d.Spec.Template.Labels, d.Status.ReadyReplicas, replicas(d.Spec.Replicas))
	}
	ss, err := apps.StatefulSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, fmt.Errorf("listing statefulsets: %w", err)
	}
	for _, s := range ss.Items {
		add("StatefulSet", s.ObjectMeta, s.Spec.Template.Labels, s.Status.ReadyReplicas, replicas(s.Spec.Replicas))
	}
	dss, err := apps.DaemonSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, fmt.Errorf("listing daemonsets: %w", err)
	}
	for _, d := range dss.Items {
		add("DaemonSet", d.ObjectMeta, d.Spec.Template.Labels, d.Status.NumberReady, d.Status.DesiredNumberScheduled)
	}
	return out, nil
}

func podReady(p v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// whyNotReady is what a pod says of why it is not ready: not scheduled
// (and the scheduler's reason), a container waiting or ended (and its
// reason), or being deleted; empty when it says nothing (no scheduler
// has looked at it yet).
func whyNotReady(p v1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "being deleted"
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status != v1.ConditionTrue {
			return strings.TrimSpace("not scheduled: " + c.Reason + ": " + c.Message)
		}
	}
	for _, cs := range append(append([]v1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			return strings.TrimSpace(fmt.Sprintf("container %s waiting: %s: %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message))
		case cs.State.Terminated != nil:
			return strings.TrimSpace(fmt.Sprintf("container %s ended: %s (exit code %d)", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode))
		case !cs.Ready:
			return fmt.Sprintf("container %s not ready (%d restarts)", cs.Name, cs.RestartCount)
		}
	}
	if p.Spec.NodeName == "" {
		return "not scheduled yet"
	}
	return ""
}
