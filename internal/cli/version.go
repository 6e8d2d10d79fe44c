package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/version"
)

type versionOptions struct {
	genericiooptions.IOStreams
	output string
}

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &versionOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the version of ns-doctor",
		Example: "  kubectl ns-doctor version\n  kubectl ns-doctor version -o json",
		Args:    exactArgs(0, "none"),
		RunE: func(*cobra.Command, []string) error {
			if err := printer.ValidateFormat(o.output); err != nil {
				return usageErrorf("%v", err)
			}
			return o.run()
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "Output format: json or yaml (default: human-readable)")
	return cmd
}

func (o *versionOptions) run() error {
	info := version.Get()
	if o.output != "" {
		return printer.Print(o.Out, o.output, info)
	}
	_, err := fmt.Fprintf(o.Out, "ns-doctor %s\ncommit: %s\nbuilt: %s\ngo: %s %s\n",
		info.Version, info.Commit, info.BuildDate, info.GoVersion, info.Platform)
	return err
}
