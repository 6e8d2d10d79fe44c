package diagnose

import (
	"sort"
	"strings"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
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
	f := &DenialFacts{Webhook: webhook, Message: strings.TrimSpace(message), Source: source}
	for _, wh := range obs.Webhooks {
		if wh.Name == webhook {
			f.Configuration, f.ConfigurationKind = wh.Configuration, configurationKind(wh)
			break
		}
	}
	return f.Blocker(obs.Namespace.Name)
}

// Blocker is the WebhookDenies blocker of namespace for the denial: the
// step past it is the run-scoped bypass, or removing the configuration
// once its policy is known not to matter any more.
func (f *DenialFacts) Blocker(namespace string) Blocker {
	b := Blocker{Kind: BlockerWebhookDenies, Subject: f.Webhook, Facts: f}
	if f.Configuration != "" {
		b.Subject = f.Configuration
		b.Actions = []Action{
			PurgeAction(namespace, FlagBypassWebhook, f.Configuration),
			{Kind: ActionDeleteWebhookConfiguration, Namespace: namespace, Target: f.ConfigurationKind + "/" + f.Configuration},
		}
	}
	return b
}
