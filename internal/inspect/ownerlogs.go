package inspect

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// Bounds on reading an owner's logs: the recent tail of a few pods, and
// of it only the lines that name the namespace, each cut. An owner that
// cannot finish repeats its refusal at every retry, so the tail has it.
const (
	ownerPodsRead   = 2
	ownerLogTail    = int64(300)
	ownerLogBytes   = int64(128 << 10)
	ownerLinesKept  = 20
	ownerLineLength = 2048
)

// ownerPods is where a running owner's pods are: its workload's namespace
// and selector.
type ownerPods struct {
	namespace string
	selector  string
}

// keepOwnerPods remembers where a finalizer's running owner has its pods:
// its workload's namespace and selector.
func (i *Inspector) keepOwnerPods(finalizer, namespace string, selector *metav1.LabelSelector) {
	if selector == nil {
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || sel.Empty() {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.ownerPods == nil {
		i.ownerPods = map[string]ownerPods{}
	}
	i.ownerPods[finalizer] = ownerPods{namespace: namespace, selector: sel.String()}
}

// ownerLogs reads, for each finalizer holding content whose owner runs,
// the recent log of a few of its pods, and keeps the lines that name the
// namespace: an owner whose cleanup is refused often says so only there.
// Reading logs is an optional permission (pods/log): without it, the
// owner is listed as unchecked and nothing else changes.
func (i *Inspector) ownerLogs(ctx context.Context, namespace string, ev *evidence) []diagnose.OwnerLog {
	var finalizers []string
	for f, s := range ev.Owners {
		if s.State == diagnose.OwnerRunningReady {
			finalizers = append(finalizers, f)
		}
	}
	sort.Strings(finalizers)
	var (
		out []diagnose.OwnerLog
		mu  sync.Mutex
		wg  sync.WaitGroup
	)
	for _, f := range finalizers {
		i.mu.Lock()
		where, ok := i.ownerPods[f]
		i.mu.Unlock()
		if !ok {
			continue
		}
		wg.Go(func() {
			logs := i.readOwnerLogs(ctx, f, where, ev)
			mu.Lock()
			defer mu.Unlock()
			for _, l := range logs {
				if lines := linesNaming(l.Lines, namespace); len(lines) > 0 {
					l.Lines = lines
					out = append(out, l)
				}
			}
		})
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b diagnose.OwnerLog) int { return strings.Compare(a.Finalizer+a.Pod, b.Finalizer+b.Pod) })
	return out
}

// readOwnerLogs reads the tails of a few running pods of an owner, once
// per inspector: the namespaces explained together share them.
func (i *Inspector) readOwnerLogs(ctx context.Context, finalizer string, where ownerPods, ev *evidence) []diagnose.OwnerLog {
	key := where.namespace + "/" + where.selector
	i.mu.Lock()
	if logs, ok := i.ownerLogCache[key]; ok {
		i.mu.Unlock()
		return withFinalizer(logs, finalizer)
	}
	i.mu.Unlock()
	pods, err := i.clients.Kube.CoreV1().Pods(where.namespace).List(ctx, metav1.ListOptions{LabelSelector: where.selector, Limit: 20})
	if err != nil {
		ev.unchecked(diagnose.UncheckedOwnerLogs, "the pods of "+where.namespace+"/"+where.selector, err)
		return nil
	}
	var logs []diagnose.OwnerLog
	for _, pod := range runningPods(pods.Items, ownerPodsRead) {
		container := pod.Spec.Containers[0].Name
		raw, err := i.clients.Kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &v1.PodLogOptions{
			Container: container, TailLines: ptrTo(ownerLogTail), LimitBytes: ptrTo(ownerLogBytes),
		}).DoRaw(ctx)
		if err != nil {
			ev.unchecked(diagnose.UncheckedOwnerLogs, fmt.Sprintf("pod %s/%s", pod.Namespace, pod.Name), err)
			continue
		}
		logs = append(logs, diagnose.OwnerLog{Pod: pod.Namespace + "/" + pod.Name, Container: container, Lines: splitLines(raw)})
	}
	i.mu.Lock()
	if i.ownerLogCache == nil {
		i.ownerLogCache = map[string][]diagnose.OwnerLog{}
	}
	i.ownerLogCache[key] = logs
	i.mu.Unlock()
	return withFinalizer(logs, finalizer)
}

// runningPods are up to n pods bound to a node and not being deleted: the
// ones with a log to read.
func runningPods(pods []v1.Pod, n int) []v1.Pod {
	var out []v1.Pod
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && len(p.Spec.Containers) > 0 && len(out) < n {
			out = append(out, p)
		}
	}
	return out
}

func withFinalizer(logs []diagnose.OwnerLog, finalizer string) []diagnose.OwnerLog {
	out := make([]diagnose.OwnerLog, len(logs))
	for k, l := range logs {
		l.Finalizer = finalizer
		out[k] = l
	}
	return out
}

// linesNaming are the last lines that name the namespace, each cut.
func linesNaming(lines []string, namespace string) []string {
	var out []string
	for _, line := range lines {
		if strings.Contains(line, namespace) {
			if len(line) > ownerLineLength {
				line = line[:ownerLineLength]
			}
			out = append(out, line)
		}
	}
	if len(out) > ownerLinesKept {
		out = out[len(out)-ownerLinesKept:]
	}
	return out
}

func splitLines(raw []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), int(ownerLogBytes))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
