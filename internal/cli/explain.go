package cli

import (
	"context"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// ExplainOptions holds explain's flags and state (kubectl's
// Complete/Validate/Run pattern).
type ExplainOptions struct {
	genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags

	Name      string
	Output    string
	Color     string
	IfDeleted bool
	Grace     time.Duration
}

func newExplainCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ExplainOptions{IOStreams: streams, configFlags: flags}
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
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml (default: human-readable)")
	cmd.Flags().StringVar(&o.Color, "color", "auto", "Colour the human output: auto (a terminal and NO_COLOR unset), always or never")
	cmd.Flags().BoolVar(&o.IfDeleted, "if-deleted", false, "For an Active namespace: list what would block its deletion if it were deleted now")
	cmd.Flags().DurationVar(&o.Grace, "grace", diagnose.DefaultGrace, "How long a deletion step may take before it is called stuck (no controller conditions, content waiting for finalizers); 0 reports at once")
	return cmd
}

// Complete fills the options from the arguments.
func (o *ExplainOptions) Complete(args []string) error {
	switch {
	case len(args) == 1:
		o.Name = args[0]
	case o.configFlags.Namespace != nil && *o.configFlags.Namespace != "":
		// kubectl users reach for -n; an explicit one names the namespace.
		o.Name = *o.configFlags.Namespace
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
	if err := printer.ValidateFormat(o.Output); err != nil {
		return usageErrorf("%v", err)
	}
	return validateColor(o.Color)
}

// Run diagnoses the namespace, or every terminating one, and prints.
func (o *ExplainOptions) Run(ctx context.Context) error {
	clients, err := kube.NewClients(o.configFlags)
	if err != nil {
		return err
	}
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
	if o.Output != "" {
		err = printer.Print(o.Out, o.Output, report)
	} else {
		err = o.human().Report(o.Out, report)
	}
	if err != nil {
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
	if o.Output != "" {
		err = printer.Print(o.Out, o.Output, diagnose.NewReportList(reports))
	} else {
		err = o.human().Summary(o.Out, reports)
	}
	if err != nil {
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
	obs.Grace, obs.IfDeleted = o.Grace, o.IfDeleted
	return diagnose.Diagnose(obs), nil
}

func (o *ExplainOptions) human() printer.Human {
	return printer.Human{Color: useColor(o.Color, o.Out), Now: time.Now()}
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

func validateColor(mode string) error {
	switch mode {
	case "auto", "always", "never":
		return nil
	}
	return usageErrorf("invalid --color %q: use auto, always or never", mode)
}

// useColor decides colour for one stream: always/never win; auto means a
// terminal and NO_COLOR unset or empty (the no-color.org rule).
func useColor(mode string, out any) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := out.(interface{ Fd() uintptr })
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
