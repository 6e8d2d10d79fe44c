package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/version"
)

type versionOptions struct {
	genericiooptions.IOStreams
	printFlags printFlags
}

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &versionOptions{IOStreams: streams, printFlags: printFlags{jsonYAMLOnly: true}}
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the version of ns-doctor",
		Example: "  kubectl ns-doctor version\n  kubectl ns-doctor version -o json",
		Args:    exactArgs(0, "none"),
		RunE: func(*cobra.Command, []string) error {
			if err := o.printFlags.validate(); err != nil {
				return err
			}
			return o.printFlags.toPrinter(o.Out).Version(o.Out, version.Get())
		},
	}
	o.printFlags.addFlags(cmd)
	return cmd
}
