package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// PurgeOptions holds purge's flags. The deletion pass itself is not built
// yet: purge validates its input and says so.
type PurgeOptions struct {
	genericiooptions.IOStreams
	Name   string
	DryRun string
	Yes    bool
}

// protectedNamespaces are refused without an explicit override.
var protectedNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}

func newPurgeCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PurgeOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "purge NAME",
		Short: "Finish a namespace's deletion the way the namespace controller does (not available yet)",
		Long: `Run the namespace controller's deletion pass on a terminating namespace.

Not available yet in this build: purge only checks its arguments and changes nothing.`,
		Example:           "  kubectl ns-doctor purge demo",
		Args:              exactArgs(1, "the namespace name"),
		ValidArgsFunction: completeNamespaces(flags),
		RunE: func(_ *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			return fmt.Errorf("purge is not available in this build yet; nothing was changed (see 'kubectl ns-doctor explain %s' for the steps to take by hand)", o.Name)
		},
	}
	cmd.Flags().StringVar(&o.DryRun, "dry-run", "client", "client (print the plan), server (send dry-run requests) or none (act)")
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation")
	return cmd
}

// Validate rejects bad input before anything is sent.
func (o *PurgeOptions) Validate() error {
	if err := validateNamespaceName(o.Name); err != nil {
		return err
	}
	switch o.DryRun {
	case "client", "server", "none":
	default:
		return usageErrorf("invalid --dry-run %q: use client, server or none", o.DryRun)
	}
	if protectedNamespaces[o.Name] {
		return usageErrorf("refusing to purge the system namespace %q", o.Name)
	}
	return nil
}
