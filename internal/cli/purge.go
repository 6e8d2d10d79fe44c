package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// PurgeOptions holds purge's flags (Complete/Validate/Run).
type PurgeOptions struct {
	genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags

	Name                string
	DryRun              string
	Force               bool
	Yes                 bool
	Timeout             time.Duration
	RemoveFinalizers    []string
	RemoveAllFinalizers bool
	FinalizeAnyway      bool
	RemoveNSFinalizers  bool
	DeleteNamespace     bool
	AllowSystem         bool
	BackupDir           string
	Output              string
	Color               string

	dryRunSet bool
}

// protectedNamespaces are refused without --allow-system-namespace.
var protectedNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}

func newPurgeCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PurgeOptions{IOStreams: streams, configFlags: flags}
	cmd := &cobra.Command{
		Use:   "purge NAME",
		Short: "Finish a namespace's deletion with the namespace controller's own pass",
		Long: `Run the namespace controller's deletion pass on a terminating namespace.

By default it only prints the plan (--dry-run=client). --dry-run=server sends every request as a
dry run, so admission webhooks and RBAC answer without anything being persisted. --force (or
--dry-run=none) acts: after a confirmation, it checks its permissions, saves every object it
deletes or changes to a backup folder, and repeats the pass until the namespace is gone or
--timeout expires. Escalations (--remove-finalizers, --remove-all-finalizers,
--finalize-despite-discovery-failure, --remove-namespace-finalizers) are each shown in the plan first.

Exit codes: 0 done (or planned), 5 namespace still there after --timeout, 4 not found, 2 bad usage, 1 error.`,
		Example: `  # What would the namespace controller do now?
  kubectl ns-doctor purge demo

  # Ask the server: would webhooks or RBAC reject any step?
  kubectl ns-doctor purge demo --dry-run=server --remove-finalizers='example.com/*'

  # Do it, stripping the finalizers of an uninstalled operator
  kubectl ns-doctor purge demo --force --remove-finalizers='example.com/*'`,
		Args:              exactArgs(1, "the namespace name"),
		ValidArgsFunction: completeNamespaces(flags),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dryRunSet = cmd.Flags().Changed("dry-run")
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.DryRun, "dry-run", "client", "client (print the plan), server (send dry-run requests) or none (act; same as --force)")
	f.Lookup("dry-run").NoOptDefVal = "client"
	f.BoolVar(&o.Force, "force", false, "Act for real (same as --dry-run=none), after a confirmation")
	f.BoolVarP(&o.Yes, "yes", "y", false, "Skip the confirmation (needed when there is no terminal to ask on)")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long --force keeps repeating the pass before giving up")
	f.StringSliceVar(&o.RemoveFinalizers, "remove-finalizers", nil, "Escalation: strip these finalizers (globs, e.g. 'example.com/*') from objects the pass leaves")
	f.BoolVar(&o.RemoveAllFinalizers, "remove-all-finalizers", false, "Escalation: strip every finalizer from objects the pass leaves")
	f.BoolVar(&o.FinalizeAnyway, "finalize-despite-discovery-failure", false, "Escalation: finalize although some API groups cannot be discovered (their content is orphaned in storage)")
	f.BoolVar(&o.RemoveNSFinalizers, "remove-namespace-finalizers", false, "Escalation: also remove spec.finalizers tokens other than kubernetes, and the namespace's metadata.finalizers")
	f.BoolVar(&o.DeleteNamespace, "delete-namespace", false, "Delete the namespace first if it is Active")
	f.BoolVar(&o.AllowSystem, "allow-system-namespace", false, "Allow purging default, kube-system, kube-public or kube-node-lease")
	f.StringVar(&o.BackupDir, "backup-dir", "", "Where to save objects before changing them (default: a new folder under the user cache dir)")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml (default: human-readable)")
	f.StringVar(&o.Color, "color", "auto", "Colour the human output: auto, always or never")
	return cmd
}

// Complete fills the options from the arguments.
func (o *PurgeOptions) Complete(args []string) error {
	o.Name = args[0]
	if o.Force {
		if o.dryRunSet && o.DryRun != purge.ModeNone {
			return usageErrorf("--force conflicts with --dry-run=%s: choose one", o.DryRun)
		}
		o.DryRun = purge.ModeNone
	}
	return nil
}

// Validate rejects bad input before anything is sent.
func (o *PurgeOptions) Validate() error {
	if err := validateNamespaceName(o.Name); err != nil {
		return err
	}
	switch o.DryRun {
	case purge.ModeClient, purge.ModeServer, purge.ModeNone:
	default:
		return usageErrorf("invalid --dry-run %q: use client, server or none", o.DryRun)
	}
	if protectedNamespaces[o.Name] && !o.AllowSystem {
		return usageErrorf("refusing to purge the system namespace %q (add --allow-system-namespace if you really mean it)", o.Name)
	}
	if o.RemoveAllFinalizers && len(o.RemoveFinalizers) > 0 {
		return usageErrorf("--remove-finalizers conflicts with --remove-all-finalizers: choose one")
	}
	for _, pattern := range o.RemoveFinalizers {
		if _, err := path.Match(pattern, ""); err != nil {
			return usageErrorf("invalid --remove-finalizers pattern %q: %v", pattern, err)
		}
	}
	if o.Timeout <= 0 {
		return usageErrorf("--timeout must be positive, got %s", o.Timeout)
	}
	if err := printer.ValidateFormat(o.Output); err != nil {
		return usageErrorf("%v", err)
	}
	return validateColor(o.Color)
}

// Run plans or purges and prints the report.
func (o *PurgeOptions) Run(ctx context.Context) error {
	clients, err := kube.NewClients(o.configFlags)
	if err != nil {
		return err
	}
	kctx, cluster := o.target()
	if o.DryRun == purge.ModeNone && !o.Yes {
		if err := o.confirm(ctx, kctx, cluster); err != nil {
			return err
		}
	}
	p := &purge.Purger{Clients: clients, Opts: purge.Options{
		Namespace: o.Name, Mode: o.DryRun, Timeout: o.Timeout,
		RemoveFinalizers: o.RemoveFinalizers, RemoveAllFinalizers: o.RemoveAllFinalizers,
		FinalizeDespiteDiscoveryFailure: o.FinalizeAnyway, RemoveNamespaceFinalizers: o.RemoveNSFinalizers,
		DeleteNamespace: o.DeleteNamespace, BackupDir: o.BackupDir, Progress: o.ErrOut,
	}}
	report, runErr := p.Run(ctx)
	switch {
	case errors.Is(runErr, purge.ErrNotFound):
		return notFoundErrorf("namespace %q not found (it may already be deleted)", o.Name)
	case errors.Is(runErr, purge.ErrActive):
		return usageErrorf("namespace %q is Active: purge finishes deletions; add --delete-namespace to delete it first", o.Name)
	}
	report.Context, report.Cluster = kctx, cluster
	if err := o.print(report); err != nil {
		return err
	}
	switch {
	case errors.Is(runErr, purge.ErrMissingPermissions):
		return fmt.Errorf("missing %d permission(s), listed above; nothing was changed", len(report.MissingPermissions))
	case runErr != nil:
		return runErr
	case report.Outcome == purge.OutcomeRemaining:
		return &exitError{code: ExitIncomplete, msg: report.Message}
	}
	return nil
}

func (o *PurgeOptions) print(r *purge.Report) error {
	if o.Output != "" {
		return printer.Print(o.Out, o.Output, r)
	}
	return printer.Human{Color: useColor(o.Color, o.Out), Now: time.Now()}.Purge(o.Out, r)
}

// target names the kubeconfig context and cluster the command talks to.
func (o *PurgeOptions) target() (string, string) {
	raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return "", ""
	}
	ctxName := raw.CurrentContext
	if o.configFlags.Context != nil && *o.configFlags.Context != "" {
		ctxName = *o.configFlags.Context
	}
	cluster := ""
	if c, ok := raw.Contexts[ctxName]; ok {
		cluster = c.Cluster
	}
	if o.configFlags.ClusterName != nil && *o.configFlags.ClusterName != "" {
		cluster = *o.configFlags.ClusterName
	}
	return ctxName, cluster
}

// confirm asks on the terminal for the namespace name; without a terminal
// it refuses, since acting needs explicit consent.
func (o *PurgeOptions) confirm(ctx context.Context, kctx, cluster string) error {
	f, ok := o.In.(interface{ Fd() uintptr })
	if !ok || !isatty.IsTerminal(f.Fd()) {
		return usageErrorf("refusing to act without confirmation and no terminal to ask on: add --yes (or run the plan first: drop --force)")
	}
	fmt.Fprintf(o.ErrOut, "This will run the namespace controller's deletion pass FOR REAL on namespace %q\n  context %q, cluster %q\n", o.Name, kctx, cluster)
	switch {
	case o.RemoveAllFinalizers:
		fmt.Fprintf(o.ErrOut, "  and strip every finalizer from what remains\n")
	case len(o.RemoveFinalizers) > 0:
		fmt.Fprintf(o.ErrOut, "  and strip finalizers %s from what remains\n", strings.Join(o.RemoveFinalizers, ", "))
	}
	fmt.Fprintf(o.ErrOut, "Everything it deletes or changes is saved first. Type the namespace name to go on: ")
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(o.In).ReadString('\n')
		answer <- line
	}()
	// Ctrl-C at the prompt ends the command at once.
	select {
	case <-ctx.Done():
		return &exitError{code: ExitError, msg: "interrupted: nothing was changed"}
	case line := <-answer:
		if strings.TrimSpace(line) != o.Name {
			return &exitError{code: ExitError, msg: "not confirmed: nothing was changed"}
		}
	}
	return nil
}
