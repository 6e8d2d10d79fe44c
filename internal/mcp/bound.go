package mcp

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// Detail is how much of a document a tool returns: an agent's context
// window is bounded, and a swamped namespace must not fill it.
type Detail string

// Detail levels: normal is what the human view shows (internal/printer's
// limits); brief a fraction, full five times as much. Each is bounded, and
// each has a budget of bytes past which the lists are halved again.
const (
	DetailBrief  Detail = "brief"
	DetailNormal Detail = "normal"
	DetailFull   Detail = "full"
)

// details are the levels, for the input schemas.
var details = []any{string(DetailBrief), string(DetailNormal), string(DetailFull)}

// parseDetail reads a detail argument; empty is def.
func parseDetail(s string, def Detail) (Detail, error) {
	switch d := Detail(s); d {
	case "":
		return def, nil
	case DetailBrief, DetailNormal, DetailFull:
		return d, nil
	}
	return "", fmt.Errorf("invalid detail %q: use brief, normal or full", s)
}

// limits are the bounds of one detail level.
func (d Detail) limits() printer.Limits {
	h := printer.HumanLimits()
	switch d {
	case DetailBrief:
		return printer.Limits{Rows: 10, Items: 5, Evidence: 3, Text: 200}
	case DetailFull:
		return printer.Limits{Rows: 5 * h.Rows, Items: 5 * h.Items, Evidence: 5 * h.Evidence, Text: 5 * h.Text}
	}
	return h
}

// budget is how many bytes of JSON a result may take at this level: past
// it, the lists and texts are halved until it fits (about 4, 16 and 64
// thousand tokens).
func (d Detail) budget() int {
	switch d {
	case DetailBrief:
		return 16 << 10
	case DetailFull:
		return 256 << 10
	}
	return 64 << 10
}

// Bounded says what bounding left out of a result, so that the agent knows
// it holds a part, and how to ask for more (detail: full, a selector).
type Bounded struct {
	// Cut are the lists that were shortened: where, and how many items
	// were left out.
	Cut []Cut `json:"cut,omitempty" jsonschema:"the lists that were shortened to bound the result: their path and how many items were left out"`
	// TextCut counts the strings shortened (each says how many characters
	// it lost).
	TextCut int `json:"text_cut,omitempty" jsonschema:"how many strings were shortened (each ends saying how many characters it lost)"`
	// Detail is the level the result was bounded at.
	Detail Detail `json:"detail" jsonschema:"the detail level the result was bounded at: brief, normal or full"`
}

// Cut is one shortened list.
type Cut struct {
	Path    string `json:"path"`
	Omitted int    `json:"omitted"`
}

// bound builds a document (build is called again for each try, as the
// walk changes what it is given), escapes every string in it of control
// characters, and cuts its lists and strings to detail's limits, shrunk
// until its JSON fits detail's budget.
func bound[T any](build func() T, detail Detail) (T, Bounded) {
	l := detail.limits()
	for {
		doc := build()
		b := &bounder{l: l}
		b.walk(reflect.ValueOf(&doc).Elem(), "", "")
		out := Bounded{Cut: b.cuts, TextCut: b.texts, Detail: detail}
		raw, err := json.Marshal(doc)
		if err != nil || len(raw) <= detail.budget() || l == minLimits {
			return doc, out
		}
		l = shrink(l, float64(len(raw))/float64(detail.budget()))
	}
}

// shrink divides limits for a result over its budget by ratio: lists hold
// lists of texts, so each bound is divided by about the square root of
// the ratio, at least by two. The rows (a list's namespaces, a
// namespace's resource types) go last: each item told in fewer words is
// worth more than fewer items.
func shrink(l printer.Limits, ratio float64) printer.Limits {
	f := max(math.Sqrt(ratio), 2)
	div := func(n, least int) int { return max(int(float64(n)/f), least) }
	inner := printer.Limits{Rows: l.Rows, Items: div(l.Items, minLimits.Items), Evidence: div(l.Evidence, minLimits.Evidence), Text: div(l.Text, minLimits.Text)}
	if inner != l {
		return inner
	}
	inner.Rows = div(l.Rows, minLimits.Rows)
	return inner
}

// minLimits are the least a result keeps of each list and string.
var minLimits = printer.Limits{Rows: 1, Items: 1, Evidence: 1, Text: 64}

// bounder walks a document, bounding as it goes.
type bounder struct {
	l     printer.Limits
	cuts  []Cut
	texts int
}

// rowLists are the lists the human view shows as tables; evidenceLists
// the lines of one finding. Every other list is bounded as items.
var (
	rowLists      = []string{"content", "steps", "rows", "remaining", "items", "namespaces", "changes"}
	evidenceLists = []string{"evidence"}
)

func (b *bounder) limitOf(field string) int {
	switch {
	case slices.Contains(rowLists, field):
		return b.l.Rows
	case slices.Contains(evidenceLists, field):
		return b.l.Evidence
	}
	return b.l.Items
}

// walk bounds v, found at path under the JSON name field.
func (b *bounder) walk(v reflect.Value, path, field string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			b.walk(v.Elem(), path, field)
		}
	case reflect.Struct:
		b.walkStruct(v, path)
	case reflect.Interface:
		// A row's typed extra: bounded and escaped as a copy, put back.
		if !v.IsNil() && v.CanSet() {
			e := reflect.New(v.Elem().Type()).Elem()
			e.Set(v.Elem())
			b.walk(e, path, field)
			v.Set(e)
		}
	case reflect.String:
		s := v.String()
		if out := printer.Clip(s, b.l.Text); out != s && v.CanSet() {
			if utf8.RuneCountInString(s) > b.l.Text || utf8.RuneCountInString(out) == b.l.Text && strings.HasSuffix(out, " more characters)") {
				b.texts++
			}
			v.SetString(out)
		}
	case reflect.Slice:
		if n := b.limitOf(field); v.Len() > n {
			b.cuts = append(b.cuts, Cut{Path: path, Omitted: v.Len() - n})
			v.Set(v.Slice(0, n))
		}
		for i := range v.Len() {
			b.walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i), field)
		}
	case reflect.Map:
		b.walkMap(v, path, field)
	}
}

func (b *bounder) walkStruct(v reflect.Value, path string) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			b.walk(v.Field(i), path, "")
			continue
		}
		if name == "" {
			name = f.Name
		}
		b.walk(v.Field(i), join(path, name), name)
	}
}

// walkMap rebuilds a string-keyed map: its keys escaped, its entries
// bounded as items (the first ones by key, so that a cut is stable).
func (b *bounder) walkMap(v reflect.Value, path, field string) {
	if v.IsNil() || v.Type().Key().Kind() != reflect.String || !v.CanSet() {
		return
	}
	keys := v.MapKeys()
	slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
	if n := b.l.Items; len(keys) > n {
		b.cuts = append(b.cuts, Cut{Path: path, Omitted: len(keys) - n})
		keys = keys[:n]
	}
	out := reflect.MakeMapWithSize(v.Type(), len(keys))
	for _, k := range keys {
		val := reflect.New(v.Type().Elem()).Elem()
		val.Set(v.MapIndex(k))
		b.walk(val, path+"["+printer.Escape(k.String())+"]", field)
		key := reflect.New(v.Type().Key()).Elem()
		key.SetString(printer.Clip(k.String(), b.l.Text))
		out.SetMapIndex(key, val)
	}
	v.Set(out)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
