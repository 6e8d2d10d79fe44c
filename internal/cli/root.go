// Package cli is the command layer: it parses flags, calls the engine
// packages and prints. Only cmd/kubectl-ns_doctor's main exits.
package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
)

// Run executes ns-doctor with the given arguments and returns its exit code.
func Run(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	flags := genericclioptions.NewConfigFlags(true)
	return run(ctx, args, streams, flags, flagsFactory{flags})
}

// run is Run with the clients' factory given: tests pass fakes.
func run(ctx context.Context, args []string, streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags, f Factory) (code int) {
	// A bug must still end in one line and a documented code, not a stack.
	defer func() {
		if r := recover(); r != nil {
			_, _ = fmt.Fprintf(streams.ErrOut, "error: internal error: %v (please report it with the command you ran)\n", r)
			code = ExitError
		}
	}()
	routeClientLogs(escapedLines{streams.ErrOut})
	root := newRootCommand(flags, f, streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	// Once the command is done, what is still in flight in the background
	// (a discovery read ahead) is cut short as the process ends: client-go
	// would log that on stderr, after the one line the user is owed.
	routeClientLogs(io.Discard)
	if err == nil {
		return ExitOK
	}
	if msg := describe(err, serverOf(flags)); msg != "" {
		_, _ = fmt.Fprintf(streams.ErrOut, "error: %s\n", msg)
	}
	return exitCode(err)
}

// newRootCommand builds the command tree around kubectl's standard flags.
func newRootCommand(flags *genericclioptions.ConfigFlags, f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "ns-doctor",
		Short: "Explain and fix namespaces stuck in Terminating",
		Long: `ns-doctor tells why a namespace is stuck in Terminating, to the letter of the
Kubernetes namespace controller, and finishes its deletion safely.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl ns-doctor"},
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	// Flag errors are usage errors: one line, with where to read more.
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErrorf("%v (see '%s --help')", err, cmd.CommandPath())
	})
	flags.AddFlags(root.PersistentFlags())
	addLogFlags(root)
	registerFlagCompletions(root, flags)
	// Our own completion command replaces cobra's: it adds the kubectl
	// plugin shim and names the binary, not "ns-doctor", in the scripts.
	root.CompletionOptions.DisableDefaultCmd = true
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return validateRequestTimeout(flags) }

	root.AddCommand(
		newExplainCommand(f, flags, streams),
		newPurgeCommand(f, flags, streams),
		newRescueCommand(f, flags, streams),
		newProtectCommand(f, flags, streams),
		newRestoreCommand(f, flags, streams),
		newWatchCommand(f, flags, streams),
		newMCPCommand(f, flags, streams),
		newVersionCommand(f, streams),
		newCompletionCommand(streams),
	)
	return root
}

// addLogFlags adds klog's -v and --vmodule as kubectl does: -v=6 shows
// every request client-go sends, -v=8 their bodies. klog's level is
// process-wide, so it starts from 0 on every run.
func addLogFlags(root *cobra.Command) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", "0")
	for _, name := range []string{"v", "vmodule"} {
		root.PersistentFlags().AddGoFlag(fs.Lookup(name))
	}
	root.PersistentFlags().Lookup("v").Usage = "Log level: 6 shows each request sent to the API server, 8 their bodies (on stderr)"
}

// serverOf names the API server for error messages, best effort.
func serverOf(flags *genericclioptions.ConfigFlags) string {
	cfg, err := flags.ToRESTConfig()
	if err != nil || cfg.Host == "" {
		return "the configured server"
	}
	return cfg.Host
}

// exactArgs is cobra.ExactArgs as a usage error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			if err := valueAfterSpace(cmd, args[n]); err != nil {
				return err
			}
		}
		if len(args) != n {
			return usageErrorf("%s takes exactly %d argument (%s), got %d (see '%s --help')", cmd.CommandPath(), n, what, len(args), cmd.CommandPath())
		}
		return nil
	}
}

// validateRequestTimeout checks --request-timeout up front, as a usage
// error, instead of when the first client is built.
func validateRequestTimeout(flags *genericclioptions.ConfigFlags) error {
	if flags.Timeout == nil || *flags.Timeout == "" {
		return nil
	}
	v := *flags.Timeout
	if _, err := strconv.Atoi(v); err == nil {
		return nil
	}
	if d, err := time.ParseDuration(v); err != nil || d < 0 {
		return usageErrorf("invalid --request-timeout %q: use a duration such as 10s or 1m (0 means no timeout)", v)
	}
	return nil
}

// valueAfterSpace explains the likeliest cause of a stray argument: a
// flag whose value is optional (--guard, --allow-purge) takes it only after
// '=', so "--guard deny" leaves "deny" as an argument.
func valueAfterSpace(cmd *cobra.Command, arg string) error {
	var hint error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if hint == nil && f.NoOptDefVal != "" && f.Value.String() == f.NoOptDefVal && !strings.HasPrefix(arg, "-") {
			hint = usageErrorf("unexpected argument %q: --%s takes its value after '=' (--%s=%s; see '%s --help')", arg, f.Name, f.Name, arg, cmd.CommandPath())
		}
	})
	return hint
}
