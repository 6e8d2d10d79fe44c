package cli

import (
	"context"
	"github.com/spf13/cobra"

	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// orderingFlag is --ordered-deletion, shared by explain and purge: the
// deletion order of the cluster's namespace controller. auto follows the
// server's version (pods first from 1.33); on and off are for clusters
// whose operators set the OrderedNamespaceDeletion gate otherwise.
type orderingFlag struct{ mode string }

func (f *orderingFlag) addFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.mode, "ordered-deletion", "auto",
		"Deletion order of the cluster's namespace controller: auto (from the server's version: pods first from 1.33), on, or off (the OrderedNamespaceDeletion gate set otherwise, 1.30-1.36; refused on 1.37+, which has no gate)")
	_ = cmd.RegisterFlagCompletionFunc("ordered-deletion", cobra.FixedCompletions([]string{"auto", "on", "off"}, cobra.ShellCompDirectiveNoFileComp))
}

func (f *orderingFlag) validate() error {
	if _, err := compat.OrderingFor(f.mode, ""); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// resolve reads the server's version, which every version-dependent
// behaviour follows (compat), the order too unless the flag chooses it; a
// server that does not tell (or a /version nobody may read) is assumed to
// run a current controller, and the report says so. off on a server whose
// controller has no other order is a usage error, before any namespace
// is read.
func (f *orderingFlag) resolve(ctx context.Context, clients *kube.Clients) (compat.Ordering, error) {
	gitVersion, _ := kube.ServerVersion(ctx, clients.Discovery)
	o, err := compat.OrderingFor(f.mode, gitVersion)
	if err != nil {
		return o, usageErrorf("%v", err)
	}
	if f.mode != "auto" {
		o.ServerVersion = "" // the flag chose; the version is in Server
	}
	return o, nil
}
