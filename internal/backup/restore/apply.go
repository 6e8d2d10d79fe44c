package restore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ns-doctor/ns-doctor/internal/backup"
)

// applier applies a plan's steps, run after run (batches.go): an owner's
// new uid is known before its dependents go.
type applier struct {
	*Restorer
	into string
	// uids maps a saved object's uid to its restored copy's; mu guards
	// it while a run's applies write it.
	mu   sync.Mutex
	uids map[string]types.UID
	// accountReady: the namespace's default ServiceAccount is there.
	accountReady bool
}

// one applies one step, or tells why it is left out.
func (a *applier) one(ctx context.Context, s backup.Step) Object {
	o := objectOf(s)
	if s.Verdict != backup.Restore {
		return o
	}
	obj := copyOf(s, a.into)
	o.Notes = append(o.Notes, a.mapOwners(obj)...)
	applied, notes, err := a.apply(ctx, s, obj)
	o.Notes = append(o.Notes, notes...)
	if err != nil {
		o.Status, o.Why = Failed, err.Error()
		return o
	}
	if s.UID != "" {
		a.mu.Lock()
		a.uids[s.UID] = applied.GetUID()
		a.mu.Unlock()
	}
	return o
}

// needsAccount tells the steps that wait for the ServiceAccount
// controller's default account: what runs (admission refuses a pod whose
// account is missing) and what is applied onto it.
func needsAccount(s backup.Step) bool {
	if s.Rule == "default-serviceaccount-additions" {
		return true
	}
	workloads := backup.Order()[len(backup.Order())-1].Resources
	return slices.Contains(workloads, s.GroupResource())
}

func (a *applier) waitForDefaultAccount(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, a.Wait, true, func(ctx context.Context) (bool, error) {
		_, err := a.Clients.Kube.CoreV1().ServiceAccounts(a.into).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("the ServiceAccount controller made no default account in %s within %s (is it running?): %w", a.into, a.Wait, err)
	}
	return nil
}

// mapOwners points each owner reference at the restored owner's uid; one
// whose owner was not applied (it failed) is dropped, so the garbage
// collector does not delete the object.
func (a *applier) mapOwners(obj *unstructured.Unstructured) []string {
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	var kept []metav1.OwnerReference
	var notes []string
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range refs {
		uid, ok := a.uids[string(r.UID)]
		if !ok {
			notes = append(notes, fmt.Sprintf("owner reference to %s %s dropped: the owner was not restored", r.Kind, r.Name))
			continue
		}
		r.UID = uid
		kept = append(kept, r)
	}
	obj.SetOwnerReferences(kept)
	return notes
}

// apply sends a server-side apply as ns-doctor's field manager; a node
// port another Service holds is given up and the apply sent again, which
// the notes say.
func (a *applier) apply(ctx context.Context, s backup.Step, obj *unstructured.Unstructured) (*unstructured.Unstructured, []string, error) {
	res := a.Clients.Dynamic.Resource(s.GroupVersionResource()).Namespace(a.into)
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	applied, err := res.Apply(ctx, obj.GetName(), obj, opts)
	taken := takenNodePorts(err)
	if len(taken) == 0 {
		return applied, nil, err
	}
	was := nodePorts(obj)
	dropNodePorts(obj, taken)
	applied, err = res.Apply(ctx, obj.GetName(), obj, opts)
	if err != nil {
		return nil, nil, err
	}
	now := nodePorts(applied)
	var notes []string
	for _, i := range taken {
		notes = append(notes, fmt.Sprintf("node port %d was taken by another Service: given %d", was[i], now[i]))
	}
	return applied, notes, nil
}

// takenNodePorts reads, from the API server's refusal, the ports whose
// node port another Service holds (field spec.ports[i].nodePort, "provided
// port is already allocated").
func takenNodePorts(err error) []int {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) || !apierrors.IsInvalid(err) || status.Status().Details == nil {
		return nil
	}
	var out []int
	for _, c := range status.Status().Details.Causes {
		rest, ok := strings.CutPrefix(c.Field, "spec.ports[")
		index, field, found := strings.Cut(rest, "]")
		if !ok || !found || field != ".nodePort" || !strings.Contains(c.Message, "already allocated") {
			continue
		}
		if i, err := strconv.Atoi(index); err == nil {
			out = append(out, i)
		}
	}
	return out
}

func nodePorts(obj *unstructured.Unstructured) []int64 {
	ports, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ports")
	out := make([]int64, len(ports))
	for i, p := range ports {
		out[i], _, _ = unstructured.NestedInt64(asMap(p), "nodePort")
	}
	return out
}

func dropNodePorts(obj *unstructured.Unstructured, indexes []int) {
	ports, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ports")
	for _, i := range indexes {
		if i < len(ports) {
			delete(asMap(ports[i]), "nodePort")
		}
	}
	_ = unstructured.SetNestedSlice(obj.Object, ports, "spec", "ports")
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
