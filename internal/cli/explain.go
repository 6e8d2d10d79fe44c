package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/await"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// ExplainOptions holds explain's flags and state (kubectl's
// Complete/Validate/Run pattern).
type ExplainOptions struct {
	genericiooptions.IOStreams
	PrintFlags printFlags
	Ordering   orderingFlag

	Names           []string
	Selector        string
	IfDeleted       bool
	Grace           time.Duration
	Wait            time.Duration
	DeleteNamespace bool
	Orphans         bool
	// Full prints each namespace's full report where the list view would
	// be (no NAME, -l, many clusters).
	Full  bool
	Fleet fleetFlags

	factory Factory
	flags   *genericclioptions.ConfigFlags
	clients *kube.Clients
	// inspect is what each diagnosis is asked, once the cluster's
	// version is known.
	inspect inspect.Options
}

func newExplainCommand(f Factory, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ExplainOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "explain [NAME...]",
		Short: "Explain why a namespace is stuck in Terminating",
		Long: `Explain why a namespace is stuck in Terminating: its conditions beside ns-doctor's
own evaluation, what remains in it per resource type, and each blocker with the next step.
With no NAME: one line for every terminating namespace, sharing one API discovery; -o json|yaml
prints that list view as data (NamespaceSummaryList), and --full the full report of each
(NamespaceDiagnosisList), as with NAMEs.

--wait waits for the namespaces to be gone, watching them, and says as it goes what still holds
each; if they are not gone in time, it prints the full report of each one still there.

--orphans lists what namespaces that no longer exist left in storage: a finalize forced with
content left keeps it there, and a new namespace of the same name inherits it.

Exit codes: 0 not stuck (with --wait: all gone; with --orphans: none), 3 stuck (with --wait: not
gone in time; with --orphans: leftovers found),
4 namespace not found, 2 bad usage, 1 error. With several namespaces, the worst.`,
		Example: `  # Why is namespace "demo" still there?
  kubectl ns-doctor explain demo

  # The same, for automation
  kubectl ns-doctor explain demo -o json

  # Every terminating namespace, a line each; or those with a label
  kubectl ns-doctor explain
  kubectl ns-doctor explain -l team=a

  # The same as data; or every namespace's full report
  kubectl ns-doctor explain -o json
  kubectl ns-doctor explain -o json --full

  # In a teardown script: wait for the namespaces to go, and say why not
  kubectl delete namespace ci-1 ci-2 --wait=false
  kubectl ns-doctor explain ci-1 ci-2 --wait=5m

  # What would block deleting an Active namespace today?
  kubectl ns-doctor explain team-a --if-deleted

  # What did namespaces finalized by hand leave in storage?
  kubectl ns-doctor explain --orphans

  # Every terminating namespace of every production cluster in the kubeconfig
  kubectl ns-doctor explain --contexts='prod-*' --request-timeout=10s`,
		Args:              cobra.ArbitraryArgs,
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
	fs := cmd.Flags()
	fs.StringVarP(&o.Selector, "selector", "l", "", "Explain the namespaces with these labels (a label selector, as kubectl's -l)")
	fs.BoolVar(&o.IfDeleted, "if-deleted", false, "For an Active namespace: list what would block its deletion if it were deleted now")
	fs.DurationVar(&o.Grace, "grace", diagnose.DefaultGrace, "How long a deletion step may take before it is called stuck (no controller conditions, content waiting for finalizers); 0 reports at once")
	fs.DurationVar(&o.Wait, "wait", 0, "Wait up to this long for the namespaces to be gone, showing what holds each meanwhile; then report those still there")
	fs.BoolVar(&o.Orphans, "orphans", false, "List what namespaces that no longer exist left in storage (a finalize forced with content left); a NAME: that former namespace only")
	fs.BoolVar(&o.DeleteNamespace, "delete-namespace", false, "With --wait: delete the namespaces that are Active first (without it, an Active one is an error)")
	fs.BoolVar(&o.Full, "full", false, "With no NAME or with -l: print each namespace's full report instead of a line each (-o: a NamespaceDiagnosisList instead of a NamespaceSummaryList)")
	o.Fleet.addFlags(fs)
	registerContextCompletion(cmd, flags)
	return cmd
}

// Complete fills the options from the arguments.
func (o *ExplainOptions) Complete(f Factory, flags *genericclioptions.ConfigFlags, args []string) error {
	o.factory, o.Names, o.flags = f, args, flags
	if len(args) == 0 && flags.Namespace != nil && *flags.Namespace != "" && !o.Fleet.on() {
		// kubectl users reach for -n; an explicit one names the namespace.
		o.Names = []string{*flags.Namespace}
	}
	return nil
}

// Validate rejects bad input before anything is sent to the cluster.
func (o *ExplainOptions) Validate() error {
	for _, name := range o.Names {
		if err := validateNamespaceName(name); err != nil {
			return err
		}
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return usageErrorf("invalid --selector %q: %v", o.Selector, err)
	}
	switch {
	case len(o.Names) > 0 && o.Selector != "":
		return usageErrorf("give namespace NAMEs or -l SELECTOR, not both")
	case o.IfDeleted && len(o.Names) == 0:
		return usageErrorf("--if-deleted needs a namespace NAME")
	case o.Grace < 0:
		return usageErrorf("--grace must not be negative, got %s", o.Grace)
	case o.Wait < 0:
		return usageErrorf("--wait must not be negative, got %s", o.Wait)
	case o.DeleteNamespace && o.Wait == 0:
		return usageErrorf("--delete-namespace goes with --wait: explain deletes nothing otherwise")
	case o.Wait > 0 && o.IfDeleted:
		return usageErrorf("--wait conflicts with --if-deleted: choose one")
	case o.Orphans && (len(o.Names) > 1 || o.Selector != "" || o.Wait > 0 || o.IfDeleted || o.Full):
		return usageErrorf("--orphans takes at most one NAME (a former namespace), and no -l, --wait, --if-deleted or --full")
	}
	if err := o.validateFleet(); err != nil {
		return err
	}
	if err := o.Ordering.validate(); err != nil {
		return err
	}
	return o.PrintFlags.validate()
}

// validateFleet: over many clusters explain reports every terminating
// namespace (or -l's), as a list.
func (o *ExplainOptions) validateFleet() error {
	if !o.Fleet.on() {
		return nil
	}
	if len(o.Names) > 0 || o.Wait > 0 || o.Orphans || o.IfDeleted {
		return usageErrorf("--all-contexts and --contexts explain every terminating namespace of each cluster (or those -l selects): they take no NAME, --wait, --orphans or --if-deleted")
	}
	return o.Fleet.validate(o.flags)
}

// Run diagnoses the namespaces and prints, after waiting for them to go
// when asked.
func (o *ExplainOptions) Run(ctx context.Context) error {
	if o.Fleet.on() {
		return o.runFleet(ctx)
	}
	var err error
	if o.clients, err = o.factory.Clients(); err != nil {
		return err
	}
	ordering, err := o.Ordering.resolve(ctx, o.clients)
	if err != nil {
		return err
	}
	in := prefetchDiscovery(ctx, o.clients)
	o.inspect = inspect.Options{Grace: o.Grace, IfDeleted: o.IfDeleted, Protection: o.IfDeleted, Ordering: ordering}
	if o.Orphans {
		return o.orphans(ctx, in)
	}
	targets, missing, err := o.targets(ctx, in)
	if err != nil {
		return err
	}
	if o.Wait > 0 {
		return o.waitFor(ctx, in, targets)
	}
	reports, err := in.ExplainAll(ctx, targets, o.inspect)
	if err != nil {
		return err
	}
	if len(reports) > 0 || len(missing) == 0 { // only missing ones: just the error
		if err := o.print(reports); err != nil {
			return err
		}
	}
	return o.exitFor(reports, missing)
}

// targets are the namespaces to explain: those named (missing ones
// apart), those the selector chooses, or every terminating one.
func (o *ExplainOptions) targets(ctx context.Context, in *inspect.Inspector) ([]v1.Namespace, []string, error) {
	if len(o.Names) == 0 {
		if o.Selector != "" {
			out, err := in.Selected(ctx, o.Selector)
			return out, nil, err
		}
		out, err := in.Terminating(ctx, "")
		return out, nil, err
	}
	var out []v1.Namespace
	var missing []string
	for _, name := range o.Names {
		ns, err := in.Namespace(ctx, name)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, name)
		case apierrors.IsForbidden(err):
			return nil, nil, lostAccess(err, name)
		case err != nil:
			return nil, nil, err
		default:
			out = append(out, *ns)
		}
	}
	return out, missing, nil
}

// print renders the reports: one full report for one named namespace (or
// several, one after another), a line each for every terminating one or a
// selector's, unless --full.
func (o *ExplainOptions) print(reports []diagnose.Report) error {
	pr := o.PrintFlags.toPrinter(o.Out)
	switch {
	case len(o.Names) == 1 && len(reports) == 1 && o.Wait == 0:
		return pr.Diagnosis(o.Out, reports[0])
	case len(o.Names) > 0 || o.Full:
		return pr.Diagnoses(o.Out, reports)
	}
	return pr.Summaries(o.Out, reports)
}

// exitFor is the worst namespace's exit: not found, then stuck.
func (o *ExplainOptions) exitFor(reports []diagnose.Report, missing []string) error {
	if len(missing) > 0 {
		return notFoundErrorf("namespace %s not found (it may already be deleted): list namespaces with 'kubectl get namespaces'", quoted(missing))
	}
	for _, r := range reports {
		if err := stuckExit(r); err != nil {
			return err
		}
	}
	return nil
}

// waitFor deletes the Active namespaces when asked (refuses otherwise),
// waits for all to go, and reports those still there when the wait ends.
func (o *ExplainOptions) waitFor(ctx context.Context, in *inspect.Inspector, targets []v1.Namespace) error {
	var names, active []string
	for _, ns := range targets {
		names = append(names, ns.Name)
		if ns.DeletionTimestamp == nil {
			active = append(active, ns.Name)
		}
	}
	if len(active) > 0 && !o.DeleteNamespace {
		return usageErrorf("namespace %s is Active: --wait waits for a deletion; delete it first, or add --delete-namespace", quoted(active))
	}
	for _, name := range active {
		if err := o.clients.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting namespace %s: %w", name, err)
		}
	}
	live := printer.NewLive(o.ErrOut, !o.PrintFlags.isMachine() && isTerminal(o.ErrOut))
	wctx, cancel := context.WithTimeout(ctx, o.Wait)
	defer cancel()
	started := time.Now()
	// Each namespace's last read: content still going is not stuck.
	var mu sync.Mutex
	earlier := map[string]*diagnose.EarlierRead{}
	w := &await.Waiter{
		Client: o.clients.Kube,
		Status: func(ctx context.Context, ns *v1.Namespace) string {
			mu.Lock()
			last := earlier[ns.Name]
			mu.Unlock()
			r, err := in.ExplainSince(ctx, ns, last, o.inspect)
			if err != nil {
				return fmt.Sprintf("%s: %v", ns.Name, err)
			}
			mu.Lock()
			earlier[ns.Name] = r.EarlierRead()
			mu.Unlock()
			return printer.StatusLine(r)
		},
		OnStatus: func(name, status string) { live.Set(name, status) },
		OnGone: func(name string) {
			live.Done(name, fmt.Sprintf("%s: gone after %s", name, time.Since(started).Round(100*time.Millisecond)))
		},
	}
	left, err := w.Wait(wctx, names)
	live.Close()
	switch {
	case errors.Is(err, context.Canceled):
		// Ctrl-C: the reports would need the API server again; name what
		// is left and how to see why.
		return &exitError{code: ExitError, msg: fmt.Sprintf("interrupted after %s of --wait=%s; still there: %s (kubectl ns-doctor explain NAME says why)",
			time.Since(started).Round(time.Second), o.Wait, strings.Join(left, ", "))}
	case err != nil && !errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return o.leftAfterWait(ctx, in, left, earlier)
}

// leftAfterWait prints the full reports of the namespaces still there,
// with explain's stuck exit; none left prints the empty list (-o) or
// nothing, and exits 0.
func (o *ExplainOptions) leftAfterWait(ctx context.Context, in *inspect.Inspector, left []string, earlier map[string]*diagnose.EarlierRead) error {
	var reports []diagnose.Report
	for _, name := range left {
		ns, err := in.Namespace(ctx, name)
		if apierrors.IsNotFound(err) {
			continue // gone just now
		}
		if err != nil {
			return err
		}
		report, err := in.ExplainSince(ctx, ns, earlier[name], o.inspect)
		if err != nil {
			return err
		}
		reports = append(reports, report)
	}
	if o.PrintFlags.isMachine() || len(reports) > 0 {
		if err := o.PrintFlags.toPrinter(o.Out).Diagnoses(o.Out, reports); err != nil {
			return err
		}
	}
	if len(reports) > 0 {
		names := make([]string, 0, len(reports))
		for _, r := range reports {
			names = append(names, r.Namespace.Name)
		}
		return &exitError{code: ExitStuck, msg: fmt.Sprintf("still there after --wait=%s: %s (why: above)", o.Wait, strings.Join(names, ", "))}
	}
	return nil
}

// orphans lists the leftovers of namespaces that are gone; finding some
// exits 3, as a stuck namespace does: there is something to clean up.
func (o *ExplainOptions) orphans(ctx context.Context, in *inspect.Inspector) error {
	only := ""
	if len(o.Names) == 1 {
		only = o.Names[0]
	}
	obs, err := in.Orphans(ctx, only)
	if errors.Is(err, inspect.ErrNamespaceExists) {
		return usageErrorf("namespace %q exists, so its content is not orphaned: explain it without --orphans", only)
	}
	if err != nil {
		return err
	}
	report := diagnose.Orphans(obs)
	if err := o.PrintFlags.toPrinter(o.Out).Orphans(o.Out, report); err != nil {
		return err
	}
	if len(report.Namespaces) > 0 {
		return &exitError{code: ExitStuck}
	}
	return nil
}

// prefetchDiscovery starts the API discovery (with the webhook and CRD
// lists) while the server's version and the namespaces are read: over a
// slow link it costs no round trip of its own. The inspector keeps it; an
// error is met again, and reported, when the discovery is used.
func prefetchDiscovery(ctx context.Context, clients *kube.Clients) *inspect.Inspector {
	in := inspect.New(clients, inspect.Config{Compact: true})
	go func() { _, _ = in.Discover(ctx) }()
	return in
}

// stuckExit turns a stuck verdict into exit code 3, printing nothing more.
func stuckExit(r diagnose.Report) error {
	if r.Verdict.State == diagnose.StateStuck {
		return &exitError{code: ExitStuck}
	}
	return nil
}

// quoted lists names as "a", "b".
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func validateNamespaceName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return usageErrorf("%q is not a valid namespace name: %s", name, errs[0])
	}
	return nil
}
