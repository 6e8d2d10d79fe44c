package cli

import (
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// printFlags are -o, --template, --allow-missing-template-keys and
// --color, the same on every command that prints a report. -o takes what
// kubectl takes for its own objects: cli-runtime's PrintFlags parse it and
// make its printer; the human view is ns-doctor's own.
type printFlags struct {
	kube  *genericclioptions.PrintFlags
	color string
	// machine is the printer -o chose, made by validate.
	machine *printer.Machine
	// jsonYAMLOnly: the command prints what has no report document (the
	// version), so only -o json and -o yaml apply.
	jsonYAMLOnly bool
}

func (f *printFlags) addFlags(cmd *cobra.Command) {
	f.kube = genericclioptions.NewPrintFlags("")
	formats := f.formats()
	cmd.Flags().StringVarP(f.kube.OutputFormat, "output", "o", "",
		"Output format, as kubectl's: "+strings.Join(formats, ", ")+" (default: the human view)")
	if !f.jsonYAMLOnly {
		f.kube.TemplatePrinterFlags.AddFlags(cmd)
	}
	cmd.Flags().StringVar(&f.color, "color", "auto", "Colour the human view: auto (a terminal, and NO_COLOR unset or empty), always or never")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("color", cobra.FixedCompletions([]string{"auto", "always", "never"}, cobra.ShellCompDirectiveNoFileComp))
}

// formats are the values -o takes (templates take theirs after "=").
func (f *printFlags) formats() []string {
	if f.jsonYAMLOnly {
		return []string{"json", "yaml"}
	}
	return slices.Sorted(slices.Values(f.kube.AllowedFormats()))
}

// validate checks the flags and makes the printer -o chose: a bad
// template is a usage error, in cli-runtime's (kubectl's) words.
func (f *printFlags) validate() error {
	switch f.color {
	case "auto", "always", "never":
	default:
		return usageErrorf("invalid --color %q: use auto, always or never", f.color)
	}
	output := *f.kube.OutputFormat
	template := f.kube.TemplatePrinterFlags.TemplateArgument
	if output == "" && (template == nil || *template == "") {
		return nil
	}
	format, _, _ := strings.Cut(output, "=")
	if output != "" && !slices.Contains(f.formats(), format) {
		return usageErrorf("unknown output format %q: use one of %s, or omit -o for the human view", output, strings.Join(f.formats(), ", "))
	}
	if format == "name" {
		f.machine = &printer.Machine{Format: output}
		return nil
	}
	p, err := f.kube.ToPrinter()
	if err != nil {
		return usageErrorf("%v", err)
	}
	f.machine = &printer.Machine{Printer: p, Format: output}
	return nil
}

// isMachine tells whether the output is for programs (any -o).
func (f *printFlags) isMachine() bool { return f.machine != nil }

// toPrinter returns the printer for out.
func (f *printFlags) toPrinter(out io.Writer) printer.Printer {
	if f.machine != nil {
		return *f.machine
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
