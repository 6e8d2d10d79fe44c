package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/version"
)

// versionOptions is `version`: the build, and, as kubectl version does,
// the server's version unless --client, with what ns-doctor assumes of it.
type versionOptions struct {
	genericiooptions.IOStreams
	factory    Factory
	printFlags printFlags
	Client     bool
}

func newVersionCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &versionOptions{IOStreams: streams, factory: f, printFlags: printFlags{jsonYAMLOnly: true}}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of ns-doctor, and of the cluster with what ns-doctor assumes of it",
		Long: `Print the version of ns-doctor and, unless --client, the API server's version with every
version-dependent behaviour ns-doctor follows for it (docs/compatibility.md). A server that cannot be
read is said in the output (serverError) and on stderr; the exit code stays 0.`,
		Example: "  kubectl ns-doctor version\n  kubectl ns-doctor version -o json\n  kubectl ns-doctor version --client",
		Args:    exactArgs(0, "none"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.printFlags.validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.Client, "client", false, "Print the client's version only: no request to the cluster")
	o.printFlags.addFlags(cmd)
	return cmd
}

// Run prints the build's version, and the server's when asked.
func (o *versionOptions) Run(ctx context.Context) error {
	info := printer.VersionReport{Info: version.Get()}
	if !o.Client {
		info.Server, info.ServerError = o.server(ctx)
		if info.ServerError != "" {
			_, _ = fmt.Fprintf(o.ErrOut, "warning: could not read the server's version: %s\n", oneLine(info.ServerError))
		}
	}
	return o.printFlags.toPrinter(o.Out).Version(o.Out, info)
}

func (o *versionOptions) server(ctx context.Context) (*compat.Server, string) {
	clients, err := o.factory.Clients()
	if err != nil {
		return nil, err.Error()
	}
	v, err := kube.ServerVersion(ctx, clients.Discovery)
	if err != nil {
		return nil, err.Error()
	}
	s := compat.For(v)
	return &s, ""
}
