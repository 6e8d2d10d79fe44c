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

// validate refuses the connection flags that name one cluster: they would
// apply to every context.
func (f *fleetFlags) validate(flags *genericclioptions.ConfigFlags) error {
	if !f.on() {
		return nil
	}
	if f.all && len(f.patterns) > 0 {
		return usageErrorf("--all-contexts and --contexts: choose one")
	}
	for name, v := range map[string]*string{"--context": flags.Context, "--cluster": flags.ClusterName, "--user": flags.AuthInfoName,
		"--server": flags.APIServer, "--token": flags.BearerToken, "--namespace": flags.Namespace} {
		if v != nil && *v != "" {
			return usageErrorf("%s names one cluster; with --all-contexts or --contexts each context gives its own", name)
		}
	}
	return nil
}

// contexts are the chosen contexts; none matching is a usage error that
// lists the kubeconfig's.
func (f *fleetFlags) contexts(flags *genericclioptions.ConfigFlags) ([]fleet.Context, error) {
	raw, err := flags.ToRawKubeConfigLoader().RawConfig()
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

// contextFlags are the user's connection flags, for one context: the
// kubeconfig, timeout and impersonation apply to every cluster.
func contextFlags(flags *genericclioptions.ConfigFlags, name string) *genericclioptions.ConfigFlags {
	out := genericclioptions.NewConfigFlags(false)
	out.KubeConfig, out.CacheDir, out.Impersonate, out.ImpersonateUID = flags.KubeConfig, flags.CacheDir, flags.Impersonate, flags.ImpersonateUID
	out.ImpersonateGroup, out.ImpersonateUserExtra, out.DisableCompression = flags.ImpersonateGroup, flags.ImpersonateUserExtra, flags.DisableCompression
	out.Insecure, out.WrapConfigFn = flags.Insecure, flags.WrapConfigFn
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
	chosen, err := o.Fleet.contexts(o.flags)
	if err != nil {
		return err
	}
	results := fleet.Read(ctx, chosen, func(ctx context.Context, c fleet.Context) ([]diagnose.Report, error) {
		clients, err := kube.NewClients(contextFlags(o.flags, c.Name))
		if err != nil {
			return nil, err
		}
		return o.explainCluster(ctx, clients)
	})
	if err := o.PrintFlags.toPrinter(o.Out).Fleet(o.Out, results); err != nil {
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
	in := prefetchDiscovery(ctx, clients)
	opts := inspect.Options{Grace: o.Grace, Ordering: o.Ordering.resolve(clients)}
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
