package diagnose

import (
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
)

// findBlockers names every reason the namespace is still there.
func findBlockers(obs Observation, r Report, result deletion.ContentResult) []Blocker {
	var out []Blocker
	out = append(out, apiServiceBlockers(r)...)
	out = append(out, namespaceFinalizerBlockers(r.Namespace)...)
	out = append(out, podBlockers(obs, r)...)
	out = append(out, contentBlockers(obs, r)...)
	out = append(out, webhookBlockers(obs, r)...)
	if b := controllerBlocker(obs, r, result); b != nil {
		out = append(out, *b)
	}
	return out
}

func apiServiceBlockers(r Report) []Blocker {
	var out []Blocker
	for _, f := range r.Discovery.Failures {
		b := Blocker{
			Kind:     BlockerAPIServiceUnavailable,
			Summary:  fmt.Sprintf("API group %s cannot be discovered, so the namespace controller will not finalize any namespace", f.GroupVersion),
			Evidence: []string{"discovery: " + f.Error},
			NextStep: fmt.Sprintf("kubectl get apiservice %s  # the aggregated API behind %s", apiServiceName(f.GroupVersion), f.GroupVersion),
		}
		if s := f.APIService; s != nil {
			b.Evidence = append(b.Evidence, fmt.Sprintf("apiservice/%s Available=%s reason=%s: %s", s.Name, s.Available, s.Reason, s.Message))
			if s.Backend != nil {
				b.Evidence = append(b.Evidence, fmt.Sprintf("service %s: %s", s.Service, describeService(*s.Backend)))
			}
			b.NextStep = fmt.Sprintf("restore the service %s behind apiservice/%s, or if that API is gone for good: kubectl delete apiservice %s", s.Service, s.Name, s.Name)
			if s.Service == "" {
				b.NextStep = fmt.Sprintf("apiservice/%s is served by kube-apiserver itself: check its logs; kubectl get apiservice %s -o yaml", s.Name, s.Name)
			}
			if note, ok := readOnlyGroups[groupOf(f.GroupVersion)]; ok {
				b.Evidence = append(b.Evidence, note)
			} else {
				b.Evidence = append(b.Evidence, "what this group holds in the namespace cannot be known while its API is down; deleting the APIService orphans any such content in storage")
			}
			if s.SelfHosted {
				b.Kind = BlockerSelfHostedAPIService
				b.Summary = fmt.Sprintf("apiservice/%s is served from this very namespace: deleting it took its own API down, which blocks its deletion", s.Name)
				b.NextStep = fmt.Sprintf("kubectl delete apiservice %s  # the backend is being deleted with the namespace anyway", s.Name)
			}
		}
		out = append(out, b)
	}
	return out
}

func namespaceFinalizerBlockers(ns Namespace) []Blocker {
	var out []Blocker
	for _, f := range ns.SpecFinalizers {
		if f == "kubernetes" {
			continue
		}
		out = append(out, Blocker{
			Kind:     BlockerNamespaceFinalizer,
			Summary:  fmt.Sprintf("spec.finalizers holds %q, which only the system that added it removes", f),
			Evidence: []string{"spec.finalizers: " + strings.Join(ns.SpecFinalizers, ", ")},
			NextStep: fmt.Sprintf("check the system that owns %q; if it is gone: kubectl ns-doctor purge %s --remove-namespace-finalizers", f, ns.Name),
		})
	}
	if len(ns.MetadataFinalizers) > 0 {
		out = append(out, Blocker{
			Kind:     BlockerNamespaceFinalizer,
			Summary:  "metadata.finalizers of the namespace itself is not empty",
			Evidence: []string{"metadata.finalizers: " + strings.Join(ns.MetadataFinalizers, ", ")},
			NextStep: fmt.Sprintf("kubectl patch namespace %s --type=merge -p '{\"metadata\":{\"finalizers\":null}}'  # once their owner is known to be gone", ns.Name),
		})
	}
	return out
}

func podBlockers(obs Observation, r Report) []Blocker {
	if r.Pods == nil {
		return nil
	}
	var stuck []string
	for _, pod := range obs.Snapshot.Pods {
		// A pod's deletionTimestamp is when its grace period ends.
		if dt := pod.DeletionTimestamp; dt != nil && obs.Now.After(dt.Time) {
			stuck = append(stuck, fmt.Sprintf("pod/%s: grace period ended %s ago", pod.Name, obs.Now.Sub(dt.Time).Round(time.Second)))
		}
	}
	if len(stuck) == 0 {
		return nil
	}
	sort.Strings(stuck)
	return []Blocker{{
		Kind:     BlockerPods,
		Summary:  podsSummary(len(stuck), obs.Ordering.Ordered),
		Evidence: firstN(stuck, 5),
		NextStep: fmt.Sprintf("check the pods' nodes (kubectl get pods -n %s -o wide; kubectl get nodes); if a node is gone for good: kubectl ns-doctor purge %s --force-delete-pods  # the plan says each pod's node and whether it is Ready", r.Namespace.Name, r.Namespace.Name),
	}}
}

func podsSummary(n int, ordered bool) string {
	if ordered {
		return fmt.Sprintf("%d pod(s) outlived their grace period; pods are deleted first, so the controller deletes nothing else while they remain", n)
	}
	return fmt.Sprintf("%d pod(s) outlived their grace period; the namespace cannot go while they remain (this controller deletes the rest meanwhile)", n)
}

func contentBlockers(obs Observation, r Report) []Blocker {
	var out []Blocker
	for _, c := range r.Content {
		gvr := schema.GroupVersionResource{Group: c.Group, Version: c.Version, Resource: c.Resource}
		res := resourceName(gvr)
		switch {
		case c.Error != "" && notSupported(obs.Snapshot.ListErrs[gvr]):
			// The controller skips resources answering 404/405 to list.
		case c.Error != "" && isForbidden(obs.Snapshot.ListErrs[gvr]):
			out = append(out, Blocker{
				Kind: BlockerForbidden, Summary: fmt.Sprintf("you may not list %s here, so what it holds is unknown", res),
				Evidence: []string{c.Error},
				NextStep: fmt.Sprintf("kubectl auth can-i list %s -n %s  # ask for list access (docs/rbac.md)", res, r.Namespace.Name),
			})
		case c.Error != "" && conversionDown(obs, gvr) != nil:
			crd := findCRD(obs.CRDs, gvr)
			out = append(out, Blocker{
				Kind:     BlockerConversionWebhook,
				Summary:  fmt.Sprintf("%s cannot be read: the conversion webhook of CRD %s is down", res, crd.Name),
				Evidence: []string{c.Error, fmt.Sprintf("conversion service %s: %s", crd.ConversionService.Key(), describeService(*conversionDown(obs, gvr)))},
				NextStep: fmt.Sprintf("restore service %s; if that operator is gone for good, set spec.conversion.strategy=None: kubectl patch crd %s --type=merge -p '{\"spec\":{\"conversion\":{\"strategy\":\"None\",\"webhook\":null}}}'", crd.ConversionService.Key(), crd.Name),
			})
		case c.Error != "":
			out = append(out, listFailedBlocker(obs, c, gvr, r.Namespace.Name))
		case len(c.Finalizers) > 0 && c.Resource != "pods" && waitedLongEnough(obs, c):
			b := finalizerBlocker(c, res, r.Namespace.Name, obs.Evidence.Owners)
			if c.Finalizers["foregroundDeletion"] > 0 {
				b.Evidence = append(b.Evidence, foregroundWaits(obs.Snapshot, gvr)...)
			}
			if crd := findCRD(obs.CRDs, gvr); crd != nil && crd.Deleting {
				b.Kind = BlockerCRDDeleting
				b.Summary = fmt.Sprintf("CRD %s is itself being deleted and waits for these %d instances; their finalizers (%s) need a controller that was likely uninstalled with the CRD", crd.Name, c.Count, strings.Join(sortedKeys(c.Finalizers), ", "))
				b.Evidence = append(b.Evidence, fmt.Sprintf("customresourcedefinition/%s has a deletionTimestamp", crd.Name))
			}
			out = append(out, b)
		}
	}
	return out
}

// listFailedBlocker names the aggregated API behind a type when there is
// one: it answered discovery, so its backend broke afterwards or fails only
// some requests.
func listFailedBlocker(obs Observation, c Content, gvr schema.GroupVersionResource, namespace string) Blocker {
	res := resourceName(gvr)
	b := Blocker{
		Kind: BlockerListFailed, Summary: fmt.Sprintf("%s cannot be listed, so the controller cannot delete it", res),
		Evidence: []string{c.Error},
		NextStep: fmt.Sprintf("kubectl get %s -n %s  # fix the API behind it (CRD, conversion webhook, aggregated API)", res, namespace),
	}
	svc := findAPIService(obs.APIServices, gvr.GroupVersion())
	if svc == nil || svc.Spec.Service == nil {
		return b
	}
	a := apiServiceOf(svc, namespace)
	b.Summary = fmt.Sprintf("%s cannot be listed: its aggregated API (apiservice/%s) fails the request, so the controller cannot delete it", res, a.Name)
	b.Evidence = append(b.Evidence, fmt.Sprintf("apiservice/%s Available=%s: discovery answered, the list did not", a.Name, a.Available))
	if state, ok := obs.Services[a.Service]; ok {
		b.Evidence = append(b.Evidence, fmt.Sprintf("service %s: %s", a.Service, describeService(state)))
	}
	b.NextStep = fmt.Sprintf("check the backend of apiservice/%s (service %s, its pods and logs); if that API is gone for good: kubectl delete apiservice %s", a.Name, a.Service, a.Name)
	return b
}

func finalizerBlocker(c Content, res, namespace string, owners map[string]OwnerState) Blocker {
	var evidence, removers []string
	names := sortedKeys(c.Finalizers)
	for _, f := range names {
		evidence = append(evidence, fmt.Sprintf("%s on %d of %d %s", f, c.Finalizers[f], c.Count, res))
		e := finalizers.Lookup(f)
		if e == nil {
			removers = append(removers, "unknown owner of "+f)
			continue
		}
		remover := e.Owner
		if state, ok := owners[f]; ok {
			remover += " (" + ownerWords(state) + ")"
			evidence = append(evidence, fmt.Sprintf("%s: owner %s; %s", f, e.Owner, state.Evidence))
		}
		removers = append(removers, remover)
		evidence = append(evidence, fmt.Sprintf("stripping %s leaks: %s", f, e.Leak))
	}
	evidence = append(evidence, "e.g. "+strings.Join(c.Examples, ", "))
	return Blocker{
		Kind:     BlockerFinalizers,
		Summary:  fmt.Sprintf("%d %s wait for finalizer(s) %s; removed by: %s", c.Count, res, strings.Join(names, ", "), strings.Join(removers, "; ")),
		Evidence: evidence,
		NextStep: fmt.Sprintf("check that whoever removes them still runs; if it is gone for good: kubectl ns-doctor purge %s --remove-finalizers=%s", namespace, strings.Join(names, ",")),
	}
}

// ownerWords says in a few words whether an owner runs.
func ownerWords(s OwnerState) string {
	switch s.State {
	case OwnerRunningReady:
		return "running"
	case OwnerNotReady:
		return "not ready"
	case OwnerNotFound:
		return "not running: none of its usual workloads found"
	case OwnerControlPlane:
		return "control plane"
	case OwnerNotChecked:
		return "not checked"
	}
	return "could not be checked"
}

// waitedLongEnough tells whether content waiting for finalizers has waited
// past the grace period (or the namespace is only imagined deleted).
func waitedLongEnough(obs Observation, c Content) bool {
	if obs.IfDeleted {
		return true
	}
	return c.OldestDeletion != nil && obs.Now.Sub(*c.OldestDeletion) >= obs.Grace
}

// controllerBlocker suspects a missing or stalled namespace controller: no
// conditions long after deletion, or content it would delete still there.
func controllerBlocker(obs Observation, r Report, result deletion.ContentResult) *Blocker {
	if r.Namespace.DeletionTimestamp == nil {
		return nil
	}
	since := obs.Now.Sub(*r.Namespace.DeletionTimestamp)
	if since < obs.Grace {
		return nil
	}
	b := &Blocker{
		Kind:     BlockerControllerNotRunning,
		NextStep: fmt.Sprintf("check that kube-controller-manager runs the namespace controller; or run the pass yourself: kubectl ns-doctor purge %s", r.Namespace.Name),
	}
	if len(obs.Namespace.Status.Conditions) == 0 {
		b.Summary = "no namespace controller has looked at this namespace: it has no deletion conditions"
		b.Evidence = []string{fmt.Sprintf("deleted %s ago, status.conditions is empty", since.Round(time.Second))}
		return b
	}
	if deletable := deletableLeft(obs, result, WebhookRejections(obs)); len(deletable) > 0 {
		b.Summary = "content the namespace controller deletes at once is still there: the controller is not running or not keeping up"
		b.Evidence = append([]string{fmt.Sprintf("deleted %s ago", since.Round(time.Second))}, firstN(deletable, 5)...)
		return b
	}
	return nil
}

// deletableLeft names items a pass would delete outright (no finalizers,
// not terminating), unless pods legitimately hold them back.
func deletableLeft(obs Observation, result deletion.ContentResult, rejected map[schema.GroupVersionResource]error) []string {
	if result.PodsBlocked {
		return nil
	}
	var out []string
	for _, gvr := range obs.Snapshot.SortedGVRs() {
		list := obs.Snapshot.Lists[gvr]
		// A webhook rejecting the DELETE explains it better.
		if list == nil || rejected[gvr] != nil {
			continue
		}
		for _, item := range list.Items {
			if item.DeletionTimestamp == nil && len(item.Finalizers) == 0 {
				out = append(out, resourceName(gvr)+"/"+item.Name+" is not even marked for deletion")
				break
			}
		}
	}
	return out
}

func resourceName(gvr schema.GroupVersionResource) string { return deletion.ResourceName(gvr) }

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... and %d more", len(s)-n))
	}
	return s
}

func findCRD(crds []CRD, gvr schema.GroupVersionResource) *CRD {
	for i := range crds {
		if crds[i].Group == gvr.Group && crds[i].Plural == gvr.Resource {
			return &crds[i]
		}
	}
	return nil
}

// conversionDown returns the state of a CRD's conversion webhook backend
// when it is down.
func conversionDown(obs Observation, gvr schema.GroupVersionResource) *ServiceState {
	crd := findCRD(obs.CRDs, gvr)
	if crd == nil || crd.ConversionService == nil {
		return nil
	}
	state, ok := obs.Services[crd.ConversionService.Key()]
	if !ok || !state.Down() {
		return nil
	}
	return &state
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// readOnlyGroups are well-known aggregated APIs that serve no deletable
// namespaced content: deleting their broken APIService loses nothing.
var readOnlyGroups = map[string]string{
	"metrics.k8s.io":          "metrics.k8s.io (metrics-server) serves read-only pod and node metrics: no namespaced content to lose",
	"custom.metrics.k8s.io":   "custom.metrics.k8s.io serves read-only metrics: no namespaced content to lose",
	"external.metrics.k8s.io": "external.metrics.k8s.io serves read-only metrics: no namespaced content to lose",
}

// apiServiceName is the name an APIService for a group-version has.
func apiServiceName(groupVersion string) string {
	if i := strings.LastIndex(groupVersion, "/"); i >= 0 {
		return groupVersion[i+1:] + "." + groupVersion[:i]
	}
	return groupVersion
}

func groupOf(groupVersion string) string {
	if i := strings.LastIndex(groupVersion, "/"); i >= 0 {
		return groupVersion[:i]
	}
	return ""
}

// foregroundWaits names the dependents that keep an owner with the
// foregroundDeletion finalizer: the garbage collector removes it only once
// every dependent with blockOwnerDeletion is gone.
func foregroundWaits(snap *deletion.Snapshot, owner schema.GroupVersionResource) []string {
	owners := map[string]string{}
	if list := snap.Lists[owner]; list != nil {
		for _, item := range list.Items {
			for _, f := range item.Finalizers {
				if f == "foregroundDeletion" {
					owners[string(item.UID)] = item.Name
				}
			}
		}
	}
	var out []string
	for _, gvr := range snap.SortedGVRs() {
		list := snap.Lists[gvr]
		if list == nil {
			continue
		}
		for _, item := range list.Items {
			for _, ref := range item.OwnerReferences {
				name, ok := owners[string(ref.UID)]
				if ok && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
					out = append(out, fmt.Sprintf("%s/%s waits (foregroundDeletion) for its dependent %s/%s", resourceName(owner), name, resourceName(gvr), item.Name))
				}
			}
		}
	}
	return firstN(out, 5)
}

func notSupported(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)
}
