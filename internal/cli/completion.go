package cli

import (
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// completeNamespaces completes namespace names, terminating ones first.
func completeNamespaces(flags *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		clients, err := kube.NewClients(flags)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list, err := clients.Kube.CoreV1().Namespaces().List(cmd.Context(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var terminating, active []string
		for _, ns := range list.Items {
			if !strings.HasPrefix(ns.Name, toComplete) {
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
		return append(terminating, active...), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}
