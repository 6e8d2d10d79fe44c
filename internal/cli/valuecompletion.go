package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// completionTimeout bounds the requests of one completion: a shell waits
// for it. kubectl's own completion names 5 s as the bound it should have.
const completionTimeout = 5 * time.Second

// completionNoFile: a value from the cluster, never a file name.
const completionNoFile = cobra.ShellCompDirectiveNoFileComp

// registerValueCompletions completes purge's escalation values from what
// the named namespace holds: one discovery and one metadata sweep of it,
// silent on any error (a completion cannot report one).
func registerValueCompletions(cmd *cobra.Command, flags *genericclioptions.ConfigFlags) {
	_ = cmd.RegisterFlagCompletionFunc("remove-finalizers", completeFromNamespace(flags, finalizerValues))
	_ = cmd.RegisterFlagCompletionFunc("bypass-webhook", completeFromNamespace(flags, webhookValues))
}

// completeFromNamespace completes a comma-separated list flag with
// values(obs), obs being the first NAME's (or -n's) content; the values
// already typed are kept in front and not offered again.
func completeFromNamespace(flags *genericclioptions.ConfigFlags, values func(diagnose.Observation) []completionValue) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		name := completionNamespace(flags, args)
		if name == "" {
			return nil, completionNoFile
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		obs, ok := observeForCompletion(ctx, flags, name)
		if !ok {
			return nil, completionNoFile
		}
		cut := strings.LastIndex(toComplete, ",") + 1
		typed, current := strings.Split(toComplete[:cut], ","), toComplete[cut:]
		var out []string
		for _, v := range values(obs) {
			if strings.HasPrefix(v.value, current) && !slices.Contains(typed, v.value) {
				out = append(out, toComplete[:cut]+v.value+"\t"+v.description)
			}
		}
		return out, completionNoFile
	}
}

// completionValue is one value offered, with what the shell shows beside
// it.
type completionValue struct{ value, description string }

// completionNamespace is the namespace whose values are offered: the
// first NAME, else -n.
func completionNamespace(flags *genericclioptions.ConfigFlags, args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	if flags.Namespace != nil {
		return *flags.Namespace
	}
	return ""
}

// observeForCompletion reads the namespace as explain does (compact: the
// objects holding finalizers, counts of the rest).
func observeForCompletion(ctx context.Context, flags *genericclioptions.ConfigFlags, name string) (diagnose.Observation, bool) {
	clients, err := kube.NewClients(flags)
	if err != nil {
		return diagnose.Observation{}, false
	}
	in := inspect.New(clients, inspect.Config{Compact: true})
	ns, err := in.Namespace(ctx, name)
	if err != nil {
		return diagnose.Observation{}, false
	}
	obs, err := in.Observe(ctx, ns, inspect.Options{})
	return obs, err == nil
}

// finalizerValues are the finalizers on the namespace's objects, the most
// common first, each with how many objects carry it.
func finalizerValues(obs diagnose.Observation) []completionValue {
	counts := map[string]int{}
	for _, list := range obs.Snapshot.Lists {
		if list == nil {
			continue
		}
		for _, item := range list.Items {
			for _, f := range item.Finalizers {
				counts[f]++
			}
		}
	}
	out := make([]completionValue, 0, len(counts))
	for f, n := range counts {
		out = append(out, completionValue{f, fmt.Sprintf("on %d object%s", n, plural(n))})
	}
	sort.Slice(out, func(i, j int) bool {
		if counts[out[i].value] != counts[out[j].value] {
			return counts[out[i].value] > counts[out[j].value]
		}
		return out[i].value < out[j].value
	})
	return out
}

// webhookValues are the webhook configurations whose webhooks a purge of
// the namespace would meet, with the writes they catch.
func webhookValues(obs diagnose.Observation) []completionValue {
	seen := map[string]bool{}
	var out []completionValue
	for _, wh := range obs.Webhooks {
		if seen[wh.Configuration] {
			continue
		}
		seen[wh.Configuration] = true
		caught := diagnose.WebhookCatches(obs, wh.Configuration)
		if len(caught) == 0 {
			continue
		}
		what := strings.Join(caught[:min(len(caught), 3)], ", ")
		if len(caught) > 3 {
			what += fmt.Sprintf(" and %d more", len(caught)-3)
		}
		out = append(out, completionValue{wh.Configuration, strings.ToLower(wh.Type) + ": catches " + what})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].value < out[j].value })
	return out
}

// orphanNames are the former namespaces that left content in storage
// (one metadata sweep of the cluster), for NAME after --orphans.
func orphanNames(ctx context.Context, flags *genericclioptions.ConfigFlags, prefix string) []string {
	clients, err := kube.NewClients(flags)
	if err != nil {
		return nil
	}
	obs, err := inspect.New(clients, inspect.Config{}).Orphans(ctx, "")
	if err != nil {
		return nil
	}
	var out []string
	for _, ns := range diagnose.Orphans(obs).Namespaces {
		if strings.HasPrefix(ns.Name, prefix) {
			out = append(out, ns.Name)
		}
	}
	sort.Strings(out)
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
