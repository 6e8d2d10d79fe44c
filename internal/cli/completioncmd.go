package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// binaryName is the executable kubectl runs for `kubectl ns-doctor`.
const binaryName = "kubectl-ns_doctor"

// kubectlPluginShim is kubectl_complete-ns_doctor: kubectl (1.26+) runs an
// executable of that name, found on PATH, with the words typed after
// `kubectl ns-doctor`, and reads cobra's completion protocol from its
// stdout. krew links only the plugin onto PATH (krew issue 812), so users
// install this themselves; the same file ships at the repository root and
// in the release archives (a test keeps the copies equal).
const kubectlPluginShim = `#!/bin/sh
# kubectl_complete-ns_doctor: completion of ` + "`kubectl ns-doctor ...`" + ` inside kubectl's
# own shell completion (kubectl 1.26+; set up with ` + "`kubectl completion SHELL`" + `).
# kubectl runs this file from PATH. Install it next to kubectl-ns_doctor:
#   SCRIPT="$(dirname "$(command -v kubectl-ns_doctor)")/kubectl_complete-ns_doctor"
#   kubectl ns-doctor completion kubectl-plugin > "$SCRIPT" && chmod +x "$SCRIPT"
exec kubectl-ns_doctor __complete "$@"
`

// completionTargets are the arguments `completion` takes, with the help
// shells show beside them.
var completionTargets = []string{
	"bash\tbash script for kubectl-ns_doctor",
	"zsh\tzsh script for kubectl-ns_doctor",
	"fish\tfish script for kubectl-ns_doctor",
	"powershell\tPowerShell script for kubectl-ns_doctor",
	"kubectl-plugin\tthe kubectl_complete-ns_doctor shim for `kubectl ns-doctor <TAB>`",
}

func newCompletionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell|kubectl-plugin",
		Short: "Print shell completion code",
		Long: `Print shell completion code.

kubectl-plugin prints kubectl_complete-ns_doctor, a one-command script that lets kubectl's own
completion (kubectl 1.26+, set up with 'kubectl completion SHELL') complete
'kubectl ns-doctor <TAB>', namespace names included, terminating ones first. kubectl looks for
it on PATH, and krew does not install it: save it as an executable next to kubectl-ns_doctor.

bash, zsh, fish and powershell print the usual scripts for running the binary
kubectl-ns_doctor directly.`,
		Example: `  # Complete 'kubectl ns-doctor ...' (kubectl's completion must be set up)
  SCRIPT="$(dirname "$(command -v kubectl-ns_doctor)")/kubectl_complete-ns_doctor"
  kubectl ns-doctor completion kubectl-plugin > "$SCRIPT" && chmod +x "$SCRIPT"

  # Complete the binary kubectl-ns_doctor in bash
  source <(kubectl ns-doctor completion bash)`,
		ValidArgs: completionTargets,
		Args:      exactArgs(1, "bash, zsh, fish, powershell or kubectl-plugin"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return writeCompletion(cmd.Root(), streams.Out, args[0])
		},
	}
}

// writeCompletion prints the script for target.
func writeCompletion(root *cobra.Command, out io.Writer, target string) error {
	if target == "kubectl-plugin" {
		_, err := io.WriteString(out, kubectlPluginShim)
		return err
	}
	// Cobra names the completed program after the root command: make that
	// the binary the shell runs, not ns-doctor, which no shell can find.
	// The tree is built per run, so nothing else sees the change.
	root.Use = binaryName
	var err error
	switch target {
	case "bash":
		err = root.GenBashCompletionV2(out, true)
	case "zsh":
		err = root.GenZshCompletion(out)
	case "fish":
		err = root.GenFishCompletion(out, true)
	case "powershell":
		err = root.GenPowerShellCompletionWithDesc(out)
	default:
		return usageErrorf("unknown shell %q: use bash, zsh, fish, powershell or kubectl-plugin", target)
	}
	if err != nil {
		return fmt.Errorf("writing the %s completion script: %w", target, err)
	}
	return nil
}
