package printer

import (
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// table is a kubectl-like table whose cells are escaped and bounded: text
// from the cluster in a cell never reaches the terminal as is.
type table struct{ *tablewriter.Table }

// Append adds a row; plain string cells are escaped and bounded, raw ones
// (the printer's own colours) kept.
func (t table) Append(cells ...any) error {
	row := make([]any, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case string:
			row[i] = clean(v)
		case raw:
			row[i] = string(v)
		default:
			row[i] = c
		}
	}
	return t.Table.Append(row...)
}

// newTable is a kubectl-like table: no borders or lines, left aligned,
// three spaces between columns, headers as given.
func newTable(w io.Writer, header ...string) table {
	t := tablewriter.NewTable(&trimWriter{w: w},
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
	return table{t}
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

// trimWriter drops the blanks tablewriter pads the last column with, so
// lines end where their text does.
type trimWriter struct {
	w       io.Writer
	pending []byte
}

func (t *trimWriter) Write(b []byte) (int, error) {
	for _, c := range b {
		switch c {
		case ' ':
			t.pending = append(t.pending, c)
		case '\n':
			t.pending = t.pending[:0]
			if _, err := t.w.Write([]byte{c}); err != nil {
				return 0, err
			}
		default:
			if len(t.pending) > 0 {
				if _, err := t.w.Write(t.pending); err != nil {
					return 0, err
				}
				t.pending = t.pending[:0]
			}
			if _, err := t.w.Write([]byte{c}); err != nil {
				return 0, err
			}
		}
	}
	return len(b), nil
}
