package diagnose

import (
	"slices"
	"sort"
	"strings"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/compat"
)

// denialBlockers names each webhook the namespace controller says denied
// it: the webhook answers, so no down backend explains it, only its
// policy.
func denialBlockers(obs Observation, r Report) []Blocker {
	seen := map[string]bool{}
	var out []Blocker
	for _, c := range r.Conditions {
		if c.Controller == nil {
			continue
		}
		for _, d := range denials(c.Controller.Message) {
			if !seen[d[0]] {
				seen[d[0]] = true
				out = append(out, DenialBlocker(obs, d[0], d[1], DeniedController))
			}
		}
		for _, name := range apierror.FailedWebhooks(c.Controller.Message) {
			// A webhook from kube-apiserver's disk has no configuration
			// for the webhook blockers to find: it is told here.
			if staticAdmission(obs, name) && !seen["failing/"+name] {
				seen["failing/"+name] = true
				f := &DenialFacts{Webhook: name, Static: true, Failing: true, Message: c.Controller.Message, Source: DeniedController}
				out = append(out, Blocker{Kind: BlockerWebhook, Subject: name, Facts: f})
			}
		}
		for _, d := range apierror.PolicyDenials(c.Controller.Message) {
			switch {
			case seen["policy/"+d.Policy]:
			case d.Policy == RescueHoldPolicy(obs.Namespace.Name):
				seen["policy/"+d.Policy] = true
				out = append(out, rescueHoldBlocker(obs, d))
			default:
				seen["policy/"+d.Policy] = true
				out = append(out, PolicyDenialBlocker(obs, d, DeniedController))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Subject < out[j].Subject })
	return out
}

// denials are every webhook denial a message quotes, as pairs of webhook
// and words.
func denials(text string) [][2]string {
	var out [][2]string
	for _, d := range apierror.Denials(text) {
		out = append(out, [2]string{d.Webhook, d.Denial})
	}
	return out
}

// DenialOf reads a webhook's denial out of an API error's text: the
// webhook's name and its message; ok false when it is no denial.
func DenialOf(text string) (webhook, message string, ok bool) {
	e := apierror.ClassifyMessage(text)
	if e.Kind != apierror.WebhookDenied {
		return "", "", false
	}
	return e.Webhook, e.Denial, true
}

// DenialBlocker is a WebhookDenies blocker for webhook, whose words were
// message, its configuration looked up in obs.
func DenialBlocker(obs Observation, webhook, message string, source DenialSource) Blocker {
	f := &DenialFacts{Webhook: webhook, Message: strings.TrimSpace(message), Source: source, Static: staticAdmission(obs, webhook)}
	if f.Static {
		return f.Blocker(obs.Namespace.Name)
	}
	for _, wh := range obs.Webhooks {
		if wh.Name == webhook {
			f.Configuration, f.ConfigurationKind = wh.Configuration, configurationKind(wh)
			break
		}
	}
	return f.Blocker(obs.Namespace.Name)
}

// PolicyDenialBlocker is a WebhookDenies blocker for a
// ValidatingAdmissionPolicy's denial: a policy answers in kube-apiserver
// itself, with no backend to be down.
func PolicyDenialBlocker(obs Observation, d apierror.Error, source DenialSource) Blocker {
	f := &DenialFacts{Webhook: d.Policy, Policy: true, Binding: d.Binding, Message: d.Denial, Source: source, Static: staticAdmission(obs, d.Policy)}
	return f.Blocker(obs.Namespace.Name)
}

// staticAdmission tells a webhook or policy loaded from kube-apiserver's
// disk (1.37+): a policy's name, or a webhook's, carrying the suffix the
// API server reserves for them; or a webhook (whose own name need not
// carry it) found in none of the configurations the API serves, when
// both kinds could be read.
func staticAdmission(obs Observation, name string) bool {
	if !obs.Ordering.Server.Has(compat.StaticAdmission) {
		return false
	}
	if compat.StaticName(name) {
		return true
	}
	if !obs.Ordering.Server.Known {
		return false // a webhook missing from the API is only a guess then
	}
	for _, u := range obs.Unchecked {
		if u.Subject == UncheckedValidatingWebhooks || u.Subject == UncheckedMutatingWebhooks {
			return false
		}
	}
	return !slices.ContainsFunc(obs.Webhooks, func(wh Webhook) bool { return wh.Name == name })
}

// Blocker is the WebhookDenies blocker of namespace for the denial: the
// step past it is the run-scoped bypass, or removing the configuration
// (a policy's binding) once its policy is known not to matter any more;
// none for one loaded from kube-apiserver's disk, which has no API object.
func (f *DenialFacts) Blocker(namespace string) Blocker {
	b := Blocker{Kind: BlockerWebhookDenies, Subject: f.Webhook, Facts: f}
	switch {
	case f.Static:
		return b
	case f.Policy && f.Binding != "":
		b.Actions = []Action{{Kind: ActionDeleteWebhookConfiguration, Namespace: namespace, Target: "validatingadmissionpolicybinding/" + f.Binding}}
		return b
	}
	if f.Configuration != "" {
		b.Subject = f.Configuration
		b.Actions = []Action{
			PurgeAction(namespace, FlagBypassWebhook, f.Configuration),
			{Kind: ActionDeleteWebhookConfiguration, Namespace: namespace, Target: f.ConfigurationKind + "/" + f.Configuration},
		}
	}
	return b
}
