package cli

import (
	"github.com/spf13/cobra"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// orderingFlag is --ordered-deletion, shared by explain and purge: the
// deletion order of the cluster's namespace controller. auto follows the
// server's version (pods first from 1.33); on and off are for clusters
// whose operators set the OrderedNamespaceDeletion gate otherwise.
type orderingFlag struct{ mode string }

func (f *orderingFlag) addFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.mode, "ordered-deletion", "auto",
		"Deletion order of the cluster's namespace controller: auto (from the server's version: pods first from 1.33), on, or off (the OrderedNamespaceDeletion gate set otherwise)")
	_ = cmd.RegisterFlagCompletionFunc("ordered-deletion", cobra.FixedCompletions([]string{"auto", "on", "off"}, cobra.ShellCompDirectiveNoFileComp))
}

func (f *orderingFlag) validate() error {
	if _, err := deletion.OrderingFor(f.mode, ""); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// resolve reads the server's version when asked to follow it; a server
// that does not tell (or a /version nobody may read) is assumed to run a
// current controller, and the report says so.
func (f *orderingFlag) resolve(clients *kube.Clients) deletion.Ordering {
	gitVersion := ""
	if f.mode == "auto" {
		gitVersion, _ = kube.ServerVersion(clients.Discovery)
	}
	o, _ := deletion.OrderingFor(f.mode, gitVersion)
	return o
}
