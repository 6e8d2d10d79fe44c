package cli

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/rescue"
)

// ProtectOptions holds protect's state (Complete/Validate/Run).
type ProtectOptions struct {
	genericiooptions.IOStreams
	PrintFlags printFlags

	Name   string
	Remove bool
	Yes    bool

	context, cluster string
	factory          Factory
}

func newProtectCommand(f Factory, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ProtectOptions{IOStreams: streams, PrintFlags: printFlags{jsonYAMLOnly: true}}
	cmd := &cobra.Command{
		Use:   "protect NAME",
		Short: "Refuse the deletion of a namespace unless it is annotated first",
		Long: `Apply a ValidatingAdmissionPolicy and its binding (ns-doctor-protect-NAME) refusing the DELETE of
namespace NAME unless it carries the annotation ` + rescue.ConfirmAnnotation + `=NAME, whoever sends it.
--remove deletes them. See docs/rescue.md.

Exit codes: 0 done, 4 not found, 2 bad usage (a namespace being deleted: see 'rescue'), 1 error.`,
		Example: `  kubectl ns-doctor protect shop
  kubectl delete namespace shop            # refused
  kubectl annotate namespace shop ` + rescue.ConfirmAnnotation + `=shop
  kubectl delete namespace shop            # goes through

  kubectl ns-doctor protect shop --remove`,
		Args:              exactArgs(1, "the namespace NAME"),
		ValidArgsFunction: completeOneNamespace(flags),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, flags, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.Remove, "remove", false, "Remove the protection")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Skip the confirmation (needed when there is no terminal to ask on)")
	o.PrintFlags.addFlags(cmd)
	return cmd
}

// Complete takes the argument and where the writes go.
func (o *ProtectOptions) Complete(f Factory, flags *genericclioptions.ConfigFlags, args []string) error {
	o.Name, o.factory = args[0], f
	o.context, o.cluster = target(f, flags)
	return nil
}

// Validate rejects bad input before anything is sent.
func (o *ProtectOptions) Validate() error {
	if err := validateNamespaceName(o.Name); err != nil {
		return err
	}
	return o.PrintFlags.validate()
}

// Run checks, asks, applies or removes, and reports.
func (o *ProtectOptions) Run(ctx context.Context) error {
	clients, err := o.factory.Clients()
	if err != nil {
		return err
	}
	p, err := rescue.PrepareProtect(ctx, clients, o.Name, o.Remove)
	if err != nil {
		return rescueError(o.Name, err)
	}
	if err := askConsent(ctx, o.IOStreams, o.Yes, printer.ProtectConfirmation{Protect: p, Context: o.context, Cluster: o.cluster}.Request()); err != nil {
		return err
	}
	if err := rescue.Protect(ctx, clients, p); err != nil {
		return err
	}
	return printer.Protected(o.Out, machineFormat(o.PrintFlags), p)
}
