package inspect

import (
	"context"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// When the namespace controller says it failed to delete a namespace's
// content while the namespace's own lists succeed, the cause may be a
// type that fails across namespaces: a custom resource whose conversion
// webhook is down fails wherever an object must be converted, and its
// storage's failure reaches the controller's requests in namespaces that
// hold none. The types that may be that cause are listed across
// namespaces, a few objects each: those read through a conversion
// webhook, and those the controller's message names (by resource or by
// kind). Each once per inspector.

// Bounds of the probes: the types listed for one namespace, and the
// objects each list asks for.
const (
	maxProbes  = 5
	probeLimit = 10
)

// probes lists the candidate types across namespaces when the
// controller's ContentFailure is True; none otherwise.
func (i *Inspector) probes(ctx context.Context, ns *v1.Namespace, snap *deletion.Snapshot, disc *kube.Discovery) []diagnose.Probe {
	msg := contentFailure(ns)
	if msg == "" || snap == nil {
		return nil
	}
	var out []diagnose.Probe
	for _, gvr := range i.probeCandidates(msg, snap, disc) {
		err := i.probed.get(gvr, func() error {
			_, err := i.clients.Metadata.Resource(gvr).List(ctx, metav1.ListOptions{Limit: probeLimit})
			return err
		})
		out = append(out, diagnose.Probe{Resource: gvr, Err: err})
	}
	return out
}

// contentFailure is the controller's message when its NamespaceDeletionContentFailure
// is True.
func contentFailure(ns *v1.Namespace) string {
	for _, c := range ns.Status.Conditions {
		if c.Type == v1.NamespaceDeletionContentFailure && c.Status == v1.ConditionTrue {
			return c.Message
		}
	}
	return ""
}

// probeCandidates are the discovered types, listed without error in the
// namespace, that are read through a conversion webhook or that the
// controller's message names: a few, in a stable order.
func (i *Inspector) probeCandidates(msg string, snap *deletion.Snapshot, disc *kube.Discovery) []schema.GroupVersionResource {
	said := apierror.ClassifyMessage(msg)
	converted := map[schema.GroupResource]bool{}
	for _, crd := range i.crds {
		if crd.ConversionService != nil {
			converted[schema.GroupResource{Group: crd.Group, Resource: crd.Plural}] = true
		}
	}
	var out []schema.GroupVersionResource
	resources := disc.DeletableResources()
	gvrs := make([]schema.GroupVersionResource, 0, len(resources))
	for gvr := range resources {
		gvrs = append(gvrs, gvr)
	}
	slices.SortFunc(gvrs, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	for _, gvr := range gvrs {
		r := resources[gvr]
		if snap.ListErrs[gvr] != nil || !hasVerb(r.Verbs, "list") || len(out) == maxProbes {
			continue
		}
		named := strings.Contains(msg, deletion.ResourceName(gvr)) || said.ObjectKind != "" && said.ObjectKind == r.Kind && said.Group == gvr.Group
		if converted[gvr.GroupResource()] || named && gvr.Group != "" {
			out = append(out, gvr)
		}
	}
	return out
}
