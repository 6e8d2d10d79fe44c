package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/ns-doctor/ns-doctor/internal/purge"
)

// escalationFlags are the escalations' flags, registered from purge's one
// list (purge.Escalations), so that purge and the janitor offer exactly
// what the engine knows, with the same help.
type escalationFlags struct {
	switches map[string]*bool
	lists    map[string]*[]string
}

// add registers the flags of the escalations that keep says may be given
// here; help turns an escalation's help into this command's.
func (f *escalationFlags) add(fs *pflag.FlagSet, keep func(purge.Escalation) bool, help func(purge.Escalation) string) {
	f.switches, f.lists = map[string]*bool{}, map[string]*[]string{}
	for _, e := range purge.Escalations() {
		if !keep(e) {
			continue
		}
		if e.Switch() {
			f.switches[e.Flag] = fs.Bool(e.Name(), false, help(e))
		} else {
			f.lists[e.Flag] = fs.StringSlice(e.Name(), nil, help(e))
		}
	}
}

// asked are the escalations the flags ask for, unchecked.
func (f *escalationFlags) asked() purge.Asked {
	out := purge.Asked{}
	for flag, on := range f.switches {
		if *on {
			out[flag] = nil
		}
	}
	for flag, values := range f.lists {
		if len(*values) > 0 {
			out[flag] = slices.Clone(*values)
		}
	}
	return out
}

// names are the flags registered, without their dashes.
func (f *escalationFlags) names() []string {
	var out []string
	for flag := range f.switches {
		out = append(out, strings.TrimPrefix(flag, "--"))
	}
	for flag := range f.lists {
		out = append(out, strings.TrimPrefix(flag, "--"))
	}
	slices.Sort(out)
	return out
}

// escalationList names the escalations keep chooses, as help text says
// them: "--a, --b=VALUE, ...", in the list's order.
func escalationList(keep func(purge.Escalation) bool) string {
	var out []string
	for _, e := range purge.Escalations() {
		if keep(e) {
			out = append(out, e.Usage())
		}
	}
	return strings.Join(out, ", ")
}

// everyEscalation keeps them all (purge).
func everyEscalation(purge.Escalation) bool { return true }

// ownHelp is an escalation's own help (purge).
func ownHelp(e purge.Escalation) string { return e.Help }

// registerEscalationCompletions completes the escalations' values from
// what the named namespace holds, each as its entry offers them: one
// discovery and one metadata sweep, silent on any error (a completion
// cannot report one).
func registerEscalationCompletions(cmd *cobra.Command, flags *genericclioptions.ConfigFlags) {
	for _, e := range purge.Escalations() {
		if e.Completes() && cmd.Flags().Lookup(e.Name()) != nil {
			_ = cmd.RegisterFlagCompletionFunc(e.Name(), completeFromNamespace(flags, e.Complete))
		}
	}
}
