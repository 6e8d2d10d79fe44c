package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// completeNamespaces completes a command's NAME arguments: namespace
// names not given yet, terminating ones first (those are what ns-doctor is
// for); after --orphans, the former namespaces that left content.
func completeNamespaces(flags *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var names []string
		directive := completionNoFile
		if orphans, _ := cmd.Flags().GetBool("orphans"); orphans {
			ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
			defer cancel()
			names = orphanNames(ctx, flags, toComplete)
		} else {
			names, directive = namespaceNames(cmd, flags, toComplete)
		}
		return slices.DeleteFunc(names, func(n string) bool { return slices.Contains(args, n) }), directive
	}
}

// namespaceNames lists namespaces starting with prefix, terminating ones
// first; errors complete nothing, since a completion cannot report them.
func namespaceNames(cmd *cobra.Command, flags *genericclioptions.ConfigFlags, prefix string) ([]string, cobra.ShellCompDirective) {
	clients, err := kube.NewClients(flags)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	list, err := clients.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var terminating, active []string
	for _, ns := range list.Items {
		if !strings.HasPrefix(ns.Name, prefix) {
			continue
		}
		if ns.DeletionTimestamp != nil {
			terminating = append(terminating, ns.Name)
		} else {
			active = append(active, ns.Name)
		}
	}
	sort.Strings(terminating)
	sort.Strings(active)
	// KeepOrder: shells sort alphabetically otherwise, burying the
	// terminating namespaces among the others.
	return append(terminating, active...), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// registerFlagCompletions completes kubectl's connection flags the way
// kubectl does: namespaces from the cluster, the rest from the kubeconfig.
func registerFlagCompletions(root *cobra.Command, flags *genericclioptions.ConfigFlags) {
	completions := map[string]cobra.CompletionFunc{
		"namespace": func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return namespaceNames(cmd, flags, toComplete)
		},
		"context": kubeconfigNames(flags, func(c *clientcmdapi.Config) []string { return slices.Collect(maps.Keys(c.Contexts)) }),
		"cluster": kubeconfigNames(flags, func(c *clientcmdapi.Config) []string { return slices.Collect(maps.Keys(c.Clusters)) }),
		"user":    kubeconfigNames(flags, func(c *clientcmdapi.Config) []string { return slices.Collect(maps.Keys(c.AuthInfos)) }),
	}
	for name, fn := range completions {
		if root.PersistentFlags().Lookup(name) == nil {
			continue // ConfigFlags built without this flag
		}
		// It fails only for a missing or twice-registered flag: a bug,
		// which Run reports as an internal error.
		if err := root.RegisterFlagCompletionFunc(name, fn); err != nil {
			panic(fmt.Sprintf("registering completion of --%s: %v", name, err))
		}
	}
}

// kubeconfigNames completes names the kubeconfig defines, picked by names.
func kubeconfigNames(flags *genericclioptions.ConfigFlags, names func(*clientcmdapi.Config) []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		raw, err := flags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, name := range names(&raw) {
			if strings.HasPrefix(name, toComplete) {
				out = append(out, name)
			}
		}
		sort.Strings(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
