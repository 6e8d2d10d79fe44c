package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/rescue"
)

// RescueOptions holds rescue's state (Complete/Validate/Run).
type RescueOptions struct {
	genericiooptions.IOStreams
	PrintFlags printFlags

	Name      string
	Release   bool
	Yes       bool
	BackupDir string

	context, cluster string
	factory          Factory
}

func newRescueCommand(f Factory, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RescueOptions{IOStreams: streams, PrintFlags: printFlags{jsonYAMLOnly: true}}
	cmd := &cobra.Command{
		Use:   "rescue NAME",
		Short: "Stop an accidental namespace deletion while its pods are still going, and save what remains",
		Long: `Stop the deletion of a namespace being deleted, in the window ordered deletion leaves: since
Kubernetes 1.33 the namespace controller deletes pods first and touches nothing else while any
pod remains.

After a confirmation that says each change, rescue applies a ValidatingAdmissionPolicy and its
binding (ns-doctor-rescue-NAME) refusing every DELETE in NAME sent by the namespace controller or
the garbage collector, sets the PersistentVolumes bound to NAME's claims to reclaim policy Retain
(the old policy kept in an annotation), and saves every object left in NAME, Secrets included, with
the namespace and the volumes, to a folder kubectl apply reads. What was deleted before the hold
(pods first) is not brought back. Running it again continues where a run stopped.

--release removes the hold: the deletion finishes, the volumes stay Retain (the report says how to
give each its old policy back). See docs/rescue.md.

Exit codes: 0 done, 4 not found, 2 bad usage (an Active namespace: see 'protect'), 1 error
(no ValidatingAdmissionPolicy API, missing permissions: nothing was changed).`,
		Example: `  # Someone ran kubectl delete namespace shop: hold it, retain its volumes, save it
  kubectl ns-doctor rescue shop

  # Let the deletion finish after all
  kubectl ns-doctor rescue shop --release`,
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
	cmd.Flags().BoolVar(&o.Release, "release", false, "Remove the hold: the deletion finishes; volumes stay Retain")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Skip the confirmation (needed when there is no terminal to ask on)")
	cmd.Flags().StringVar(&o.BackupDir, "backup-dir", "", "Where to save the namespace (default: a new folder under the user cache dir)")
	o.PrintFlags.addFlags(cmd)
	return cmd
}

// completeOneNamespace completes the one NAME a command takes.
func completeOneNamespace(flags *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	all := completeNamespaces(flags)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return all(cmd, args, toComplete)
	}
}

// Complete takes the arguments and where the writes go.
func (o *RescueOptions) Complete(f Factory, flags *genericclioptions.ConfigFlags, args []string) error {
	o.Name, o.factory = args[0], f
	o.context, o.cluster = target(f, flags)
	if o.BackupDir == "" && !o.Release {
		dir, err := backup.DefaultDir(o.Name, time.Now())
		if err != nil {
			return err
		}
		o.BackupDir = dir
	}
	return nil
}

// Validate rejects bad input before anything is sent.
func (o *RescueOptions) Validate() error {
	if err := validateNamespaceName(o.Name); err != nil {
		return err
	}
	return o.PrintFlags.validate()
}

// Run reads and checks, asks, then holds (or releases) and reports.
func (o *RescueOptions) Run(ctx context.Context) error {
	clients, err := o.factory.Clients()
	if err != nil {
		return err
	}
	if o.Release {
		return o.release(ctx, clients)
	}
	plan, err := rescue.Prepare(ctx, clients, o.Name, o.BackupDir)
	if err != nil {
		return rescueError(o.Name, err)
	}
	text, want := printer.RescueConfirmation{Plan: plan, Context: o.context, Cluster: o.cluster}.Prompt()
	if err := o.consent(ctx, text, want); err != nil {
		return err
	}
	report, err := rescue.Run(ctx, clients, plan)
	if err != nil {
		return rescueError(o.Name, err)
	}
	return printer.Rescue(o.Out, o.format(), report)
}

func (o *RescueOptions) release(ctx context.Context, clients *kube.Clients) error {
	if err := rescue.PrepareRelease(ctx, clients); err != nil {
		return rescueError(o.Name, err)
	}
	text := fmt.Sprintf("This will release namespace %q\n  context %q, cluster %q\n  delete ValidatingAdmissionPolicyBinding and ValidatingAdmissionPolicy %s: the namespace controller goes on deleting the namespace\n"+
		"  PersistentVolumes a rescue set to Retain stay Retain\nType the namespace name to go on: ",
		o.Name, o.context, o.cluster, rescue.HoldName(o.Name))
	if err := o.consent(ctx, text, o.Name); err != nil {
		return err
	}
	r, err := rescue.Release(ctx, clients, o.Name)
	if err != nil {
		return err
	}
	return printer.Released(o.Out, o.format(), r)
}

// consent asks on the terminal unless --yes, as purge does.
func (o *RescueOptions) consent(ctx context.Context, text, want string) error {
	return askConsent(ctx, o.IOStreams, o.Yes, text, want)
}

func (o *RescueOptions) format() string { return machineFormat(o.PrintFlags) }

// machineFormat is -o's json or yaml, empty for the human view.
func machineFormat(f printFlags) string {
	if f.kube == nil || f.kube.OutputFormat == nil {
		return ""
	}
	return *f.kube.OutputFormat
}

// askConsent prints the confirmation on stderr and reads the answer;
// --yes skips it; without a terminal and --yes it refuses. text is printed
// as it is: its lines are ns-doctor's, and what in it came from the
// cluster was escaped where it was put in (names are DNS labels, the
// context and cluster quoted).
func askConsent(ctx context.Context, streams genericiooptions.IOStreams, yes bool, text, want string) error {
	if yes {
		return nil
	}
	if !isTerminal(streams.In) {
		return usageErrorf("refusing to act without confirmation and no terminal to ask on: add --yes")
	}
	_, _ = fmt.Fprint(streams.ErrOut, text)
	return (&PurgeOptions{IOStreams: streams}).expectAnswer(ctx, want)
}

// rescueError maps rescue's and protect's bad input to one line and its
// exit code.
func rescueError(name string, err error) error {
	var missing *rescue.MissingError
	switch {
	case errors.Is(err, rescue.ErrNotFound):
		return notFoundErrorf("namespace %q not found (it may already be deleted)", name)
	case errors.Is(err, rescue.ErrActive):
		return usageErrorf("namespace %q is Active, not being deleted: nothing to rescue; to guard it against deletion, use 'kubectl ns-doctor protect %s'", name, name)
	case errors.Is(err, rescue.ErrTerminating):
		return usageErrorf("namespace %q is being deleted already: protect cannot stop that; use 'kubectl ns-doctor rescue %s'", name, name)
	case errors.Is(err, rescue.ErrNoPolicyAPI):
		return &exitError{code: ExitError, msg: "the cluster serves no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes 1.30 or later, or the API disabled): ns-doctor cannot hold a namespace there; nothing was changed"}
	case errors.As(err, &missing):
		return &exitError{code: ExitError, msg: missing.Error() + "; nothing was changed (docs/rbac.md#rescue-and-protect)"}
	}
	return err
}
