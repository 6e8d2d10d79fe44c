package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
)

// ExplainOptions holds explain's flags and state (kubectl's
// Complete/Validate/Run pattern).
type ExplainOptions struct {
	genericiooptions.IOStreams
	PrintFlags printFlags
	Ordering   orderingFlag

	Name      string
	IfDeleted bool
	Grace     time.Duration

	factory  Factory
	ordering deletion.Ordering
}

func newExplainCommand(f Factory, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ExplainOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "explain [NAME]",
		Short: "Explain why a namespace is stuck in Terminating",
		Long: `Explain why a namespace is stuck in Terminating: its conditions beside ns-doctor's
own evaluation, what remains in it per resource type, and each blocker with the next step.
With no NAME: one line for every terminating namespace, sharing one API discovery.

Exit codes: 0 not stuck, 3 stuck (blockers found), 4 namespace not found, 2 bad usage, 1 error.`,
		Example: `  # Why is namespace "demo" still there?
  kubectl ns-doctor explain demo

  # The same, for automation
  kubectl ns-doctor explain demo -o json

  # Every terminating namespace, a line each
  kubectl ns-doctor explain

  # What would block deleting an Active namespace today?
  kubectl ns-doctor explain team-a --if-deleted`,
		Args:              maxArgs(1, "the namespace name"),
		ValidArgsFunction: completeNamespaces(flags),
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
	o.PrintFlags.addFlags(cmd)
	o.Ordering.addFlag(cmd)
	cmd.Flags().BoolVar(&o.IfDeleted, "if-deleted", false, "For an Active namespace: list what would block its deletion if it were deleted now")
	cmd.Flags().DurationVar(&o.Grace, "grace", diagnose.DefaultGrace, "How long a deletion step may take before it is called stuck (no controller conditions, content waiting for finalizers); 0 reports at once")
	return cmd
}

// Complete fills the options from the arguments.
func (o *ExplainOptions) Complete(f Factory, flags *genericclioptions.ConfigFlags, args []string) error {
	o.factory = f
	switch {
	case len(args) == 1:
		o.Name = args[0]
	case flags.Namespace != nil && *flags.Namespace != "":
		// kubectl users reach for -n; an explicit one names the namespace.
		o.Name = *flags.Namespace
	}
	return nil
}

// Validate rejects bad input before anything is sent to the cluster.
func (o *ExplainOptions) Validate() error {
	if o.Name != "" {
		if err := validateNamespaceName(o.Name); err != nil {
			return err
		}
	} else if o.IfDeleted {
		return usageErrorf("--if-deleted needs a namespace NAME")
	}
	if o.Grace < 0 {
		return usageErrorf("--grace must not be negative, got %s", o.Grace)
	}
	if err := o.Ordering.validate(); err != nil {
		return err
	}
	return o.PrintFlags.validate()
}

// Run diagnoses the namespace, or every terminating one, and prints.
func (o *ExplainOptions) Run(ctx context.Context) error {
	clients, err := o.factory.Clients()
	if err != nil {
		return err
	}
	o.ordering = o.Ordering.resolve(clients)
	in := inspect.New(clients)
	in.Compact = true
	if o.Name == "" {
		return o.runAll(ctx, in)
	}
	ns, err := in.Namespace(ctx, o.Name)
	if apierrors.IsNotFound(err) {
		return notFoundErrorf("namespace %q not found (it may already be deleted): list namespaces with 'kubectl get namespaces'", o.Name)
	}
	if err != nil {
		return err
	}
	report, err := o.diagnose(ctx, in, ns)
	if err != nil {
		return err
	}
	if err := o.PrintFlags.toPrinter(o.Out).Diagnosis(o.Out, report); err != nil {
		return err
	}
	return stuckExit(report)
}

func (o *ExplainOptions) runAll(ctx context.Context, in *inspect.Inspector) error {
	namespaces, err := in.Terminating(ctx)
	if err != nil {
		return err
	}
	var reports []diagnose.Report
	for i := range namespaces {
		report, err := o.diagnose(ctx, in, &namespaces[i])
		if err != nil {
			return err
		}
		reports = append(reports, report)
	}
	if err := o.PrintFlags.toPrinter(o.Out).Diagnoses(o.Out, reports); err != nil {
		return err
	}
	for _, r := range reports {
		if err := stuckExit(r); err != nil {
			return err
		}
	}
	return nil
}

func (o *ExplainOptions) diagnose(ctx context.Context, in *inspect.Inspector, ns *v1.Namespace) (diagnose.Report, error) {
	obs, err := in.Observe(ctx, ns)
	if err != nil {
		return diagnose.Report{}, err
	}
	obs.Grace, obs.IfDeleted, obs.Ordering = o.Grace, o.IfDeleted, o.ordering
	return diagnose.Diagnose(obs), nil
}

// stuckExit turns a stuck verdict into exit code 3, printing nothing more.
func stuckExit(r diagnose.Report) error {
	if r.Verdict.State == diagnose.StateStuck {
		return &exitError{code: ExitStuck}
	}
	return nil
}

func validateNamespaceName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return usageErrorf("%q is not a valid namespace name: %s", name, errs[0])
	}
	return nil
}
