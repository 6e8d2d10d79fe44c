package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/internal/watch"
)

// WatchOptions holds watch's flags and state (Complete/Validate/Run).
type WatchOptions struct {
	genericiooptions.IOStreams
	Ordering orderingFlag

	After, Resync, Grace time.Duration
	Workers              int
	MetricsAddr          string
	Output               string
	LeaderElect          bool
	Leader               watch.LeaderElection
	Janitor              janitorFlags
	Guard                guardFlags

	factory Factory
	flags   *genericclioptions.ConfigFlags
	janitor *watch.JanitorOptions
	// out serializes the lines of concurrent workers.
	out sync.Mutex
}

// janitorFlags are the janitor's: its selector and timing, and the only
// escalations of purge it may use.
type janitorFlags struct {
	Selector  string
	After     time.Duration
	Force     bool
	Timeout   time.Duration
	BackupDir string
	// Escalations are those of purge.Escalations() the janitor may use.
	Escalations escalationFlags
}

// janitorOnlyFlags need --purge-selector: the janitor's own, and its
// escalations.
func (j *janitorFlags) onlyFlags() []string {
	return append([]string{"purge-after", "purge-force", "purge-timeout", "backup-dir"}, j.Escalations.names()...)
}

// janitorEscalation keeps the escalations the janitor may use.
func janitorEscalation(e purge.Escalation) bool { return e.Janitor }

// janitorHelp is an escalation's help on watch.
func janitorHelp(e purge.Escalation) string {
	return strings.Replace(e.Help, "Escalation:", "Janitor escalation:", 1) + ", as purge's"
}

func newWatchCommand(f Factory, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &WatchOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Watch for stuck namespaces: Events, metrics, and an opt-in janitor",
		Long: `Watch namespaces, as a controller does, and say why each one is stuck before anyone asks.

A namespace that has been terminating for --after is diagnosed with explain's engine, again when
it changes and every --resync, and forgotten when it goes. Each stuck one gets a Warning Event
NamespaceStuck (filed in the namespace default, as for every cluster-scoped object) naming its
blockers and the next step, kept up to date rather than repeated; /metrics exports
nsdoctor_namespace_blocker and the others (deploy/README.md); -o json prints one JSON line per
changed diagnosis. Read-only, unless the janitor or the guard is switched on (the guard writes
only its own webhook configuration and, in the cluster, its Secret).

The janitor (--purge-selector) runs purge on the terminating namespaces that match, once they have
been terminating for --purge-after, with only the escalations given here (of ` + escalationList(janitorEscalation) + `):
server dry runs, recorded as NamespacePurgePlanned Events, unless --purge-force. System namespaces
are never purged.

The deletion guard (--guard=warn|deny) also serves an admission webhook for DELETE of namespaces and
CRDs: at each kubectl delete it predicts, as explain --if-deleted does, whether the deletion would
stick, within --guard-timeout; warn allows it with a warning per predicted blocker, deny refuses
what it is sure of (unless the namespace carries ns-doctor.io/allow-stuck-deletion=true or the
requester is in --guard-exempt-groups). It fails open, and is never asked about what the namespace
controller sends. Out of the cluster --guard-addr registers it with its own CA; in the cluster
deploy/guard runs it (docs/guard.md).

Exit codes: 0 stopped by a signal, 2 bad usage, 1 error (a metrics or guard address in use, a Lease
lost, a guard not allowed to register).`,
		Example: `  # Out of the cluster, with your kubeconfig: diagnose what has been terminating for 5 minutes
  kubectl ns-doctor watch --metrics-addr=127.0.0.1:8080

  # For a log pipeline: a JSON line per changed diagnosis
  kubectl ns-doctor watch -o json --metrics-addr=0

  # In the cluster (deploy/): two replicas, one leader
  kubectl-ns_doctor watch --leader-elect --metrics-addr=:8080

  # Tell whoever deletes a namespace that would stick, in their terminal (out of the cluster)
  kubectl ns-doctor watch --guard=warn --guard-addr=127.0.0.1:8443

  # Janitor for CI namespaces, planning only (server dry runs) until --purge-force
  kubectl ns-doctor watch --purge-selector=ci=true --purge-after=30m --remove-finalizers='example.com/*'`,
		Args: exactArgs(0, "none"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(f, flags, cmd); err != nil {
				return err
			}
			if err := o.Validate(cmd.Flags()); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.Ordering.addFlag(cmd)
	o.addFlags(cmd.Flags())
	o.Guard.addFlags(cmd.Flags())
	registerGuardCompletions(cmd)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (o *WatchOptions) addFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.After, "after", 5*time.Minute, "Diagnose a namespace once it has been terminating this long")
	fs.DurationVar(&o.Resync, "resync", time.Minute, "Diagnose every terminating namespace again this often")
	fs.DurationVar(&o.Grace, "grace", diagnose.DefaultGrace, "How long a deletion step may take before it is called stuck (as explain's --grace)")
	fs.IntVar(&o.Workers, "workers", 2, "Namespaces diagnosed at once")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", ":8080", "Serve /metrics, /healthz and /readyz on this address; 0 serves none")
	fs.StringVarP(&o.Output, "output", "o", "", "json: one JSON line (a Diagnosis, docs/schema.md) per changed diagnosis on stdout; empty: a line of text each")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "Diagnose only while holding a Lease, so that one of several replicas works at a time")
	fs.DurationVar(&o.Leader.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a standby waits before taking a Lease its leader stopped renewing")
	fs.DurationVar(&o.Leader.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader tries to renew its Lease before it stops leading")
	fs.DurationVar(&o.Leader.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "How often replicas try to take or renew the Lease")
	fs.StringVar(&o.Leader.Name, "leader-elect-resource-name", "ns-doctor-watch", "The Lease's name")
	fs.StringVar(&o.Leader.Namespace, "leader-elect-resource-namespace", "", "The Lease's namespace (default: $POD_NAMESPACE, else ns-doctor)")
	j := &o.Janitor
	fs.StringVar(&j.Selector, "purge-selector", "", "Janitor: purge the terminating namespaces with these labels (a label selector; system namespaces never)")
	fs.DurationVar(&j.After, "purge-after", 30*time.Minute, "Janitor: purge a chosen namespace once it has been terminating this long, and again this often while it stays")
	fs.BoolVar(&j.Force, "purge-force", false, "Janitor: act for real (default: server dry runs, recorded as NamespacePurgePlanned Events)")
	fs.DurationVar(&j.Timeout, "purge-timeout", 5*time.Minute, "Janitor: how long one purge keeps repeating its pass (as purge's --timeout)")
	fs.StringVar(&j.BackupDir, "backup-dir", "", "Janitor: save what each purge deletes or changes under this folder, in NAME-TIME (default: the user cache dir)")
	j.Escalations.add(fs, janitorEscalation, janitorHelp)
}

// Complete fills in what the flags leave to the environment.
func (o *WatchOptions) Complete(f Factory, flags *genericclioptions.ConfigFlags, _ *cobra.Command) error {
	o.factory, o.flags = f, flags
	if o.Leader.Namespace == "" {
		o.Leader.Namespace = envOr("POD_NAMESPACE", "ns-doctor")
	}
	if o.Leader.Identity == "" {
		host, _ := os.Hostname()
		o.Leader.Identity = envOr("POD_NAME", host) + "_" + string(uuid.NewUUID())
	}
	return nil
}

// Validate rejects bad input before anything is sent.
func (o *WatchOptions) Validate(fs *pflag.FlagSet) error {
	switch {
	case o.After < 0:
		return usageErrorf("--after must not be negative, got %s", o.After)
	case o.Resync <= 0:
		return usageErrorf("--resync must be positive, got %s", o.Resync)
	case o.Grace < 0:
		return usageErrorf("--grace must not be negative, got %s", o.Grace)
	case o.Workers < 1:
		return usageErrorf("--workers must be at least 1, got %d", o.Workers)
	case o.Output != "" && o.Output != "json":
		return usageErrorf("watch prints -o json (a JSON line per changed diagnosis) or text: %q is not one of them", o.Output)
	case o.LeaderElect && (o.Leader.RetryPeriod <= 0 || o.Leader.RenewDeadline <= o.Leader.RetryPeriod || o.Leader.LeaseDuration <= o.Leader.RenewDeadline):
		return usageErrorf("leader election needs 0 < --leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration")
	}
	if err := o.Ordering.validate(); err != nil {
		return err
	}
	if err := o.Guard.validate(fs); err != nil {
		return err
	}
	return o.validateJanitor(fs)
}

// validateJanitor: the janitor's flags only with its selector, and a
// selector that cannot be everything.
func (o *WatchOptions) validateJanitor(fs *pflag.FlagSet) error {
	j := o.Janitor
	if !fs.Changed("purge-selector") {
		for _, name := range j.onlyFlags() {
			if fs.Changed(name) {
				return usageErrorf("--%s is the janitor's: it needs --purge-selector (the namespaces the janitor may purge)", name)
			}
		}
		return nil
	}
	selector, err := labels.Parse(j.Selector)
	if err != nil {
		return usageErrorf("invalid --purge-selector %q: %v", j.Selector, err)
	}
	if selector.Empty() {
		return usageErrorf("--purge-selector %q selects every namespace: give labels that only the namespaces to purge carry", j.Selector)
	}
	if j.After <= 0 || j.Timeout <= 0 {
		return usageErrorf("--purge-after and --purge-timeout must be positive")
	}
	asked := j.Escalations.asked()
	pf := PurgeFlags{Timeout: j.Timeout, AllTerminating: true}
	if err := pf.validate(nil, asked); err != nil {
		return err
	}
	mode := purge.DryRunServer
	if j.Force {
		mode = purge.DryRunNone
	}
	o.janitor = &watch.JanitorOptions{Selector: selector, After: j.After, Purge: purge.Options{
		DryRun: mode, Escalations: asked, BackupDir: j.BackupDir, Timeout: j.Timeout, Workers: purgeWorkers,
	}}
	return nil
}

// Run watches until ctx ends (a signal): exit 0.
func (o *WatchOptions) Run(ctx context.Context) error {
	clients, err := o.factory.Clients()
	if err != nil {
		return err
	}
	metrics := watch.NewMetrics()
	var checks []watch.HealthCheck
	if o.LeaderElect {
		// kube-controller-manager's tolerance: a leader that has not
		// renewed its Lease for 20s past its expiry is not healthy.
		o.Leader.WatchDog = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
		checks = append(checks, o.Leader.WatchDog)
	}
	var srv *watch.Server
	if o.MetricsAddr != "0" {
		if srv, err = watch.Listen(o.MetricsAddr, metrics, checks...); err != nil {
			return fmt.Errorf("%w: choose a free address with --metrics-addr (0 serves none)", err)
		}
	}
	// One read first: a cluster that cannot be read at start is one error
	// line, not an informer retrying forever.
	if _, err := clients.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("listing namespaces: %w", err)
	}
	if err := o.refuseSystemNamespaces(ctx, clients); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ordering, err := o.Ordering.resolve(ctx, clients)
	if err != nil {
		return err
	}
	opts := inspect.Options{Grace: o.Grace, Ordering: ordering}
	var guarding *runningGuard
	if o.Guard.on() {
		if guarding, err = o.startGuard(ctx, clients, metrics, opts); err != nil {
			return err
		}
		defer guarding.undo()
	}
	guardServed := make(chan error, 1)
	if guarding != nil {
		// A guard that stops serving ends the watch: its webhook would
		// fail open from then on, unnoticed.
		go func() {
			err := guarding.serve(ctx)
			if err != nil {
				cancel()
			}
			guardServed <- err
		}()
	}
	w := o.watcher(ctx, clients, metrics, opts)
	serveErr := make(chan error, 1)
	if srv != nil {
		go func() { serveErr <- srv.Serve(ctx) }()
	}
	if err := w.Start(ctx); err != nil {
		return ignoreCanceled(ctx, err)
	}
	if srv != nil {
		srv.Ready()
	}
	o.notice("%s", o.startWords(srv, guarding))
	err = o.work(ctx, clients, w, metrics)
	cancel()
	if srv != nil {
		if serr := <-serveErr; err == nil {
			err = serr
		}
	}
	if guarding != nil {
		if gerr := <-guardServed; err == nil {
			err = gerr
		}
	}
	return err
}

// watcher builds the controller and where its findings go.
func (o *WatchOptions) watcher(ctx context.Context, clients *kube.Clients, metrics *watch.Metrics, inspectOpts inspect.Options) *watch.Watcher {
	recorder, _ := watch.NewRecorder(ctx, clients.Kube.CoreV1(), metrics, func(err error) {
		o.notice("warning: cannot record Events (%s); the diagnoses go on, in the metrics and here; grant create/patch on events (deploy/10-rbac.yaml)", oneLine(firstLine(err.Error())))
	})
	opts := watch.Options{After: o.After, Resync: o.Resync, Workers: o.Workers, Inspect: inspectOpts, Janitor: o.janitor}
	if o.janitor != nil {
		o.janitor.Purge.OrderedDeletion = inspectOpts.Ordering
		o.janitor.Purge.Context, o.janitor.Purge.Cluster = target(o.factory, o.flags)
	}
	return &watch.Watcher{Clients: clients, Opts: opts, Words: printer.WatchWords{}, Metrics: metrics, Recorder: recorder, OnChange: o.print}
}

// work diagnoses: at once, or while holding the Lease.
func (o *WatchOptions) work(ctx context.Context, clients *kube.Clients, w *watch.Watcher, metrics *watch.Metrics) error {
	if !o.LeaderElect {
		metrics.SetLeader(true)
		w.Work(ctx)
		return nil
	}
	metrics.SetLeader(false)
	o.notice("waiting for the Lease %s/%s (identity %s)", o.Leader.Namespace, o.Leader.Name, o.Leader.Identity)
	err := o.Leader.Lead(ctx, clients, w.Work, func(leads bool) {
		metrics.SetLeader(leads)
		if leads {
			o.notice("leading: holding the Lease %s/%s", o.Leader.Namespace, o.Leader.Name)
		}
	})
	if errors.Is(err, watch.ErrLostLease) {
		return fmt.Errorf("%w: stopping so that another replica leads (a restart makes this one a standby)", err)
	}
	return err
}

// refuseSystemNamespaces: a janitor selector that chooses a system
// namespace is refused before the watch starts.
func (o *WatchOptions) refuseSystemNamespaces(ctx context.Context, clients *kube.Clients) error {
	if o.janitor == nil {
		return nil
	}
	for _, name := range purge.SystemNamespaces() {
		ns, err := clients.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading namespace %s to check --purge-selector: %w", name, err)
		}
		if o.janitor.Selector.Matches(labels.Set(ns.Labels)) {
			return usageErrorf("refusing --purge-selector %q: it selects the system namespace %s; the janitor never purges system namespaces, so choose labels only the namespaces to purge carry", o.Janitor.Selector, name)
		}
	}
	return nil
}

// print writes a change: a JSON line (-o json) or a line of text.
func (o *WatchOptions) print(c watch.Change) {
	o.out.Lock()
	defer o.out.Unlock()
	if o.Output == "json" {
		if c.Report == nil {
			return // a JSON line is a diagnosis; a janitor run or a namespace that went has none
		}
		line, err := json.Marshal(printer.Diagnosis(*c.Report))
		if err == nil {
			_, _ = fmt.Fprintf(o.Out, "%s\n", line)
		}
		return
	}
	words := ""
	if c.Janitor != nil {
		words = printer.WatchWords{}.Janitor(c.Janitor.Report, c.Janitor.Err)
	}
	_, _ = fmt.Fprintln(o.Out, printer.WatchLine(c.At, c.Namespace, c.Report, c.Terminating, words))
}

// notice is a line on stderr, where a controller logs.
func (o *WatchOptions) notice(format string, args ...any) {
	o.out.Lock()
	defer o.out.Unlock()
	_, _ = fmt.Fprintf(o.ErrOut, format+"\n", args...)
}

func (o *WatchOptions) startWords(srv *watch.Server, guarding *runningGuard) string {
	words := fmt.Sprintf("watching namespaces: diagnosing those terminating for %s, again every %s", o.After, o.Resync)
	if srv != nil {
		words += "; metrics on http://" + srv.Addr() + "/metrics"
	}
	if guarding != nil {
		words += fmt.Sprintf("; guard (%s, budget %s) serving at %s, webhook configuration %s", o.Guard.Mode, o.Guard.Timeout, guarding.where, o.Guard.Configuration)
	}
	if o.janitor != nil {
		words += "; " + o.janitor.String()
	}
	return words
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// ignoreCanceled: a signal while starting is a clean stop.
func ignoreCanceled(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
