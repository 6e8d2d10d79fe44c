package inspect

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// ErrNamespaceExists: the leftovers asked for are of a namespace that
// exists, whose content is not orphaned.
var ErrNamespaceExists = fmt.Errorf("the namespace exists")

// Orphans finds objects whose namespace no longer exists, in every
// namespaced type (metadata only, paged, the types listed concurrently),
// or only those of the former namespace only. An object of a namespace
// that exists is never one: namespaces are listed first, and a namespace
// its objects name is looked up again before it is reported gone (one may
// have been created meanwhile).
func (i *Inspector) Orphans(ctx context.Context, only string) (diagnose.OrphanObservation, error) {
	obs := diagnose.OrphanObservation{Lists: map[schema.GroupVersionResource][]metav1.PartialObjectMetadata{}, Now: time.Now()}
	disc, err := i.Discover(ctx)
	if err != nil {
		return obs, err
	}
	existing := map[string]bool{}
	if only != "" {
		if _, err := i.Namespace(ctx, only); err == nil {
			return obs, fmt.Errorf("namespace %s: %w", only, ErrNamespaceExists)
		} else if !apierrors.IsNotFound(err) {
			return obs, err
		}
	} else {
		list, err := i.clients.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return obs, fmt.Errorf("listing namespaces: %w", err)
		}
		for _, ns := range list.Items {
			existing[ns.Name] = true
		}
	}
	var gvrs []schema.GroupVersionResource
	for gvr, r := range disc.DeletableResources() {
		if hasVerb(r.Verbs, "list") {
			gvrs = append(gvrs, gvr)
		}
	}
	keep := func(m *metav1.PartialObjectMetadata) bool { return m.Namespace != "" && !existing[m.Namespace] }
	lists := kube.Sweep(ctx, i.clients, only, gvrs, kube.SweepOptions{Keep: keep})
	if err := ctx.Err(); err != nil {
		return obs, err
	}
	for gvr, err := range lists.Errs {
		if !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			obs.Unchecked = append(obs.Unchecked, diagnose.Unchecked{Subject: diagnose.UncheckedResource, Name: deletion.ResourceName(gvr), Error: err.Error()})
		}
	}
	gone := i.stillGone(ctx, lists)
	for gvr, list := range lists.Items {
		for _, item := range list.Items {
			if gone[item.Namespace] {
				obs.Lists[gvr] = append(obs.Lists[gvr], item)
			}
		}
	}
	return obs, nil
}

// stillGone looks up again each namespace the leftovers name.
func (i *Inspector) stillGone(ctx context.Context, lists *kube.Lists) map[string]bool {
	gone := map[string]bool{}
	for _, list := range lists.Items {
		for _, item := range list.Items {
			if _, seen := gone[item.Namespace]; seen {
				continue
			}
			_, err := i.Namespace(ctx, item.Namespace)
			gone[item.Namespace] = apierrors.IsNotFound(err)
		}
	}
	return gone
}
