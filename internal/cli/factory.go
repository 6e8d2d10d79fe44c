package cli

import (
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// Factory is what commands build their clients from, as kubectl passes its
// cmdutil.Factory into Complete; tests pass one that returns fakes.
type Factory interface {
	genericclioptions.RESTClientGetter
	Clients() (*kube.Clients, error)
	// ClientsFor builds the clients of one context of a fleet
	// (--all-contexts, --contexts) from the connection flags the command
	// made for it (contextFlags).
	ClientsFor(flags *genericclioptions.ConfigFlags) (*kube.Clients, error)
}

// flagsFactory builds real clients from kubectl's connection flags.
type flagsFactory struct {
	*genericclioptions.ConfigFlags
}

func (f flagsFactory) Clients() (*kube.Clients, error) { return kube.NewClients(f.ConfigFlags) }

func (flagsFactory) ClientsFor(flags *genericclioptions.ConfigFlags) (*kube.Clients, error) {
	return kube.NewClients(flags)
}

// target names the kubeconfig context and cluster a command talks to.
func target(getter genericclioptions.RESTClientGetter, flags *genericclioptions.ConfigFlags) (string, string) {
	raw, err := getter.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return "", ""
	}
	ctxName := raw.CurrentContext
	if flags.Context != nil && *flags.Context != "" {
		ctxName = *flags.Context
	}
	cluster := ""
	if c, ok := raw.Contexts[ctxName]; ok {
		cluster = c.Cluster
	}
	if flags.ClusterName != nil && *flags.ClusterName != "" {
		cluster = *flags.ClusterName
	}
	return ctxName, cluster
}
