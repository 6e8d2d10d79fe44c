package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/backup/restore"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// RestoreOptions holds restore's state (Complete/Validate/Run).
type RestoreOptions struct {
	genericiooptions.IOStreams
	PrintFlags printFlags

	Dir string
	// Into is -n: the namespace to restore into, when not the one saved.
	Into string
	Yes  bool
	// Wait bounds each wait of the restore (the default ServiceAccount,
	// a claim binding).
	Wait time.Duration

	factory Factory
}

func newRestoreCommand(f Factory, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RestoreOptions{IOStreams: streams, PrintFlags: printFlags{jsonYAMLOnly: true}}
	cmd := &cobra.Command{
		Use:   "restore DIR",
		Short: "Put back a namespace from any ns-doctor backup folder (purge's, rescue's, the janitor's)",
		Long: `Re-apply an ns-doctor backup folder into its namespace, or with -n into another one (a clone).

By default it prints the plan and changes nothing: each saved object, in the order it would be
applied, with the row of the restore table that decides it and why (restored as saved, restored
with what the API server set dropped, or left out because a controller makes it again), and what
the cluster makes it change (a volume gone, a node port taken). --yes acts: the namespace is created
with its saved labels and annotations unless it is there, the claims are bound again to their
volumes, every object is applied (server-side apply, field manager ns-doctor) with its owner's new
uid, and a volume a rescue retained gets its reclaim policy back once its claim is bound to it.
Status is not restored. Running it again is safe: what is there is applied again, nothing else.

A namespace still being deleted admits nothing: for a rescue's backup, 'kubectl ns-doctor rescue
NAME --restore' releases the hold, finishes the deletion and restores. See docs/rescue.md.

Exit codes: 0 the plan, or everything restored; 2 bad usage (DIR is no ns-doctor backup); 1 error
(missing permissions: nothing changed; an object the API server would not take: listed with its
answer, run it again once fixed); 5 the namespace to restore into is still being deleted.`,
		Example: `  # What would come back, and what not
  kubectl ns-doctor restore ~/.cache/ns-doctor/backups/shop-20261206T101500Z

  # Put it back
  kubectl ns-doctor restore ~/.cache/ns-doctor/backups/shop-20261206T101500Z --yes

  # A copy next to it, in namespace shop-copy
  kubectl ns-doctor restore ~/.cache/ns-doctor/backups/shop-20261206T101500Z -n shop-copy --yes`,
		Args: exactArgs(1, "the backup folder DIR"),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Complete(f, flags, args)
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Act: restore what the plan shows (without it, only the plan is printed)")
	cmd.Flags().DurationVar(&o.Wait, "wait", 2*time.Minute, "How long to wait for the namespace's default ServiceAccount and for each claim to bind")
	o.PrintFlags.addFlags(cmd)
	return cmd
}

// Complete takes the folder and -n, which here names where to restore
// (the kubeconfig's namespace is not a default: the saved one is).
func (o *RestoreOptions) Complete(f Factory, flags *genericclioptions.ConfigFlags, args []string) {
	o.Dir, o.factory = args[0], f
	if flags.Namespace != nil {
		o.Into = *flags.Namespace
	}
}

// Validate rejects bad input before anything is sent.
func (o *RestoreOptions) Validate() error {
	if st, err := os.Stat(o.Dir); err != nil || !st.IsDir() {
		return usageErrorf("%s is not a folder: give the backup folder purge or rescue saved to (its report names it)", o.Dir)
	}
	if o.Into != "" {
		if err := validateNamespaceName(o.Into); err != nil {
			return err
		}
	}
	if o.Wait <= 0 {
		return usageErrorf("--wait must be positive, e.g. --wait=2m")
	}
	return o.PrintFlags.validate()
}

// Run plans, then, with --yes, restores and reports.
func (o *RestoreOptions) Run(ctx context.Context) error {
	clients, err := o.factory.Clients()
	if err != nil {
		return err
	}
	folder, plan, err := restore.Prepare(ctx, clients, o.Dir, o.Into)
	if errors.Is(err, backup.ErrNotABackup) {
		return usageErrorf("%v: give the folder an ns-doctor command saved to", err)
	}
	if err != nil {
		return err
	}
	if !o.Yes {
		return printer.Restore(o.Out, o.format(), restore.PlanReport(plan))
	}
	if err := restore.Check(ctx, clients, plan); err != nil {
		return restoreError(err)
	}
	r := &restore.Restorer{Clients: clients, Wait: o.Wait, Told: func(s restore.Step, rep *restore.Report) {
		_, _ = fmt.Fprintln(o.ErrOut, printer.RestoreProgress(s, rep))
	}}
	rep, err := r.Run(ctx, folder, plan)
	if errors.Is(err, restore.ErrStillTerminating) {
		return &exitError{code: ExitIncomplete, msg: err.Error()}
	}
	if err != nil {
		return err
	}
	if err := printer.Restore(o.Out, o.format(), rep); err != nil {
		return err
	}
	if n := rep.Counts()[restore.Failed]; n > 0 {
		return fmt.Errorf("%d saved object(s) could not be restored (listed above with the API server's answer); fix what it says and run the same command again", n)
	}
	return nil
}

func (o *RestoreOptions) format() string { return machineFormat(o.PrintFlags) }

// restoreError maps restore's refusals to one line and its exit code.
func restoreError(err error) error {
	var missing *access.MissingError
	if errors.As(err, &missing) {
		return &exitError{code: ExitError, msg: missing.Error() + "; nothing was changed (docs/rbac.md#restore)"}
	}
	return err
}
