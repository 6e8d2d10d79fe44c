package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/fleet"
	"github.com/ns-doctor/ns-doctor/internal/inspect"
	"github.com/ns-doctor/ns-doctor/internal/kube"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// fleetTimeout is each request's timeout on a fleet when --request-timeout
// is not given: one cluster that never answers must not hold the others'
// report forever.
const fleetTimeout = "30s"

// fleetFlags are --all-contexts and --contexts, shared by the commands
// that read many clusters.
type fleetFlags struct {
	all      bool
	patterns []string
}

func (f *fleetFlags) addFlags(fs interface {
	BoolVar(*bool, string, bool, string)
	StringSliceVar(*[]string, string, []string, string)
}) {
	fs.BoolVar(&f.all, "all-contexts", false, "Every context of the kubeconfig: every cluster at once, a CONTEXT column (JSON: each item's context)")
	fs.StringSliceVar(&f.patterns, "contexts", nil, "The kubeconfig contexts whose names match these globs (comma-separated, e.g. 'prod-*,stage-eu'), at once")
}

func (f *fleetFlags) on() bool { return f.all || len(f.patterns) > 0 }

// validate refuses the connection flags a fleet cannot apply to every
// context (connectionFlags), naming the first given.
func (f *fleetFlags) validate(flags *genericclioptions.ConfigFlags) error {
	if !f.on() {
		return nil
	}
	if f.all && len(f.patterns) > 0 {
		return usageErrorf("--all-contexts and --contexts: choose one")
	}
	for _, c := range connectionFlags {
		if c.refused != "" && given(c.field(flags)) {
			return usageErrorf("--%s with --all-contexts or --contexts: %s", c.name, c.refused)
		}
	}
	return nil
}

// contexts are the chosen contexts, from the kubeconfig the factory
// reads; none matching is a usage error that lists the kubeconfig's.
func (f *fleetFlags) contexts(getter genericclioptions.RESTClientGetter) ([]fleet.Context, error) {
	raw, err := getter.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	chosen, err := fleet.Contexts(raw, f.patterns)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	if len(chosen) == 0 {
		all, _ := fleet.Contexts(raw, nil)
		names := make([]string, 0, len(all))
		for _, c := range all {
			names = append(names, c.Name)
		}
		return nil, usageErrorf("no kubeconfig context matches --contexts=%s; the contexts are: %s", strings.Join(f.patterns, ","), strings.Join(names, ", "))
	}
	return chosen, nil
}

// connectionFlag is what a fleet does with one of kubectl's connection
// flags (genericclioptions.ConfigFlags): apply it to every context, or
// refuse it. TestEveryConnectionFlagIsAppliedOrRefused walks the flags
// ConfigFlags.AddFlags registers, so one that a newer cli-runtime adds
// cannot be dropped silently.
type connectionFlag struct {
	name string
	// field is the address of the ConfigFlags field the flag sets.
	field func(*genericclioptions.ConfigFlags) any
	// refused says why the flag cannot go to every context and what to do
	// instead; empty, the flag applies to each context.
	refused string
}

// connectionFlags is the one decision per connection flag. What applies
// is the same for every cluster: where the contexts come from, settings
// of this client, and an identity each cluster's API server resolves on
// its own. What is refused names one context, cluster, server or
// namespace, or is one cluster's trust or credential: sent to every
// cluster it would be wrong for all but one of them, and a credential
// would be shown to servers it was never meant for. Each context's own
// comes from the kubeconfig.
var connectionFlags = []connectionFlag{
	{name: "kubeconfig", field: func(f *genericclioptions.ConfigFlags) any { return &f.KubeConfig }},
	// The discovery cache is kept per server inside it.
	{name: "cache-dir", field: func(f *genericclioptions.ConfigFlags) any { return &f.CacheDir }},
	// Per request, per cluster (fleetTimeout when not given).
	{name: "request-timeout", field: func(f *genericclioptions.ConfigFlags) any { return &f.Timeout }},
	{name: "disable-compression", field: func(f *genericclioptions.ConfigFlags) any { return &f.DisableCompression }},
	// The user's explicit choice for this client, as kubectl applies it
	// over any kubeconfig entry.
	{name: "insecure-skip-tls-verify", field: func(f *genericclioptions.ConfigFlags) any { return &f.Insecure }},
	// Impersonation names a user, groups and extras, not a credential:
	// each cluster authorizes it (or answers Forbidden, in its own row).
	{name: "as", field: func(f *genericclioptions.ConfigFlags) any { return &f.Impersonate }},
	{name: "as-uid", field: func(f *genericclioptions.ConfigFlags) any { return &f.ImpersonateUID }},
	{name: "as-group", field: func(f *genericclioptions.ConfigFlags) any { return &f.ImpersonateGroup }},
	{name: "as-user-extra", field: func(f *genericclioptions.ConfigFlags) any { return &f.ImpersonateUserExtra }},

	{name: "context", field: func(f *genericclioptions.ConfigFlags) any { return &f.Context },
		refused: "it names one context, and they choose the contexts; drop --context, or give --contexts=NAME"},
	{name: "cluster", field: func(f *genericclioptions.ConfigFlags) any { return &f.ClusterName },
		refused: "it names one kubeconfig cluster, and each context names its own; drop it, or choose that cluster's contexts with --contexts"},
	{name: "user", field: func(f *genericclioptions.ConfigFlags) any { return &f.AuthInfoName },
		refused: "it names one kubeconfig user, and each context names its own; drop it, or set the user in the kubeconfig's contexts"},
	{name: "server", field: func(f *genericclioptions.ConfigFlags) any { return &f.APIServer },
		refused: "it is one API server, and each context's cluster gives its own; drop it"},
	{name: "proxy-url", field: func(f *genericclioptions.ConfigFlags) any { return &f.ProxyURL },
		refused: "it is how one cluster is reached, and each cluster in the kubeconfig gives its own; set proxy-url on that cluster in the kubeconfig instead"},
	{name: "tls-server-name", field: func(f *genericclioptions.ConfigFlags) any { return &f.TLSServerName },
		refused: "it is the name on one server's certificate; set tls-server-name on that cluster in the kubeconfig instead"},
	{name: "certificate-authority", field: func(f *genericclioptions.ConfigFlags) any { return &f.CAFile },
		refused: "a CA file belongs to one cluster; set certificate-authority on that cluster in the kubeconfig instead"},
	{name: "client-certificate", field: func(f *genericclioptions.ConfigFlags) any { return &f.CertFile },
		refused: "a client certificate belongs to one cluster; set client-certificate on that context's user in the kubeconfig instead"},
	{name: "client-key", field: func(f *genericclioptions.ConfigFlags) any { return &f.KeyFile },
		refused: "a client key belongs to one cluster; set client-key on that context's user in the kubeconfig instead"},
	{name: "token", field: func(f *genericclioptions.ConfigFlags) any { return &f.BearerToken },
		refused: "a token belongs to one cluster and would be sent to all; set token on that context's user in the kubeconfig instead"},
	{name: "username", field: func(f *genericclioptions.ConfigFlags) any { return &f.Username },
		refused: "basic authentication belongs to one cluster; set username on that context's user in the kubeconfig instead"},
	{name: "password", field: func(f *genericclioptions.ConfigFlags) any { return &f.Password },
		refused: "a password belongs to one cluster and would be sent to all; set it on that context's user in the kubeconfig instead"},
	{name: "namespace", field: func(f *genericclioptions.ConfigFlags) any { return &f.Namespace },
		refused: "it names one namespace; choose the namespaces of each cluster with -l SELECTOR"},
}

// given says whether a ConfigFlags field (the address field returns) holds
// a value the user gave.
func given(field any) bool {
	switch p := field.(type) {
	case **string:
		return *p != nil && **p != ""
	case **bool:
		return *p != nil && **p
	case **[]string:
		return *p != nil && len(**p) > 0
	}
	return false
}

// copyField sets the ConfigFlags field dst to src's value (addresses as
// field returns them); the values are shared, as they are only read.
func copyField(dst, src any) {
	switch d := dst.(type) {
	case **string:
		*d = *src.(**string)
	case **bool:
		*d = *src.(**bool)
	case **[]string:
		*d = *src.(**[]string)
	}
}

// contextFlags are the connection flags of one context of a fleet: those
// connectionFlags applies, copied, with the context named; the refused
// ones never get here (validate).
func contextFlags(flags *genericclioptions.ConfigFlags, name string) *genericclioptions.ConfigFlags {
	out := genericclioptions.NewConfigFlags(false)
	for _, c := range connectionFlags {
		if c.refused == "" {
			copyField(c.field(out), c.field(flags))
		}
	}
	out.WrapConfigFn = flags.WrapConfigFn
	timeout := fleetTimeout
	if flags.Timeout != nil && *flags.Timeout != "" && *flags.Timeout != "0" {
		timeout = *flags.Timeout
	}
	out.Context, out.Timeout = &name, &timeout
	return out
}

// runFleet explains every terminating namespace (or -l's) of each chosen
// cluster, at once, and prints one list.
func (o *ExplainOptions) runFleet(ctx context.Context) error {
	chosen, err := o.Fleet.contexts(o.factory)
	if err != nil {
		return err
	}
	results := fleet.Read(ctx, chosen, func(ctx context.Context, c fleet.Context) ([]diagnose.Report, error) {
		clients, err := o.factory.ClientsFor(contextFlags(o.flags, c.Name))
		if err != nil {
			return nil, err
		}
		return o.explainCluster(ctx, clients)
	})
	pr, print := o.PrintFlags.toPrinter(o.Out), printer.Printer.Fleet
	if o.Full {
		print = printer.Printer.FleetDiagnoses
	}
	if err := print(pr, o.Out, results); err != nil {
		return err
	}
	if failed := fleet.Failed(results); len(failed) > 0 {
		names := make([]string, 0, len(failed))
		for _, r := range failed {
			names = append(names, fmt.Sprintf("%s (%s)", r.Name, strings.ToLower(string(r.Reach))))
		}
		return fmt.Errorf("%d of %d clusters could not be read: %s; the others' namespaces are above", len(failed), len(results), strings.Join(names, ", "))
	}
	for _, r := range results {
		if err := o.exitFor(r.Reports, nil); err != nil {
			return err
		}
	}
	return nil
}

// explainCluster explains one cluster's terminating namespaces (those -l
// selects, if given).
func (o *ExplainOptions) explainCluster(ctx context.Context, clients *kube.Clients) ([]diagnose.Report, error) {
	ordering, err := o.Ordering.resolve(ctx, clients)
	if err != nil {
		return nil, err
	}
	in := prefetchDiscovery(ctx, clients)
	opts := inspect.Options{Grace: o.Grace, Ordering: ordering}
	namespaces, err := in.Terminating(ctx, o.Selector)
	if err != nil {
		return nil, err
	}
	return in.ExplainAll(ctx, namespaces, opts)
}

// registerContextCompletion completes --contexts with the kubeconfig's
// context names (read locally: no cluster is asked).
func registerContextCompletion(cmd *cobra.Command, flags *genericclioptions.ConfigFlags) {
	_ = cmd.RegisterFlagCompletionFunc("contexts", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		raw, err := flags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		all, _ := fleet.Contexts(raw, nil)
		names := make([]string, 0, len(all))
		for _, c := range all {
			names = append(names, c.Name+"\tcluster "+c.Cluster)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}
