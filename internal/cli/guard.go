package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ns-doctor/ns-doctor/internal/guard"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/watch"
	"github.com/ns-doctor/ns-doctor/internal/webhookcert"
)

// guardFlags are the deletion guard's (docs/guard.md).
type guardFlags struct {
	Mode          string
	Timeout       time.Duration
	ExemptGroups  []string
	Addr          string
	Service       string
	Configuration string
	Secret        string
	CertDir       string
}

// guardOnlyFlags need --guard.
var guardOnlyFlags = []string{"guard-timeout", "guard-exempt-groups", "guard-addr", "guard-service", "guard-webhook-configuration", "guard-secret", "guard-cert-dir"}

// inClusterAddr is where the guard listens in the cluster: the port
// deploy/guard's Service targets.
const inClusterAddr = ":9443"

// How often the guard looks at its certificate: the Secret (another
// replica may have renewed it, or it may be due) and cert-manager's files.
const (
	secretCheckEvery = 10 * time.Minute
	filesCheckEvery  = 30 * time.Second
)

func (g *guardFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&g.Mode, "guard", "", "Also serve the deletion guard, an admission webhook for DELETE of namespaces and CRDs: warn (allowed, with a warning per predicted blocker; what a bare --guard means) or deny (refused when the prediction is sure); off when absent (docs/guard.md)")
	// A bare --guard is warn, the mode to roll out first (as a bare
	// --dry-run is client in kubectl).
	fs.Lookup("guard").NoOptDefVal = string(guard.ModeWarn)
	fs.DurationVar(&g.Timeout, "guard-timeout", guard.DefaultTimeout, "Guard: the budget of one prediction; past it the deletion is allowed unchecked, with a warning saying so")
	fs.StringSliceVar(&g.ExemptGroups, "guard-exempt-groups", nil, "Guard: requesters in these groups are never refused (they still get the warnings)")
	fs.StringVar(&g.Addr, "guard-addr", "", "Guard: where it listens. Out of the cluster, HOST:PORT kube-apiserver reaches (e.g. 127.0.0.1:8443): it registers a webhook configuration with that URL and its own CA, removed on exit. In the cluster (with --guard-service): default "+inClusterAddr)
	fs.StringVar(&g.Service, "guard-service", "", "Guard, in the cluster: the Service kube-apiserver calls, NAMESPACE/NAME (deploy/guard: ns-doctor/ns-doctor-guard); its certificate is kept in --guard-secret and written into --guard-webhook-configuration's caBundle")
	fs.StringVar(&g.Configuration, "guard-webhook-configuration", guard.DefaultConfiguration, "Guard: the ValidatingWebhookConfiguration's name (registered out of the cluster; its caBundle patched in the cluster)")
	fs.StringVar(&g.Secret, "guard-secret", "ns-doctor-guard-tls", "Guard, in the cluster: the Secret in the Service's namespace that keeps its CA and serving certificate, shared by the replicas and renewed before expiry")
	fs.StringVar(&g.CertDir, "guard-cert-dir", "", "Guard, in the cluster: read tls.crt and tls.key from this folder (cert-manager's Secret, mounted) instead of keeping a Secret; cert-manager's cainjector writes the caBundle")
}

func registerGuardCompletions(cmd *cobra.Command) {
	modes := make([]string, 0, len(guard.Modes()))
	for _, m := range guard.Modes() {
		modes = append(modes, string(m))
	}
	_ = cmd.RegisterFlagCompletionFunc("guard", cobra.FixedCompletions(modes, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("guard-cert-dir", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
	for _, name := range []string{"guard-addr", "guard-service", "guard-webhook-configuration", "guard-secret", "guard-exempt-groups", "guard-timeout"} {
		_ = cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
}

// on tells whether the guard was asked for.
func (g *guardFlags) on() bool { return g.Mode != "" }

// validate checks the guard's flags before anything is sent.
func (g *guardFlags) validate(fs *pflag.FlagSet) error {
	if !fs.Changed("guard") {
		for _, name := range guardOnlyFlags {
			if fs.Changed(name) {
				return usageErrorf("--%s is the guard's: it needs --guard=warn or --guard=deny", name)
			}
		}
		return nil
	}
	if !isGuardMode(g.Mode) {
		return usageErrorf("--guard must be warn or deny, got %q (leave it out to run without the guard)", g.Mode)
	}
	if g.Timeout <= 0 || g.Timeout > guard.MaxTimeout {
		return usageErrorf("--guard-timeout must be above 0 and at most %s (kube-apiserver waits at most 30s for a webhook), got %s", guard.MaxTimeout, g.Timeout)
	}
	if g.Service == "" {
		return g.validateOutOfCluster(fs)
	}
	if ns, name, ok := strings.Cut(g.Service, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return usageErrorf("--guard-service is NAMESPACE/NAME, got %q", g.Service)
	}
	if g.CertDir != "" && fs.Changed("guard-secret") {
		return usageErrorf("--guard-cert-dir and --guard-secret exclude each other: the certificate comes from cert-manager's files or from the guard's own Secret")
	}
	if g.Addr == "" {
		g.Addr = inClusterAddr
	}
	return nil
}

func (g *guardFlags) validateOutOfCluster(fs *pflag.FlagSet) error {
	for _, name := range []string{"guard-secret", "guard-cert-dir"} {
		if fs.Changed(name) {
			return usageErrorf("--%s is for the guard in the cluster: it needs --guard-service", name)
		}
	}
	host, _, err := net.SplitHostPort(g.Addr)
	if g.Addr == "" || err != nil {
		return usageErrorf("--guard needs --guard-addr=HOST:PORT (out of the cluster: an address kube-apiserver reaches, such as 127.0.0.1:8443) or --guard-service=NAMESPACE/NAME (in the cluster, as deploy/guard runs it)")
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return usageErrorf("--guard-addr %s: out of the cluster the guard registers https://HOST:PORT with kube-apiserver, so HOST must be an address it reaches (such as 127.0.0.1), not a wildcard", g.Addr)
	}
	return nil
}

func isGuardMode(s string) bool {
	for _, m := range guard.Modes() {
		if string(m) == s {
			return true
		}
	}
	return false
}

// runningGuard is the guard serving, and what to undo when it stops.
type runningGuard struct {
	srv *guard.Server
	// serve serves until ctx ends.
	serve func(ctx context.Context) error
	undo  func()
	where string
}

// startGuard listens, gets its certificate, and registers (out of the
// cluster) or writes its caBundle (in the cluster); serve then serves.
// Any failure is an error line before the watch starts.
func (o *WatchOptions) startGuard(ctx context.Context, clients *kube.Clients, metrics *watch.Metrics, opts inspect.Options) (*runningGuard, error) {
	g := o.Guard
	srv, err := guard.Listen(g.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: choose a free address with --guard-addr", err)
	}
	mode := guard.Mode(g.Mode)
	reads := &guard.Reads{Clients: clients, Refresh: guard.DefaultRefresh, Notice: func(s string) { o.notice("warning: %s", s) }}
	h := &guard.Guard{Clients: clients, Words: printer.GuardWords{}, Metrics: guard.NewMetrics(metrics.Registry, mode),
		Opts:      guard.Options{Mode: mode, Timeout: g.Timeout, ExemptGroups: g.ExemptGroups, Inspect: opts},
		OnVerdict: func(v guard.Verdict) { o.notice("%s", printer.GuardLine(time.Now(), v)) }, Reads: reads}
	src := &webhookcert.Source{}
	rg := &runningGuard{srv: srv, undo: func() {},
		serve: func(ctx context.Context) error { return srv.Serve(ctx, h, src.GetCertificate) }}
	if err := o.guardCertificate(ctx, clients, src, rg); err != nil {
		_ = srv.Close()
		return nil, err
	}
	// Registered: its reads are kept ready from now on.
	go reads.Run(ctx)
	return rg, nil
}

// guardCertificate sets up the certificate of the mode the flags chose.
func (o *WatchOptions) guardCertificate(ctx context.Context, clients *kube.Clients, src *webhookcert.Source, rg *runningGuard) error {
	g := o.Guard
	webhooks := clients.Kube.AdmissionregistrationV1()
	if g.Service == "" {
		// Out of the cluster: a CA of its own, in memory, for this run.
		host, _, _ := net.SplitHostPort(g.Addr)
		b, err := webhookcert.Generate([]string{host}, time.Now(), webhookcert.DefaultLifetimes)
		if err != nil {
			return err
		}
		c, err := b.TLS()
		if err != nil {
			return err
		}
		src.Set(c)
		url := "https://" + net.JoinHostPort(host, fmt.Sprint(rg.srv.Addr().Port)) + guard.Path
		reg, err := guard.Register(ctx, webhooks, g.Configuration, url, b.CACerts, g.Timeout)
		if err != nil {
			return guardRegistrationError(err, "create, update and delete")
		}
		rg.where = url
		rg.undo = func() {
			stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := guard.Unregister(stop, webhooks, reg); err != nil {
				o.notice("warning: the guard could not remove its webhook configuration (%s): delete it yourself: kubectl delete validatingwebhookconfiguration %s", oneLine(err.Error()), g.Configuration)
			}
		}
		return nil
	}
	ns, name, _ := strings.Cut(g.Service, "/")
	rg.where = fmt.Sprintf("service %s/%s (listening on %s)", ns, name, rg.srv.Addr())
	onErr := func(err error) { o.notice("warning: the guard's certificate: %s", oneLine(err.Error())) }
	if g.CertDir != "" {
		files := webhookcert.Files{Dir: g.CertDir}
		c, err := files.Load()
		if err != nil {
			return fmt.Errorf("%w (--guard-cert-dir: cert-manager's Secret, mounted)", err)
		}
		src.Set(c)
		go files.Keep(ctx, filesCheckEvery, src, onErr)
		return nil
	}
	keeper := &webhookcert.Keeper{
		Store: &webhookcert.SecretStore{Secrets: clients.Kube.CoreV1(), Namespace: ns, Name: g.Secret,
			Hosts: []string{name + "." + ns + ".svc", name + "." + ns + ".svc.cluster.local", name + "." + ns}, Life: webhookcert.DefaultLifetimes},
		Source: src,
		OnCA: func(ctx context.Context, ca []byte) error {
			cfg, err := guard.PatchCABundle(ctx, webhooks, g.Configuration, ca)
			if err != nil {
				return err
			}
			if seconds, short := guard.ShortTimeout(cfg, g.Timeout); short {
				o.notice("warning: the guard's webhook configuration %s has timeoutSeconds %d, not above --guard-timeout=%s: kube-apiserver gives up first and lets deletions through unchecked; set it to %d (deploy/guard/webhook.yaml)",
					g.Configuration, seconds, g.Timeout, guard.TimeoutSeconds(g.Timeout))
			}
			return nil
		},
	}
	if err := keeper.Sync(ctx); err != nil {
		return guardRegistrationError(err, "patch")
	}
	go keeper.Run(ctx, secretCheckEvery, onErr)
	return nil
}

// guardRegistrationError says which permission the guard lacks, or what
// else stopped it.
func guardRegistrationError(err error, verbs string) error {
	var re *guard.RegistrationError
	switch {
	case guard.IsNotOurs(err):
		return fmt.Errorf("the guard cannot register: %w", err)
	case errors.As(err, &re) && apierrors.IsForbidden(err):
		return fmt.Errorf("the guard cannot %s validatingwebhookconfiguration %s: no permission (it needs %s on validatingwebhookconfigurations.admissionregistration.k8s.io; docs/guard.md)", re.Verb, re.Name, verbs)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the guard cannot keep its certificate: %s (it needs get, create and update on its Secret; deploy/guard/rbac.yaml)", apiMessage(err))
	}
	return fmt.Errorf("starting the guard: %w", err)
}
