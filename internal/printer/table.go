package printer

import (
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// newTable is a kubectl-like table: no borders or lines, left aligned,
// three spaces between columns, headers as given.
func newTable(w io.Writer, header ...string) *tablewriter.Table {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Settings: tw.Settings{Separators: tw.SeparatorsNone, Lines: tw.LinesNone},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderPaddingPerColumn(padding(len(header))),
		tablewriter.WithRowPaddingPerColumn(padding(len(header))),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
	)
	t.Header(toAny(header)...)
	return t
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// padding puts three spaces after every column but the last, so lines
// carry no trailing blanks.
func padding(columns int) []tw.Padding {
	out := make([]tw.Padding, columns)
	for i := range out {
		out[i] = tw.Padding{Left: "", Right: "   ", Overwrite: true}
	}
	if columns > 0 {
		out[columns-1] = tw.Padding{Left: "", Right: "", Overwrite: true}
	}
	return out
}
