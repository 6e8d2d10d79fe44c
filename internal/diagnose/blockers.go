package diagnose

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// findBlockers names every reason the namespace is still there.
func findBlockers(obs Observation, r Report, result deletion.Result) []Blocker {
	var out []Blocker
	out = append(out, apiServiceBlockers(r)...)
	out = append(out, namespaceFinalizerBlockers(r.Namespace)...)
	out = append(out, podBlockers(obs, r)...)
	out = append(out, contentBlockers(obs, r)...)
	if b := controllerBlocker(obs, r); b != nil {
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
			NextStep: fmt.Sprintf("kubectl get apiservices | grep %s  # find the aggregated API behind it", f.GroupVersion),
		}
		if s := f.APIService; s != nil {
			b.Evidence = append(b.Evidence, fmt.Sprintf("apiservice/%s Available=%s reason=%s: %s", s.Name, s.Available, s.Reason, s.Message))
			b.NextStep = fmt.Sprintf("restore the service %s behind apiservice/%s, or if that API is gone for good: kubectl delete apiservice %s", s.Service, s.Name, s.Name)
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
		dt := pod.DeletionTimestamp
		if dt == nil {
			continue
		}
		grace := int64(0)
		if pod.DeletionGracePeriodSeconds != nil {
			grace = *pod.DeletionGracePeriodSeconds
		}
		if obs.Now.Sub(dt.Time) > time.Duration(grace)*time.Second {
			stuck = append(stuck, fmt.Sprintf("pod/%s on node %q terminating since %s (grace %ds)", pod.Name, pod.Spec.NodeName, dt.UTC().Format(time.RFC3339), grace))
		}
	}
	if len(stuck) == 0 {
		return nil
	}
	sort.Strings(stuck)
	return []Blocker{{
		Kind:     BlockerPods,
		Summary:  fmt.Sprintf("%d pod(s) outlived their grace period; pods are deleted first, so the controller deletes nothing else while they remain", len(stuck)),
		Evidence: firstN(stuck, 5),
		NextStep: fmt.Sprintf("check the pods' nodes (kubectl get nodes); if a node is gone for good: kubectl delete pods --all -n %s --grace-period=0 --force", r.Namespace.Name),
	}}
}

func contentBlockers(obs Observation, r Report) []Blocker {
	var out []Blocker
	for _, c := range r.Content {
		gvr := schema.GroupVersionResource{Group: c.Group, Version: c.Version, Resource: c.Resource}
		res := resourceName(gvr)
		switch {
		case c.Error != "" && isForbidden(obs.Snapshot.ListErrs[gvr]):
			out = append(out, Blocker{
				Kind: BlockerForbidden, Summary: fmt.Sprintf("you may not list %s here, so what it holds is unknown", res),
				Evidence: []string{c.Error},
				NextStep: fmt.Sprintf("kubectl auth can-i list %s -n %s  # ask for list access (docs/rbac.md)", res, r.Namespace.Name),
			})
		case c.Error != "":
			out = append(out, Blocker{
				Kind: BlockerListFailed, Summary: fmt.Sprintf("%s cannot be listed, so the controller cannot delete it", res),
				Evidence: []string{c.Error},
				NextStep: fmt.Sprintf("kubectl get %s -n %s  # fix the API behind it (CRD, conversion webhook, aggregated API)", res, r.Namespace.Name),
			})
		case len(c.Finalizers) > 0 && c.Resource != "pods":
			out = append(out, finalizerBlocker(c, res, r.Namespace.Name))
		}
	}
	return out
}

func finalizerBlocker(c Content, res, namespace string) Blocker {
	var evidence, names []string
	for f, n := range c.Finalizers {
		names = append(names, f)
		evidence = append(evidence, fmt.Sprintf("%s on %d of %d %s", f, n, c.Count, res))
	}
	sort.Strings(evidence)
	sort.Strings(names)
	evidence = append(evidence, "e.g. "+strings.Join(c.Examples, ", "))
	owner := "the controller that added it"
	if known, ok := wellKnownFinalizers[names[0]]; ok {
		owner = known
	}
	return Blocker{
		Kind:     BlockerFinalizers,
		Summary:  fmt.Sprintf("%d %s wait for finalizer(s) %s; owner: %s", c.Count, res, strings.Join(names, ", "), owner),
		Evidence: evidence,
		NextStep: fmt.Sprintf("make sure %s runs; if it is gone for good: kubectl ns-doctor purge %s --remove-finalizers=%s", owner, namespace, names[0]),
	}
}

// wellKnownFinalizers names who removes the built-in finalizers.
var wellKnownFinalizers = map[string]string{
	"kubernetes.io/pvc-protection":     "kube-controller-manager's pvc-protection controller, once no pod uses the claim",
	"kubernetes.io/pv-protection":      "kube-controller-manager's pv-protection controller, once no claim is bound",
	"foregroundDeletion":               "the garbage collector, once every dependent with blockOwnerDeletion is gone",
	"orphan":                           "the garbage collector, once it has orphaned the dependents",
	"batch.kubernetes.io/job-tracking": "the job controller",
	"external-attacher/csi":            "the CSI external-attacher",
}

func controllerBlocker(obs Observation, r Report) *Blocker {
	if len(obs.Namespace.Status.Conditions) > 0 || r.Namespace.DeletionTimestamp == nil {
		return nil
	}
	since := obs.Now.Sub(*r.Namespace.DeletionTimestamp)
	if since < controllerGrace {
		return nil
	}
	return &Blocker{
		Kind:     BlockerControllerNotRunning,
		Summary:  "no namespace controller has looked at this namespace: it has no deletion conditions",
		Evidence: []string{fmt.Sprintf("deleted %s ago, status.conditions empty", since.Round(time.Second))},
		NextStep: fmt.Sprintf("check kube-controller-manager is running with the namespace controller; or run the pass yourself: kubectl ns-doctor purge %s", r.Namespace.Name),
	}
}

// resourceName renders a resource the way kubectl accepts it.
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... and %d more", len(s)-n))
	}
	return s
}
