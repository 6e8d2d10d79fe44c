package deletion

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// FinalizerToken is the namespace finalizer the namespace controller owns.
const FinalizerToken = v1.FinalizerKubernetes

// This file mirrors the namespace steps of upstream's Delete:
// retryOnConflictError and finalizeNamespace.

// updateNamespaceFunc changes a namespace and returns the result.
type updateNamespaceFunc func(ctx context.Context, ns *v1.Namespace) (*v1.Namespace, error)

// RetryOnConflict runs fn, re-reading the namespace after each conflict,
// and gives up if the namespace was re-created (its UID changed): a new
// namespace of the same name is not the one being deleted.
func RetryOnConflict(ctx context.Context, client corev1client.NamespaceInterface, ns *v1.Namespace, fn updateNamespaceFunc) (*v1.Namespace, error) {
	latest := ns
	for {
		result, err := fn(ctx, latest)
		if err == nil {
			return result, nil
		}
		if !errors.IsConflict(err) {
			return nil, err
		}
		prev := latest
		if latest, err = client.Get(ctx, latest.Name, metav1.GetOptions{}); err != nil {
			return nil, err
		}
		if prev.UID != latest.UID {
			return nil, fmt.Errorf("namespace uid has changed across retries")
		}
	}
}

// Finalized tells whether spec.finalizers is empty.
func Finalized(ns *v1.Namespace) bool { return len(ns.Spec.Finalizers) == 0 }

// FinalizeFunc returns upstream's finalizeNamespace: PUT the finalize
// subresource with spec.finalizers minus the tokens to drop (upstream
// drops only "kubernetes"). dryRun sends it with dryRun=All.
func FinalizeFunc(client corev1client.NamespaceInterface, drop map[v1.FinalizerName]bool, dryRun bool) updateNamespaceFunc {
	return func(ctx context.Context, ns *v1.Namespace) (*v1.Namespace, error) {
		finalize := v1.Namespace{ObjectMeta: ns.ObjectMeta, Spec: ns.Spec}
		finalize.Spec.Finalizers = KeptFinalizers(ns, drop)
		opts := metav1.UpdateOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		result, err := client.Finalize(ctx, &finalize, opts)
		if errors.IsNotFound(err) {
			return result, nil
		}
		return result, err
	}
}

// KeptFinalizers is spec.finalizers without the dropped tokens, sorted and
// deduplicated as upstream does.
func KeptFinalizers(ns *v1.Namespace, drop map[v1.FinalizerName]bool) []v1.FinalizerName {
	set := map[v1.FinalizerName]bool{}
	for _, f := range ns.Spec.Finalizers {
		if !drop[f] {
			set[f] = true
		}
	}
	out := make([]v1.FinalizerName, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
