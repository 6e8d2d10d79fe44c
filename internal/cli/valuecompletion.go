package cli

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// completionTimeout bounds the requests of one completion: a shell waits
// for it. kubectl's own completion names 5 s as the bound it should have.
const completionTimeout = 5 * time.Second

// completionNoFile: a value from the cluster, never a file name.
const completionNoFile = cobra.ShellCompDirectiveNoFileComp

// completeFromNamespace completes a comma-separated list flag with
// values(obs), obs being the first NAME's (or -n's) content; the values
// already typed are kept in front and not offered again.
func completeFromNamespace(flags *genericclioptions.ConfigFlags, values func(diagnose.Observation) []purge.Value) cobra.CompletionFunc {
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
			if strings.HasPrefix(v.Value, current) && !slices.Contains(typed, v.Value) {
				out = append(out, toComplete[:cut]+v.Value+"\t"+v.Description)
			}
		}
		return out, completionNoFile
	}
}

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
