package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"sort"
	"strings"
	"text/template"
	"time"
)

// Result is what one run of the bench measured, a field per phase (nil
// or empty when it did not run): docs/benchmarks.md is rendered from it
// alone, so -render gives the same markdown from its JSON.
type Result struct {
	Run       Run
	Explain   []*ExplainResult `json:",omitempty"`
	Link      *LinkResult      `json:",omitempty"`
	Purge     *PurgeResult     `json:",omitempty"`
	Memory    *MemoryResult    `json:",omitempty"`
	Many      *ManyResult      `json:",omitempty"`
	PurgeMany *BatchResult     `json:",omitempty"`
	P1k       *BatchResult     `json:",omitempty"`
	Watch     *WatchResult     `json:",omitempty"`
}

// Run is how and where the bench ran.
type Run struct {
	Command, CPUs, CPU, Kernel, Memory, Go, Kubectl string
	Date                                            time.Time
	Phases                                          []PhaseTime
	Minutes                                         float64 // the whole run; 0 while it runs
}

type PhaseTime struct {
	Name string
	Took time.Duration
}

func machine() Run {
	sh := func(cmd string) string {
		out, _ := exec.Command("bash", "-c", cmd).CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	return Run{Command: strings.TrimSpace("go run ./hack/bench " + strings.Join(os.Args[1:], " ")), Date: time.Now().UTC(),
		CPUs: sh("nproc"), CPU: sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs"), Kernel: sh("uname -sr"),
		Memory: sh("free -h"), Go: sh("go version"), Kubectl: sh("kubectl version --client 2>/dev/null | head -1")}
}

// LinkDelay is the slow link's one-way delay, when a phase used it.
func (r *Result) LinkDelay() time.Duration {
	switch {
	case r.Link != nil:
		return r.Link.Delay
	case r.Purge != nil:
		return r.Purge.Delay
	}
	return 0
}

//go:embed benchmarks.md.tmpl
var tmplText string

var tmpl = template.Must(template.New("benchmarks").Funcs(template.FuncMap{
	"table": table, "raw": raw, "med": med, "breakdown": breakdown, "paired": paired, "trim": trimFloat,
	"add": func(a, b any) float64 { return num(a) + num(b) },
	"sub": func(a, b any) float64 { return num(a) - num(b) },
	"mul": func(a, b any) float64 { return num(a) * num(b) },
	"div": func(a, b any) float64 { return ratio(num(a), num(b)) },
}).Parse(tmplText))

func num(x any) float64 {
	switch v := x.(type) {
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case time.Duration:
		return v.Seconds()
	}
	return x.(float64)
}

func render(w io.Writer, r *Result) error {
	vs := verdicts(r)
	return tmpl.Execute(w, struct {
		*Result
		Verdicts []verdict
		Summary  string
	}{r, vs, summary(vs)})
}

func writeMarkdown(r *Result, path string) error {
	var buf bytes.Buffer
	if err := render(&buf, r); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// renderFile renders the markdown at out from the JSON file at in.
func renderFile(in, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return writeMarkdown(&r, out)
}

// table is a markdown table of series: the median of each metric, and
// the spread of times; "–" where nothing was measured.
func table(rows []*Series, cols ...string) string {
	var b strings.Builder
	b.WriteString("| command | runs |")
	for _, c := range cols {
		if b.WriteString(" " + metrics[c].head + " |"); spread(c) {
			b.WriteString(" spread |")
		}
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", strings.Count(b.String(), "|")-3) + "\n")
	for _, s := range rows {
		fmt.Fprintf(&b, "| %s | %d |", s.Name, len(s.Runs))
		for _, c := range cols {
			xs, med, spr := s.Of(c), "–", "–"
			if xs.Percentile(100) > 0 {
				med, spr = fmt.Sprintf("%.*f", metrics[c].prec, xs.Percentile(50)), xs.Spread(metrics[c].prec)
			}
			if fmt.Fprintf(&b, " %s |", med); spread(c) {
				fmt.Fprintf(&b, " %s |", spr)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func spread(metric string) bool { return metric == "s" || metric == "delete" }

// raw lists every run's values of each metric, a line per series.
func raw(rows []*Series, cols ...string) string {
	var b strings.Builder
	for _, s := range rows {
		var parts []string
		for _, c := range cols {
			if xs := s.Of(c); xs.Percentile(100) > 0 {
				parts = append(parts, metrics[c].head+" "+xs.List(metrics[c].prec))
			}
		}
		fmt.Fprintf(&b, "- %s: %s\n", s.Name, strings.Join(parts, "; "))
	}
	return b.String()
}

// breakdown is requests by verb and resource, biggest first; the
// resources of one verb with the same count are one entry when they are
// more than 4 (a sweep's LISTs).
func breakdown(m map[string]float64) string {
	var parts []string
	for _, r := range verbRows([]map[string]float64{m}) {
		parts = append(parts, r.Name+" ×"+trimFloat(r.Values[0]))
	}
	return strings.Join(parts, ", ")
}

// extraLists names the LISTs of a beyond b's.
func extraLists(a, b map[string]float64) string {
	d := map[string]float64{}
	for k, v := range a {
		if strings.HasPrefix(k, "LIST ") && v > b[k] {
			d[k] = v - b[k]
		}
	}
	if len(d) == 0 {
		return "none"
	}
	return breakdown(d)
}

type verbRow struct {
	Name   string
	Values []float64
}

// verbRows lays out columns of "VERB resource" counts as rows, biggest
// first; resources of one verb with the same counts in every column are
// one row when there are more than 4 of them ("LIST, each of 30
// resources (a, b, ...)").
func verbRows(cols []map[string]float64) []verbRow {
	keys := map[string]bool{}
	for _, c := range cols {
		for k := range c {
			keys[k] = true
		}
	}
	groups := map[string][]string{} // verb and values -> resources
	values := map[string][]float64{}
	for k := range keys {
		verb, res, _ := strings.Cut(k, " ")
		vals := make([]float64, len(cols))
		for i, c := range cols {
			vals[i] = c[k]
		}
		id := verb + " " + fmt.Sprint(vals)
		groups[id], values[id] = append(groups[id], res), vals
	}
	var rows []verbRow
	for id, names := range groups {
		verb, _, _ := strings.Cut(id, " ")
		sort.Strings(names)
		if len(names) <= 4 {
			for _, n := range names {
				rows = append(rows, verbRow{verb + " " + n, values[id]})
			}
			continue
		}
		rows = append(rows, verbRow{fmt.Sprintf("%s, each of %d resources (%s, …)", verb, len(names), strings.Join(names[:4], ", ")), values[id]})
	}
	sum := func(xs []float64) (t float64) {
		for _, x := range xs {
			t += x
		}
		return t
	}
	sort.Slice(rows, func(i, j int) bool {
		if a, b := sum(rows[i].Values), sum(rows[j].Values); a != b {
			return a > b
		}
		return rows[i].Name < rows[j].Name
	})
	return rows
}

// trimFloat prints a count: whole numbers bare, others to one decimal,
// nothing as "–".
func trimFloat(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
