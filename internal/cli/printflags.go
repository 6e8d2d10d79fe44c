package cli

import (
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// printFlags are -o and --color, the same on every command that prints a
// report (kubectl's PrintFlags).
type printFlags struct {
	output string
	color  string
}

func (f *printFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "Output format: json or yaml (default: the human view)")
	cmd.Flags().StringVar(&f.color, "color", "auto", "Colour the human view: auto (a terminal, and NO_COLOR unset or empty), always or never")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(printer.Formats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("color", cobra.FixedCompletions([]string{"auto", "always", "never"}, cobra.ShellCompDirectiveNoFileComp))
}

func (f *printFlags) validate() error {
	if err := printer.ValidateFormat(f.output); err != nil {
		return usageErrorf("%v", err)
	}
	switch f.color {
	case "auto", "always", "never":
		return nil
	}
	return usageErrorf("invalid --color %q: use auto, always or never", f.color)
}

// machine tells whether the output is for programs (-o json|yaml).
func (f *printFlags) machine() bool { return f.output != "" }

// toPrinter returns the printer for out.
func (f *printFlags) toPrinter(out io.Writer) printer.Printer {
	if f.machine() {
		return printer.Machine{Format: f.output}
	}
	return printer.Human{Color: useColor(f.color, out), Now: time.Now()}
}

// useColor decides colour for one stream: always/never win; auto means a
// terminal and NO_COLOR unset or empty (the no-color.org rule).
func useColor(mode string, out any) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	return isTerminal(out)
}

func isTerminal(s any) bool {
	f, ok := s.(interface{ Fd() uintptr })
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
