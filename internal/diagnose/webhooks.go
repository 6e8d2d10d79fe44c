package diagnose

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
)

// Rejections are the API server's answers, predicted (each a
// *PredictedRejection), to the writes a deletion pass and purge's
// escalations send, from fail-closed webhooks whose backend is down.
type Rejections struct {
	// Delete: a DELETE of content (deletecollection, delete, a pod's
	// force-delete).
	Delete map[schema.GroupVersionResource]error
	// Update: the UPDATE (a patch) that removes an object's finalizers.
	Update map[schema.GroupVersionResource]error
	// Finalize: the UPDATE of namespaces/finalize.
	Finalize error
}

// WebhookRejections predicts the answer to a DELETE of each remaining
// resource, so the predicted ContentDeletionFailed condition matches the
// controller's.
func WebhookRejections(obs Observation) map[schema.GroupVersionResource]error {
	return PredictRejections(obs, nil).Delete
}

// PredictRejections predicts every rejection, leaving out the webhooks of
// the configurations named in bypassed (purge --bypass-webhook).
func PredictRejections(obs Observation, bypassed map[string]bool) Rejections {
	out := Rejections{Delete: map[schema.GroupVersionResource]error{}, Update: map[schema.GroupVersionResource]error{}}
	for _, wh := range obs.Webhooks {
		if bypassed[wh.Configuration] || wh.FailurePolicy != string(admissionregv1.Fail) || wh.Service == nil || !selects(wh.NamespaceSelector, obs.Namespace.Labels) {
			continue
		}
		state, known := obs.Services[wh.Service.Key()]
		if !known || !state.Down() {
			continue
		}
		for gvr, list := range obs.Snapshot.Lists {
			if list == nil {
				continue
			}
			for _, op := range matchingOperations(wh.Rules, gvr) {
				verdicts := map[string]map[schema.GroupVersionResource]error{"DELETE": out.Delete, "UPDATE": out.Update}[op]
				if _, done := verdicts[gvr]; !done && catchesItem(wh, op, list.Items) {
					verdicts[gvr] = &PredictedRejection{Webhook: wh, Backend: state}
				}
			}
		}
		if out.Finalize == nil && catchesFinalize(wh, obs.Namespace.Labels) {
			out.Finalize = &PredictedRejection{Webhook: wh, Backend: state}
		}
	}
	return out
}

// WebhookCatches lists what a configuration's webhooks would be called
// for among the writes a purge of the namespace sends, whatever their
// backend's state: "DELETE <resource>", "UPDATE <resource>" (removing
// finalizers), "UPDATE namespaces/finalize".
func WebhookCatches(obs Observation, configuration string) []string {
	seen := map[string]bool{}
	for _, wh := range obs.Webhooks {
		if wh.Configuration != configuration || !selects(wh.NamespaceSelector, obs.Namespace.Labels) {
			continue
		}
		for gvr, list := range obs.Snapshot.Lists {
			if list == nil {
				continue
			}
			for _, op := range matchingOperations(wh.Rules, gvr) {
				if catchesItem(wh, op, list.Items) {
					seen[op+" "+resourceName(gvr)] = true
				}
			}
		}
		if catchesFinalize(wh, obs.Namespace.Labels) {
			seen["UPDATE namespaces/finalize"] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// catchesFinalize tells whether a webhook's rules catch the UPDATE of the
// namespace's finalize subresource.
func catchesFinalize(wh Webhook, nsLabels map[string]string) bool {
	if !selects(wh.ObjectSelector, nsLabels) {
		return false
	}
	for _, rule := range wh.Rules {
		if rule.Scope != nil && *rule.Scope == admissionregv1.NamespacedScope {
			continue
		}
		if !anyOf(rule.APIGroups, "") || !anyOf(rule.APIVersions, "v1") {
			continue
		}
		resources := false
		for _, r := range rule.Resources {
			resources = resources || r == "*/*" || r == "namespaces/*" || r == "namespaces/finalize" || r == "*/finalize"
		}
		for _, op := range rule.Operations {
			if resources && (op == admissionregv1.OperationAll || op == admissionregv1.Update) {
				return true
			}
		}
	}
	return false
}

// PredictedRejection is a plan's predicted answer to a write a
// fail-closed webhook catches while its backend is down: who refuses, and
// the state of its backend, typed. Its text is kube-apiserver's answer
// word for word (apierror builds it as kube-apiserver does), so the
// predicted conditions read as the controller's; nothing reads it back:
// apierror.Classify and WhoRefused ask the value.
type PredictedRejection struct {
	Webhook Webhook
	Backend ServiceState
}

func (p *PredictedRejection) Error() string { return p.answer().Error() }

// Unwrap is the Status kube-apiserver answers, so whoever reads a Status
// (apierrors.IsInternalError) reads the prediction as the real answer.
func (p *PredictedRejection) Unwrap() error { return p.answer() }

// APIError is the prediction, classified.
func (p *PredictedRejection) APIError() apierror.Error {
	return apierror.Error{Kind: apierror.WebhookFailed, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError, Webhook: p.Webhook.Name}
}

// answer is the failed call: a POST to the webhook's Service, which does
// not exist or has no ready endpoint.
func (p *PredictedRejection) answer() error {
	svc := p.Webhook.Service
	if svc == nil {
		svc = &ServiceRef{} // PredictRejections predicts only for a Service backend
	}
	path := svc.Path
	if path == "" {
		path = "/"
	}
	target := fmt.Sprintf("https://%s.%s.svc:%d%s?timeout=%ds", svc.Name, svc.Namespace, svc.Port, path, p.Webhook.TimeoutSeconds)
	return apierror.WebhookCallFailure(p.Webhook.Name, apierror.ServiceCallError(target, svc.Name, p.Backend.Exists))
}

// refusal is who refuses: the webhook, its configuration and its
// backend, which is down.
func (p *PredictedRejection) refusal() *Refusal {
	backend := p.Backend
	r := &Refusal{By: RefusedByWebhook, Webhook: p.Webhook.Name, Configuration: p.Webhook.Configuration, ConfigurationKind: configurationKind(p.Webhook),
		ServiceState: &backend, Outside: backend.Down()}
	if p.Webhook.Service != nil {
		r.Service = p.Webhook.Service.Key()
	}
	return r
}

// configurationKind is the resource of a webhook's configuration.
func configurationKind(wh Webhook) string {
	return strings.ToLower(wh.Type) + "webhookconfiguration"
}

// webhookBlockers finds fail-closed webhooks whose backend is down and whose
// rules catch the DELETE of remaining content or the UPDATE that removes
// its finalizers: the API server rejects those requests, so neither the
// controller nor the finalizers' owners can make progress.
func webhookBlockers(obs Observation, r Report) []Blocker {
	var out []Blocker
	for _, wh := range obs.Webhooks {
		if wh.FailurePolicy != string(admissionregv1.Fail) || wh.Service == nil {
			continue
		}
		state, known := obs.Services[wh.Service.Key()]
		if !known || !state.Down() {
			continue
		}
		if !selects(wh.NamespaceSelector, obs.Namespace.Labels) {
			continue
		}
		caught := caughtResources(wh, obs)
		if len(caught) == 0 {
			continue
		}
		out = append(out, webhookBlocker(wh, state, caught, r.Namespace.Name))
	}
	return out
}

func webhookBlocker(wh Webhook, state ServiceState, caught []Caught, namespace string) Blocker {
	target := configurationKind(wh) + "/" + wh.Configuration
	b := Blocker{
		Kind: BlockerWebhook, Subject: wh.Configuration,
		Facts: &WebhookFacts{Webhook: wh, Service: state, Caught: caught},
		Actions: []Action{
			{Kind: ActionRestoreService, Namespace: namespace, Target: wh.Service.Key(), Of: target},
			PurgeAction(namespace, FlagBypassWebhook, wh.Configuration),
			{Kind: ActionDeleteWebhookConfiguration, Namespace: namespace, Target: target},
		},
	}
	b.Actions[0] = backendStep(namespace, wh.Service.Key(), &state, b.Actions[0])
	switch {
	case wh.Installer.Removed() && wh.Service.Namespace != namespace:
		// Its lifecycle manager uninstalled the operator and left the
		// configuration: nothing will serve it again, and it refuses
		// what it catches in every namespace it selects. Deleting it is
		// the fix; the bypass is for this namespace only.
		b.Actions = []Action{b.Actions[2], b.Actions[1]}
	case wh.Service.Namespace == namespace:
		b.Kind = BlockerSelfHostedWebhook
		b.Actions = b.Actions[1:]
	case state.Unrestorable():
		// Its Service's namespace is being deleted: the Service cannot
		// come back there.
		b.Actions = b.Actions[1:]
	}
	return b
}

// caughtResources lists the remaining resource types the webhook's rules
// catch for DELETE or UPDATE, honouring its objectSelector.
func caughtResources(wh Webhook, obs Observation) []Caught {
	var out []Caught
	for gvr, list := range obs.Snapshot.Lists {
		if list == nil || len(list.Items) == 0 {
			continue
		}
		var caught []string
		for _, op := range matchingOperations(wh.Rules, gvr) {
			if catchesItem(wh, op, list.Items) {
				caught = append(caught, op)
			}
		}
		if len(caught) > 0 {
			out = append(out, Caught{Resource: resourceName(gvr), Operations: caught})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

// catchesItem: a DELETE matters for any selected item, an UPDATE only for
// one whose finalizers someone has to remove.
func catchesItem(wh Webhook, op string, items []metav1.PartialObjectMetadata) bool {
	for i := range items {
		if !selects(wh.ObjectSelector, items[i].Labels) {
			continue
		}
		if op == "DELETE" || len(items[i].Finalizers) > 0 {
			return true
		}
	}
	return false
}

// matchingOperations returns DELETE and/or UPDATE when a rule covers gvr.
func matchingOperations(rules []admissionregv1.RuleWithOperations, gvr schema.GroupVersionResource) []string {
	found := map[string]bool{}
	for _, rule := range rules {
		if !ruleCovers(rule.Rule, gvr) {
			continue
		}
		for _, op := range rule.Operations {
			switch op {
			case admissionregv1.OperationAll:
				found["DELETE"], found["UPDATE"] = true, true
			case admissionregv1.Delete, admissionregv1.Update:
				found[string(op)] = true
			}
		}
	}
	var out []string
	for _, op := range []string{"DELETE", "UPDATE"} {
		if found[op] {
			out = append(out, op)
		}
	}
	return out
}

func ruleCovers(rule admissionregv1.Rule, gvr schema.GroupVersionResource) bool {
	if rule.Scope != nil && *rule.Scope == admissionregv1.ClusterScope {
		return false
	}
	return anyOf(rule.APIGroups, gvr.Group) && anyOf(rule.APIVersions, gvr.Version) && coversResource(rule.Resources, gvr.Resource)
}

func anyOf(list []string, v string) bool {
	for _, x := range list {
		if x == "*" || x == v {
			return true
		}
	}
	return false
}

// coversResource matches the main resource: "*", "*/*", "res" and "res/*";
// rules that name only subresources ("pods/status") do not catch DELETE.
func coversResource(list []string, resource string) bool {
	for _, x := range list {
		if x == "*" || x == "*/*" || x == resource || x == resource+"/*" {
			return true
		}
	}
	return false
}

// selects evaluates a label selector the way admission does: nil or empty
// selects everything; an invalid one selects nothing.
func selects(sel *metav1.LabelSelector, set map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(set))
}
