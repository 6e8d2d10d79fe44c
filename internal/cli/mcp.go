package cli

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/mcp"
	"github.com/ns-doctor/ns-doctor/internal/version"
)

// allowPurge values: the bare flag asks the human through the client.
const (
	allowPurgeOff                 = "false"
	allowPurgeConfirmed           = "true"
	allowPurgeWithoutConfirmation = "without-confirmation"
)

// MCPOptions holds mcp's flags and state (Complete/Validate/Run).
type MCPOptions struct {
	genericiooptions.IOStreams
	Ordering orderingFlag
	Fleet    fleetFlags

	HTTP       string
	AllowPurge string
	Grace      time.Duration
	BackupDir  string
	Timeout    time.Duration

	factory Factory
	flags   *genericclioptions.ConfigFlags
	purge   mcp.PurgeMode
}

func newMCPCommand(f Factory, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &MCPOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve ns-doctor to AI agents over the Model Context Protocol",
		Long: `Serve ns-doctor to AI agents (Claude Code, VS Code, Cursor, kubectl-ai, ...) over the Model
Context Protocol: over stdio by default, the way MCP clients start a local server, or over
streamable HTTP with --http.

Tools: list_stuck_namespaces, explain_namespace and list_orphans (the documents explain -o json
prints), plan_purge (purge's plan or server dry run, changing nothing), rescue_plan (what rescue
would hold, retain and save, changing nothing), and, only with --allow-purge, purge_namespace and
rescue_namespace, which act on a plan made on the same connection after the person confirms it in
the client (MCP elicitation), with the words purge --force or rescue asks on a terminal.
Resources: each blocker kind's page and the finalizer catalogue. Prompt: diagnose-stuck-namespace.

Text from the cluster reaches the agent only inside structured fields, escaped and bounded; see
SECURITY.md. Configuration for the usual clients: docs/integrations.md.

Exit codes: 0 the client disconnected (or the server was stopped), 2 bad usage, 1 error.`,
		Example: `  # Read-only, over stdio (what an MCP client's configuration runs)
  kubectl ns-doctor mcp

  # Allow purge_namespace: the person confirms each purge in the client
  kubectl ns-doctor mcp --allow-purge

  # Every production cluster of the kubeconfig, over streamable HTTP on this machine
  kubectl ns-doctor mcp --contexts='prod-*' --http=127.0.0.1:8765`,
		Args: exactArgs(0, "none"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Complete(f, flags)
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.HTTP, "http", "", "Serve over streamable HTTP on this loopback address (e.g. 127.0.0.1:8765, at /mcp) instead of stdio")
	fs.StringVar(&o.AllowPurge, "allow-purge", allowPurgeOff, "Serve the tools that act, purge_namespace and rescue_namespace: the person confirms each call in the client (MCP elicitation); =without-confirmation never asks")
	fs.Lookup("allow-purge").NoOptDefVal = allowPurgeConfirmed
	fs.DurationVar(&o.Grace, "grace", diagnose.DefaultGrace, "How long a deletion step may take before it is called stuck (explain's --grace; the tools' grace argument overrides it)")
	fs.StringVar(&o.BackupDir, "backup-dir", "", "Where purge_namespace saves objects before changing them, and rescue_namespace what it rescues, a folder per run (default: a new folder under the user cache dir)")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long purge_namespace keeps repeating the pass before giving up")
	o.Ordering.addFlag(cmd)
	o.Fleet.addFlags(fs)
	_ = cmd.RegisterFlagCompletionFunc("allow-purge", cobra.FixedCompletions([]string{allowPurgeConfirmed, allowPurgeOff, allowPurgeWithoutConfirmation}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("http", cobra.FixedCompletions([]string{"127.0.0.1:8765", "localhost:8765"}, cobra.ShellCompDirectiveNoFileComp))
	registerContextCompletion(cmd, flags)
	return cmd
}

// Complete keeps the factory and flags.
func (o *MCPOptions) Complete(f Factory, flags *genericclioptions.ConfigFlags) {
	o.factory, o.flags = f, flags
}

// Validate rejects bad flags before anything is served.
func (o *MCPOptions) Validate() error {
	switch o.AllowPurge {
	case allowPurgeOff:
		o.purge = mcp.PurgeOff
	case allowPurgeConfirmed:
		o.purge = mcp.PurgeConfirmed
	case allowPurgeWithoutConfirmation:
		o.purge = mcp.PurgeWithoutConfirmation
	default:
		return usageErrorf("invalid --allow-purge %q: use --allow-purge (the person confirms each purge) or --allow-purge=without-confirmation", o.AllowPurge)
	}
	if o.HTTP != "" {
		if err := loopback(o.HTTP); err != nil {
			return err
		}
	}
	switch {
	case o.Grace < 0:
		return usageErrorf("--grace must not be negative, got %s", o.Grace)
	case o.Timeout <= 0:
		return usageErrorf("--timeout must be positive, got %s", o.Timeout)
	}
	if err := o.Ordering.validate(); err != nil {
		return err
	}
	return o.Fleet.validate(o.flags)
}

// loopback accepts only an address on this machine: the HTTP transport has
// no authentication of its own, and serves the kubeconfig's credentials.
func loopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return usageErrorf("invalid --http %q: use HOST:PORT on this machine, e.g. 127.0.0.1:8765", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return usageErrorf("refusing --http=%s: the HTTP transport has no authentication and acts with your kubeconfig's credentials; serve it on a loopback address (127.0.0.1:%s or localhost:%s)", addr, port, port)
}

// Run serves until the client disconnects (stdio) or the command is
// stopped.
func (o *MCPOptions) Run(ctx context.Context) error {
	clusters, err := o.clusters()
	if err != nil {
		return err
	}
	srv, err := mcp.NewServer(mcp.Config{
		Clusters: clusters, Fleet: o.Fleet.on(), Ordering: o.Ordering.resolve, Describe: describe,
		Grace: o.Grace, Purge: o.purge, BackupDir: o.BackupDir, Timeout: o.Timeout, Workers: purgeWorkers,
		Version: version.Get().Version,
	})
	if err != nil {
		return err
	}
	if o.HTTP == "" {
		_, _ = fmt.Fprintf(o.ErrOut, "ns-doctor mcp: serving over stdio, %s\n", o.servedWords(clusters))
		return mcp.ServeStdio(ctx, srv, o.In, o.Out)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.HTTP)
	if err != nil {
		return fmt.Errorf("cannot serve on --http=%s: %w", o.HTTP, err)
	}
	_, _ = fmt.Fprintf(o.ErrOut, "ns-doctor mcp: serving at http://%s%s (streamable HTTP), %s\n", ln.Addr(), mcp.HTTPPath, o.servedWords(clusters))
	return mcp.ServeHTTP(ctx, srv, ln)
}

// servedWords say what the server reads and whether it acts.
func (o *MCPOptions) servedWords(clusters []mcp.Cluster) string {
	names := make([]string, 0, len(clusters))
	for _, c := range clusters {
		names = append(names, fmt.Sprintf("%q", c.Context))
	}
	acts := "read-only (purge_namespace and rescue_namespace are off; --allow-purge serves them)"
	switch o.purge {
	case mcp.PurgeConfirmed:
		acts = "purge_namespace and rescue_namespace on, each call confirmed by the person in the client"
	case mcp.PurgeWithoutConfirmation:
		acts = "purge_namespace and rescue_namespace on, WITHOUT confirmation"
	}
	return fmt.Sprintf("context %s; %s", strings.Join(names, ", "), acts)
}

// clusters are the clusters served: the kubeconfig's one (its context and
// connection flags), or each context --contexts or --all-contexts chose.
func (o *MCPOptions) clusters() ([]mcp.Cluster, error) {
	if !o.Fleet.on() {
		kubeContext, cluster := target(o.factory, o.flags)
		return []mcp.Cluster{{Context: kubeContext, Cluster: cluster, Server: serverOf(o.flags), Clients: o.factory.Clients}}, nil
	}
	chosen, err := o.Fleet.contexts(o.flags)
	if err != nil {
		return nil, err
	}
	out := make([]mcp.Cluster, 0, len(chosen))
	for _, c := range chosen {
		cf := contextFlags(o.flags, c.Name)
		out = append(out, mcp.Cluster{Context: c.Name, Cluster: c.Cluster, Server: serverOf(cf),
			Clients: func() (*kube.Clients, error) { return kube.NewClients(cf) }})
	}
	return out, nil
}
