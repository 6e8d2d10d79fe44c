package diagnose

import (
	"regexp"
	"sort"
	"strings"
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

// denials reads every webhook denial a message quotes, as pairs of
// webhook and words. The controller joins its errors with ", ": a
// denial's words end where the next denial starts.
func denials(text string) [][2]string {
	idx := deniedAt.FindAllStringSubmatchIndex(text, -1)
	var out [][2]string
	for i, m := range idx {
		end := len(text)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		words := strings.TrimSuffix(strings.TrimSpace(text[m[1]:end]), ",")
		out = append(out, [2]string{text[m[2]:m[3]], strings.TrimPrefix(words, ": ")})
	}
	return out
}

// deniedAt finds where each denial starts.
var deniedAt = regexp.MustCompile(`admission webhook "([^"]+)" denied the request`)

// DenialOf reads a webhook's denial out of an API error's text: the
// webhook's name and its message; ok false when it is no denial.
func DenialOf(text string) (webhook, message string, ok bool) {
	d := denials(text)
	if len(d) == 0 {
		return "", "", false
	}
	return d[0][0], d[0][1], true
}

// DenialBlocker is a WebhookDenies blocker for webhook, whose words were
// message, its configuration looked up in obs.
func DenialBlocker(obs Observation, webhook, message string, source DenialSource) Blocker {
	f := &DenialFacts{Webhook: webhook, Message: strings.TrimSpace(message), Source: source}
	for _, wh := range obs.Webhooks {
		if wh.Name == webhook {
			f.Configuration, f.ConfigurationKind = wh.Configuration, strings.ToLower(wh.Type)+"webhookconfiguration"
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
