package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/backup/restore"
	"github.com/ns-doctor/ns-doctor/internal/consent"
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
	Restore   bool
	Yes       bool
	BackupDir string
	// Wait bounds how long --restore waits for the namespace to be gone.
	Wait time.Duration

	context, cluster string
	factory          Factory
	// defaultDir: no --backup-dir was given; a rescue that continues an
	// earlier one saves into the earlier folder instead.
	defaultDir bool
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
give each its old policy back).

--restore puts the namespace back: it removes the hold, waits (--wait) until the namespace is
gone, creates it again with its labels and annotations, re-applies what rescue saved (server-side
apply, field manager ns-doctor) in dependency order (ServiceAccounts and RBAC, ConfigMaps and
Secrets, claims bound again to their retained volumes, Services, workloads, custom resources),
leaving out what controllers make again, then gives the volumes their old reclaim policy back. It
reads the backup folder from the hold, or from --backup-dir. See docs/rescue.md.

Exit codes: 0 done, 4 not found, 2 bad usage (an Active namespace: see 'protect'; --restore
from a folder that holds no rescue's backup), 1 error
(no ValidatingAdmissionPolicy API, missing permissions: nothing was changed; --restore: an object
could not be re-applied), 5 --restore: the namespace was still terminating when --wait ended.`,
		Example: `  # Someone ran kubectl delete namespace shop: hold it, retain its volumes, save it
  kubectl ns-doctor rescue shop

  # Let the deletion finish after all
  kubectl ns-doctor rescue shop --release

  # Put it back as it was
  kubectl ns-doctor rescue shop --restore`,
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
	cmd.Flags().BoolVar(&o.Restore, "restore", false, "Put the namespace back: release, wait for it to be gone, create it again and re-apply what rescue saved")
	cmd.Flags().DurationVar(&o.Wait, "wait", 5*time.Minute, "With --restore: how long to wait for the namespace to be gone")
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
	if o.BackupDir == "" && !o.Release && !o.Restore {
		dir, err := backup.DefaultDir(o.Name, time.Now())
		if err != nil {
			return err
		}
		o.BackupDir, o.defaultDir = dir, true
	}
	return nil
}

// Validate rejects bad input before anything is sent.
func (o *RescueOptions) Validate() error {
	if err := validateNamespaceName(o.Name); err != nil {
		return err
	}
	if o.Release && o.Restore {
		return usageErrorf("--release and --restore conflict: --restore releases the hold itself")
	}
	if o.Wait <= 0 {
		return usageErrorf("--wait must be positive, e.g. --wait=5m")
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
	if o.Restore {
		return o.restore(ctx, clients)
	}
	plan, err := rescue.Prepare(ctx, clients, o.Name, o.BackupDir)
	if err != nil {
		return rescueError(o.Name, err)
	}
	if o.defaultDir && plan.AlreadyHeld {
		plan.BackupDir = earlierFolder(ctx, clients, o.Name, plan.BackupDir)
	}
	if err := o.consent(ctx, printer.RescueConfirmation{Plan: plan, Context: o.context, Cluster: o.cluster}.Request()); err != nil {
		return err
	}
	report, err := rescue.RunSteps(ctx, clients, plan, func(s rescue.Step, r *rescue.Report) {
		// Each step as it ends, on stderr: a rescue killed half-way has
		// said how far it got.
		_, _ = fmt.Fprintln(o.ErrOut, printer.RescueStep(s, r))
	})
	if err != nil {
		return rescueError(o.Name, err)
	}
	return printer.Rescue(o.Out, o.format(), report)
}

func (o *RescueOptions) release(ctx context.Context, clients *kube.Clients) error {
	r, err := rescue.PrepareRelease(ctx, clients, o.Name)
	if err != nil {
		return rescueError(o.Name, err)
	}
	if err := o.consent(ctx, printer.ReleaseConfirmation{Release: r, Context: o.context, Cluster: o.cluster}.Request()); err != nil {
		return err
	}
	if err := rescue.Release(ctx, clients, r); err != nil {
		return err
	}
	return printer.Released(o.Out, o.format(), r)
}

// restore puts the namespace back from the backup the hold names (or
// --backup-dir), after a confirmation.
func (o *RescueOptions) restore(ctx context.Context, clients *kube.Clients) error {
	dir := o.BackupDir
	if dir == "" {
		dir = rescue.BackupDirOf(ctx, clients, o.Name)
	}
	if dir == "" {
		return usageErrorf("no hold of namespace %q names its backup: give the folder rescue saved it to with --backup-dir", o.Name)
	}
	r, err := rescue.PrepareRestore(ctx, clients, o.Name, dir)
	if err != nil {
		return rescueError(o.Name, err)
	}
	if err := o.consent(ctx, printer.RestoreConfirmation{Restore: r, Wait: o.Wait, Context: o.context, Cluster: o.cluster}.Request()); err != nil {
		return err
	}
	rep, err := rescue.RestoreNamespace(ctx, clients, r, o.Wait, func(s rescue.RestoreStep, r *rescue.RestoreReport) {
		_, _ = fmt.Fprintln(o.ErrOut, printer.RestoreStep(s, r))
	})
	if errors.Is(err, rescue.ErrStillTerminating) {
		// What still holds it, in explain's words, with the step past it.
		if rep.Deletion != nil {
			_ = printer.Human{Now: time.Now()}.Purge(o.Out, rep.Deletion)
		}
		return &exitError{code: ExitIncomplete, msg: err.Error()}
	}
	if err != nil {
		return err
	}
	if err := printer.Restored(o.Out, o.format(), rep); err != nil {
		return err
	}
	if n := rep.Restore.Counts()[restore.Failed]; n > 0 {
		return fmt.Errorf("%d saved object(s) could not be restored (listed above with the API server's answer); fix what it says and run --restore again", n)
	}
	return nil
}

// earlierFolder is the folder an earlier rescue of namespace saved to, as
// its hold records it, when it is on this machine: a second run adds to
// that copy (objects saved before stay as they were) rather than start a
// new one --restore would not find. Otherwise dir.
func earlierFolder(ctx context.Context, clients *kube.Clients, namespace, dir string) string {
	earlier := rescue.BackupDirOf(ctx, clients, namespace)
	if _, err := os.Stat(filepath.Join(earlier, backup.NamespaceFile)); earlier == "" || err != nil {
		return dir
	}
	return earlier
}

// consent asks on the terminal unless --yes, as purge does.
func (o *RescueOptions) consent(ctx context.Context, req consent.Request) error {
	return askConsent(ctx, o.IOStreams, o.Yes, req)
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
// --yes skips it; without a terminal and --yes it refuses. Its words are
// the printer's, escaped where what came from the cluster was put in
// (names are DNS labels, the context and cluster quoted).
func askConsent(ctx context.Context, streams genericiooptions.IOStreams, yes bool, req consent.Request) error {
	if yes {
		return nil
	}
	if !isTerminal(streams.In) {
		return usageErrorf("refusing to act without confirmation and no terminal to ask on: add --yes")
	}
	_, _ = fmt.Fprint(streams.ErrOut, req.Prompt())
	return (&PurgeOptions{IOStreams: streams}).expectAnswer(ctx, req)
}

// rescueError maps rescue's and protect's bad input to one line and its
// exit code.
func rescueError(name string, err error) error {
	var missing *access.MissingError
	switch {
	case errors.Is(err, rescue.ErrNotFound):
		return notFoundErrorf("namespace %q not found (it may already be deleted)", name)
	case errors.Is(err, rescue.ErrActive):
		return usageErrorf("namespace %q is Active, not being deleted: nothing to rescue; to guard it against deletion, use 'kubectl ns-doctor protect %s'", name, name)
	case errors.Is(err, rescue.ErrTerminating):
		return usageErrorf("namespace %q is being deleted already: protect cannot stop that; use 'kubectl ns-doctor rescue %s'", name, name)
	case errors.Is(err, rescue.ErrNotABackup), errors.Is(err, backup.ErrNotABackup):
		return usageErrorf("%v; give the folder rescue saved namespace %q to with --backup-dir", err, name)
	case errors.Is(err, rescue.ErrNoPolicyAPI):
		return &exitError{code: ExitError, msg: "the cluster serves no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes 1.30 or later, or the API disabled): ns-doctor cannot hold a namespace there; nothing was changed"}
	case errors.As(err, &missing):
		return &exitError{code: ExitError, msg: missing.Error() + "; nothing was changed (docs/rbac.md#rescue-and-protect)"}
	}
	return err
}
