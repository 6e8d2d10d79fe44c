package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/consent"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// PurgeFlags are purge's own flags, each under the name of the engine's
// option it sets (purge.Options); ToOptions validates them and the
// arguments in one place (kubectl's DeleteFlags.ToOptions).
type PurgeFlags struct {
	DryRun  string
	Force   bool
	Yes     bool
	Timeout time.Duration
	// Escalations are purge.Escalations()' flags.
	Escalations          escalationFlags
	AllowSystemNamespace bool
	BackupDir            string
	Selector             string
	AllTerminating       bool
	Orphans              bool
}

// AddFlags registers the flags on cmd.
func (f *PurgeFlags) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.DryRun, "dry-run", "client", "client (print the plan), server (send dry-run requests) or none (act; same as --force)")
	fs.Lookup("dry-run").NoOptDefVal = "client"
	fs.BoolVar(&f.Force, "force", false, "Act for real (same as --dry-run=none), after a confirmation")
	fs.BoolVarP(&f.Yes, "yes", "y", false, "Skip the confirmation (needed when there is no terminal to ask on)")
	fs.DurationVar(&f.Timeout, "timeout", 5*time.Minute, "How long --force keeps repeating the pass before giving up")
	f.Escalations.add(fs, everyEscalation, ownHelp)
	fs.BoolVar(&f.AllowSystemNamespace, "allow-system-namespace", false, "Allow purging default, kube-system, kube-public or kube-node-lease")
	fs.StringVarP(&f.Selector, "selector", "l", "", "Purge the terminating namespaces with these labels (a label selector, as kubectl's -l)")
	fs.BoolVar(&f.AllTerminating, "all-terminating", false, "Purge every terminating namespace (system ones only with --allow-system-namespace)")
	fs.BoolVar(&f.Orphans, "orphans", false, "Purge what namespaces that no longer exist left in storage (a finalize forced with content left; 'explain --orphans' lists them): NAME... are the former namespaces")
	fs.StringVar(&f.BackupDir, "backup-dir", "", "Where to save objects before changing them (default: a new folder under the user cache dir)")
	_ = cmd.RegisterFlagCompletionFunc("dry-run", cobra.FixedCompletions([]string{"client", "server", "none"}, cobra.ShellCompDirectiveNoFileComp))
}

// ToOptions validates the flags and the namespaces named, and builds
// purge's options. dryRunSet tells whether --dry-run was given (it
// conflicts with --force unless it says none).
func (f *PurgeFlags) ToOptions(names []string, dryRunSet bool) (purge.Options, error) {
	mode, err := purge.ParseDryRun(f.DryRun)
	if err != nil {
		return purge.Options{}, usageErrorf("%v", err)
	}
	if f.Force {
		if dryRunSet && mode != purge.DryRunNone {
			return purge.Options{}, usageErrorf("--force conflicts with --dry-run=%s: choose one", f.DryRun)
		}
		mode = purge.DryRunNone
	}
	asked := f.Escalations.asked()
	if err := f.validate(names, asked); err != nil {
		return purge.Options{}, err
	}
	return purge.Options{
		DryRun: mode, Escalations: asked,
		BackupDir: f.BackupDir, Timeout: f.Timeout, Orphans: f.Orphans, Workers: purgeWorkers,
	}, nil
}

// validate rejects bad input before anything is sent.
func (f *PurgeFlags) validate(names []string, asked purge.Asked) error {
	for _, name := range names {
		if err := validateNamespaceName(name); err != nil {
			return err
		}
		if purge.IsSystemNamespace(name) && !f.AllowSystemNamespace {
			return usageErrorf("refusing to purge the system namespace %q (add --allow-system-namespace if you really mean it)", name)
		}
	}
	if err := asked.Check(); err != nil {
		return usageErrorf("%v", err)
	}
	if f.Timeout <= 0 {
		return usageErrorf("--timeout must be positive, got %s", f.Timeout)
	}
	if _, err := labels.Parse(f.Selector); err != nil {
		return usageErrorf("invalid --selector %q: %v", f.Selector, err)
	}
	switch {
	case len(names) == 0 && f.Selector == "" && !f.AllTerminating:
		return usageErrorf("purge needs namespaces: NAME..., -l SELECTOR or --all-terminating (see 'kubectl ns-doctor purge --help')")
	case len(names) > 0 && (f.Selector != "" || f.AllTerminating):
		return usageErrorf("give namespace NAMEs, or choose them with -l / --all-terminating, not both")
	case f.Orphans && len(names) == 0:
		return usageErrorf("--orphans needs the former namespaces' NAMEs (list them with 'kubectl ns-doctor explain --orphans')")
	case f.Orphans && asked.Has(diagnose.FlagDeleteNamespace):
		return usageErrorf("--orphans conflicts with --delete-namespace: a former namespace is gone already")
	}
	return nil
}

// purgeWorkers bounds the resource types a pass deletes at once, as
// explain's sweep bounds its lists (the same 48).
const purgeWorkers = 48

// PurgeOptions holds purge's state (Complete/Run).
type PurgeOptions struct {
	genericiooptions.IOStreams
	Flags      PurgeFlags
	PrintFlags printFlags
	Ordering   orderingFlag

	// Names are the namespaces named on the command line.
	Names   []string
	Purge   purge.Options
	Fleet   fleetFlags
	factory Factory
	flags   *genericclioptions.ConfigFlags
}

func newPurgeCommand(f Factory, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PurgeOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "purge NAME... | -l SELECTOR | --all-terminating",
		Short: "Finish a namespace's deletion with the namespace controller's own pass",
		Long: `Run the namespace controller's deletion pass on a terminating namespace.

By default it only prints the plan (--dry-run=client). --dry-run=server sends every request as a
dry run, so admission webhooks and RBAC answer without anything being persisted. --force (or
--dry-run=none) acts: after a confirmation, it checks its permissions, saves every object it
deletes or changes to a backup folder, and repeats the pass until the namespace is gone or
--timeout expires. Escalations go beyond what the controller does; each is shown in the plan first,
and the confirmation says what it leaks: ` + escalationList(everyEscalation) + `.

When the namespace stays (a plan that would not finish, a run stopped), the report ends with what
holds it, each blocker with its next step: the purge command line with the flag that gets past it,
or the fix outside ns-doctor. A run whose passes change nothing, refused in ways only an outside
action clears (a webhook or conversion backend gone, Forbidden), stops at once instead of waiting
out --timeout.

Exit codes: 0 done (or planned), 5 namespace still there (--timeout, or stopped because waiting
cannot help), 4 not found, 2 bad usage, 1 error.`,
		Example: `  # What would the namespace controller do now?
  kubectl ns-doctor purge demo

  # Ask the server: would webhooks or RBAC reject any step?
  kubectl ns-doctor purge demo --dry-run=server --remove-finalizers='example.com/*'

  # Do it, stripping the finalizers of an uninstalled operator
  kubectl ns-doctor purge demo --force --remove-finalizers='example.com/*'

  # Pods on a node that is gone, and a webhook whose service went with the namespace
  kubectl ns-doctor purge demo --force --force-delete-pods --bypass-webhook=demo-validator

  # Every namespace an uninstalled operator left stuck, in one run
  kubectl ns-doctor purge --all-terminating --force --remove-finalizers='example.com/*'

  # What a namespace finalized by hand left in storage (see 'explain --orphans')
  kubectl ns-doctor purge --orphans old-team --force`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeNamespaces(flags),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, flags, cmd, args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.Flags.AddFlags(cmd)
	o.PrintFlags.addFlags(cmd)
	o.Ordering.addFlag(cmd)
	o.Fleet.addFlags(cmd.Flags())
	registerEscalationCompletions(cmd, flags)
	registerContextCompletion(cmd, flags)
	return cmd
}

// Complete validates the flags and arguments (ToOptions) and builds the
// engine's options; nothing is sent before it succeeds.
func (o *PurgeOptions) Complete(f Factory, flags *genericclioptions.ConfigFlags, cmd *cobra.Command, args []string) error {
	o.Names, o.factory, o.flags = args, f, flags
	if err := o.Ordering.validate(); err != nil {
		return err
	}
	if o.Fleet.on() && (len(args) > 0 || o.Flags.Orphans || o.Flags.Selector == "" && !o.Flags.AllTerminating) {
		return usageErrorf("--all-contexts and --contexts purge many clusters only with -l SELECTOR or --all-terminating: no NAME, no --orphans")
	}
	if err := o.Fleet.validate(flags); err != nil {
		return err
	}
	if err := o.PrintFlags.validate(); err != nil {
		return err
	}
	var err error
	if o.Purge, err = o.Flags.ToOptions(args, cmd.Flags().Changed("dry-run")); err != nil {
		return err
	}
	o.Purge.Context, o.Purge.Cluster = target(f, flags)
	return nil
}

// Run plans or purges and prints the report.
func (o *PurgeOptions) Run(ctx context.Context) error {
	if o.Fleet.on() {
		return o.runFleet(ctx)
	}
	clients, err := o.factory.Clients()
	if err != nil {
		return err
	}
	names := o.Names
	if len(names) == 0 {
		if names, err = o.chosen(ctx, clients); err != nil {
			return err
		}
		if len(names) == 0 {
			return o.PrintFlags.toPrinter(o.Out).Purges(o.Out, nil)
		}
	}
	if err := o.precheck(ctx, clients); err != nil {
		return err
	}
	announce := ""
	switch {
	case o.Purge.DryRun != purge.DryRunNone:
	case !o.Flags.Yes:
		if err := o.confirm(ctx, names); err != nil {
			return err
		}
	default:
		// No prompt named the cluster: say where the writes go, before
		// the first one (the backup opens just before it), as the prompt
		// would have.
		announce = fmt.Sprintf("purge --force --yes: writing to context %q, cluster %q (%d namespace(s))", o.Purge.Context, o.Purge.Cluster, len(names))
	}
	if o.Purge.OrderedDeletion, err = o.Ordering.resolve(ctx, clients); err != nil {
		return err
	}
	in := prefetchDiscovery(ctx, clients)
	stop := o.showProgress(len(o.Names) != 1, announce)
	p := &purge.Purger{Clients: clients, Opts: o.Purge, Inspector: in}
	var results []purge.Result
	if len(o.Names) == 1 {
		report, runErr := p.Run(ctx, o.Names[0])
		results = []purge.Result{{Report: report, Err: runErr}}
	} else {
		results = p.RunMany(ctx, names)
	}
	stop() // before the report, on the same terminal
	return o.finish(results, names, len(o.Names) != 1)
}

// showProgress shows a force run's events on stderr, as they come: in
// place on a terminal, a line per pass otherwise. A plan, or -o json|yaml
// on a terminal (as kubectl, the report holds what the lines would say),
// shows only the API server's warnings. It returns what ends the display.
func (o *PurgeOptions) showProgress(many bool, announce string) func() {
	terminal := isTerminal(o.ErrOut)
	progress := printer.NewWarnings(o.ErrOut)
	if o.Purge.DryRun == purge.DryRunNone && (!terminal || !o.PrintFlags.isMachine()) {
		p := printer.NewProgress(o.ErrOut, terminal, many)
		p.ByContext = o.Fleet.on()
		progress = p
	}
	events := make(chan purge.Event, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range events {
			if e.Kind == purge.EventBackup && announce != "" {
				_, _ = fmt.Fprintln(o.ErrOut, printer.Escape(announce))
				announce = ""
			}
			progress.Show(e)
		}
		progress.Close()
	}()
	o.Purge.Events = events
	return func() {
		close(events)
		<-done
	}
}

// chosen lists the terminating namespaces -l or --all-terminating choose,
// leaving out the system ones unless allowed.
func (o *PurgeOptions) chosen(ctx context.Context, clients *kube.Clients) ([]string, error) {
	list, err := inspect.New(clients, inspect.Config{}).Terminating(ctx, o.Flags.Selector)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range list {
		if purge.IsSystemNamespace(ns.Name) && !o.Flags.AllowSystemNamespace {
			_, _ = fmt.Fprintf(o.ErrOut, "skipping the system namespace %s (add --allow-system-namespace if you really mean it)\n", ns.Name)
			continue
		}
		out = append(out, ns.Name)
	}
	return out, nil
}

// finish prints the reports and returns the worst namespace's exit code.
func (o *PurgeOptions) finish(results []purge.Result, names []string, many bool) error {
	var reports []*purge.Report
	var errs []error
	for i, res := range results {
		err := purgeError(names[i], res)
		if err == nil || res.Report != nil && !isPreflight(err) {
			reports = append(reports, res.Report)
		}
		errs = append(errs, err)
	}
	pr := o.PrintFlags.toPrinter(o.Out)
	if !many {
		if len(reports) == 1 {
			if err := pr.Purge(o.Out, reports[0]); err != nil {
				return err
			}
		}
		return errs[0]
	}
	if len(reports) > 0 || o.PrintFlags.isMachine() {
		if err := pr.Purges(o.Out, reports); err != nil {
			return err
		}
	}
	return worst(errs, names)
}

// purgeError maps one namespace's outcome to the error its exit code
// comes from, nil for success.
func purgeError(name string, res purge.Result) error {
	var usage *purge.UsageError
	switch err := res.Err; {
	case errors.As(err, &usage):
		return usageErrorf("%s", usage.Error())
	case errors.Is(err, purge.ErrNotFound):
		return notFoundErrorf("namespace %q not found (it may already be deleted)", name)
	case errors.Is(err, purge.ErrNamespaceExists):
		return usageErrorf("namespace %q exists, so its content is not orphaned: purge it without --orphans", name)
	case errors.Is(err, purge.ErrActive):
		return usageErrorf("namespace %q is Active: purge finishes deletions; add --delete-namespace to delete it first", name)
	case errors.Is(err, access.ErrMissing):
		return fmt.Errorf("missing %d permission(s): %s; nothing was changed", len(res.Report.MissingPermissions), firstOf(access.Words(res.Report.MissingPermissions), 3))
	case err != nil:
		return err
	case res.Report.Outcome == purge.OutcomeRemaining:
		return &exitError{code: ExitIncomplete, msg: printer.PurgeMessage(res.Report)}
	}
	return nil
}

// firstOf names the first n of list, and how many more there are: the
// error line of a refused run says what is missing even where the report
// lists none (the table of several namespaces).
func firstOf(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more (the report lists all)", strings.Join(list[:n], ", "), len(list)-n)
}

// isPreflight tells errors found before any report was worth printing.
func isPreflight(err error) bool {
	code := exitCode(err)
	return code == ExitUsage || code == ExitNotFound
}

// worst is the error of the namespace whose exit code is the worst:
// error, then usage, then incomplete, then not found, then success. With
// several namespaces failing, its message names how many.
func worst(errs []error, names []string) error {
	rank := map[int]int{ExitOK: 0, ExitNotFound: 1, ExitIncomplete: 2, ExitUsage: 3, ExitError: 4}
	var out error
	failed := 0
	for i, err := range errs {
		if err == nil {
			continue
		}
		failed++
		if out == nil || rank[exitCode(err)] > rank[exitCode(out)] {
			out = fmt.Errorf("%s: %w", names[i], err)
		}
	}
	if out == nil {
		return nil
	}
	msg := describe(out, "")
	if failed > 1 {
		msg = fmt.Sprintf("%d of %d namespaces did not finish; the worst: %s", failed, len(names), msg)
	}
	return &exitError{code: exitCode(out), msg: msg}
}

// precheck refuses, before a force run's confirmation, escalation values
// that name nothing the run may act on: nobody is asked to consent to what
// would be refused.
func (o *PurgeOptions) precheck(ctx context.Context, clients *kube.Clients) error {
	if o.Purge.DryRun != purge.DryRunNone {
		return nil
	}
	var usage *purge.UsageError
	if err := (&purge.Purger{Clients: clients, Opts: o.Purge}).Precheck(ctx); errors.As(err, &usage) {
		return usageErrorf("%s", usage.Error())
	} else if err != nil {
		return err
	}
	return nil
}

// confirm asks on the terminal for the namespace name (for several, their
// number); without a terminal it refuses, since acting needs explicit
// consent.
func (o *PurgeOptions) confirm(ctx context.Context, names []string) error {
	if !isTerminal(o.In) {
		return usageErrorf("refusing to act without confirmation and no terminal to ask on: add --yes (or run the plan first: drop --force)")
	}
	req := o.confirmation(names)
	_, _ = fmt.Fprint(o.ErrOut, req.Prompt())
	return o.expectAnswer(ctx, req)
}

// confirmation is what the person is asked (printer.PurgeConfirmation: the
// words an agent's elicitation says too).
func (o *PurgeOptions) confirmation(names []string) consent.Request {
	return printer.PurgeConfirmation{Names: names, Orphans: o.Flags.Orphans, Context: o.Purge.Context, Cluster: o.Purge.Cluster,
		Consent: o.Purge.Escalations.Consent()}.Request()
}

// expectAnswer reads the answer to a confirmation: only what req accepts
// goes on, and Ctrl-C at the prompt ends the command at once.
func (o *PurgeOptions) expectAnswer(ctx context.Context, req consent.Request) error {
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(o.In).ReadString('\n')
		answer <- line
	}()
	select {
	case <-ctx.Done():
		return &exitError{code: ExitError, msg: "interrupted: nothing was changed"}
	case line := <-answer:
		if !req.Accepts(line) {
			return &exitError{code: ExitError, msg: "not confirmed: nothing was changed"}
		}
	}
	return nil
}
