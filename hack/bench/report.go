package main

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// Result is what one run of the bench measured: docs/benchmarks.md is
// rendered from it alone, so -render gives the same markdown from its JSON.
type Result struct {
	Run      Run
	Sections []*Section
}

// Run is how and where the bench ran.
type Run struct {
	Command, CPUs, CPU, Kernel, Memory, Go, Kubectl string
	Date                                            time.Time
	Minutes                                         float64 // the whole run; 0 while it runs
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

// Section is what one phase measured at one scope (a size, a count of
// namespaces): its contenders' series, and the facts its block of
// benchmarks.md.tmpl, named as the phase, shows (zero when it has none).
type Section struct {
	Phase, Scope            string
	Size                    size          `json:",omitzero"`
	Content                 content       `json:",omitzero"`  // of each namespace of its fixture
	Namespace               string        `json:",omitempty"` // its one namespace
	Namespaces, Types, CRDs int           `json:",omitempty"` // its namespaces; namespaced types in discovery; of them generated CRDs
	Delay, Pause            time.Duration `json:",omitempty"` // the link's one-way delay; the pause after building a batch
	Commands                []string      `json:",omitempty"`
	Series                  []*Series     `json:",omitempty"`
	Idle                    *WatchStep    `json:",omitempty"` // the watch's steps; Idle: the API server alone
	Steps                   []WatchStep   `json:",omitempty"`
	Webhook, Predictions    Histogram     `json:",omitzero"`  // the guard's answers as kube-apiserver timed them; its predictions
	FailedOpen              float64       `json:",omitempty"` // the guard's and kube-apiserver's counts
}

func (s *Section) series(key, name string) *Series {
	s.Series = append(s.Series, &Series{Key: key, Name: name})
	return s.Series[len(s.Series)-1]
}

// S is the series of key, empty when s has none.
func (s *Section) S(key string) *Series {
	if i := slices.IndexFunc(s.Series, func(x *Series) bool { return x.Key == key }); i >= 0 {
		return s.Series[i]
	}
	return &Series{}
}

func (s *Section) Med(key, metric string) float64 { return s.S(key).Of(metric).Median() }
func (s *Section) RTT() time.Duration             { return 2 * s.Delay }

//go:embed benchmarks.md.tmpl
var tmplText string

var tmpl = template.Must(template.New("benchmarks").Funcs(template.FuncMap{
	"table": table, "breakdown": breakdown, "paired": paired, "trim": trim,
	"quiet": func() time.Duration { return quietAfterRound },
	"add":   func(a, b any) float64 { return num(a) + num(b) },
	"sub":   func(a, b any) float64 { return num(a) - num(b) },
	"mul":   func(a, b any) float64 { return num(a) * num(b) },
	"div":   func(a, b any) float64 { return ratio(num(a), num(b)) },
}).Parse(tmplText))

func num(x any) float64 {
	if d, ok := x.(time.Duration); ok {
		return d.Seconds()
	}
	return reflect.ValueOf(x).Convert(reflect.TypeFor[float64]()).Float()
}

// render writes the head (the run, the targets), then each section
// through the template block of its phase.
func render(w io.Writer, r *Result) error {
	vs := verdicts(r)
	err := tmpl.Execute(w, struct {
		*Result
		Verdicts []verdict
		Summary  string
	}{r, vs, summary(vs)})
	for _, s := range r.Sections {
		err = cmp.Or(err, tmpl.ExecuteTemplate(w, s.Phase, s))
	}
	return err
}

func writeMarkdown(r *Result, path string) error {
	f, err := os.Create(path)
	if err == nil {
		err = cmp.Or(render(f, r), f.Close())
	}
	return err
}

// renderFile renders the markdown at out from the JSON file at in.
func renderFile(in, out string) error {
	var r Result
	data, err := os.ReadFile(in)
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return writeMarkdown(&r, out)
}

// table is a markdown table of a section's series: the median of each
// metric, and the spread of times; "–" where nothing was measured.
func table(s *Section, cols ...string) string {
	head, rule := "| command | runs |", "|---|---|"
	for _, c := range cols {
		if head, rule = head+" "+metrics[c].head+" |", rule+"---|"; spread(c) {
			head, rule = head+" spread |", rule+"---|"
		}
	}
	out := head + "\n" + rule + "\n"
	for _, x := range s.Series {
		out += fmt.Sprintf("| %s | %d |", x.Name, len(x.Runs))
		for _, c := range cols {
			xs, p, med, spr := x.Of(c), metrics[c].prec, "–", "–"
			if xs.Max() > 0 {
				med, spr = fmt.Sprintf("%.*f", p, xs.Median()), fmt.Sprintf("%.*f–%.*f", p, slices.Min(xs), p, xs.Max())
			}
			if out += " " + med + " |"; spread(c) {
				out += " " + spr + " |"
			}
		}
		out += "\n"
	}
	return out
}

func spread(metric string) bool { return metric == "s" || metric == "delete" }

// breakdown is requests by verb and resource, biggest first; resources of
// one verb with the same count are one entry when there are more than 4
// of them ("LIST, each of 30 resources (a, b, c, d, …) ×1").
func breakdown(m map[string]float64) string {
	type row struct {
		name string
		n    float64
	}
	groups := map[row][]string{} // verb and count -> resources
	for _, k := range slices.Sorted(maps.Keys(m)) {
		verb, res, _ := strings.Cut(k, " ")
		groups[row{verb, m[k]}] = append(groups[row{verb, m[k]}], res)
	}
	var rows []row
	for r, names := range groups {
		if len(names) > 4 {
			r.name, names = r.name+",", []string{fmt.Sprintf("each of %d resources (%s, …)", len(names), strings.Join(names[:4], ", "))}
		}
		for _, res := range names {
			rows = append(rows, row{r.name + " " + res, r.n})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.name, b.name)) })
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = r.name + " ×" + trim(r.n)
	}
	return strings.Join(parts, ", ")
}

// trim prints a count as g does, nothing as "–".
func trim(v float64) string {
	if v == 0 {
		return "–"
	}
	return g(v)
}

// g prints a number to three significant digits, bigger ones whole.
func g(x float64) string {
	if math.Abs(x) >= 100 {
		return strconv.FormatFloat(math.Round(x), 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// target is one goal of the bench: a value read on each section of a
// phase, compared with a threshold. The Targets section's lines and its
// summary all come from this list.
type target struct {
	phase, what, op string // op: "<=", "<", ">=", ">"; "": written down for comparison only (info)
	limit           float64
	unit            string
	read            func(*Section) (v float64, detail string, ok bool) // not ok: the section lacks what it reads
	why             string                                             // under a MISSED line: why, and what would fix it
}

// at reads only the section of one scope.
func at(scope string, read func(*Section) (float64, string, bool)) func(*Section) (float64, string, bool) {
	return func(s *Section) (float64, string, bool) {
		v, detail, ok := read(s)
		return v, detail, ok && s.Scope == scope
	}
}

// ran says whether each of the series keys has runs.
func ran(s *Section, keys ...string) bool {
	return !slices.ContainsFunc(keys, func(k string) bool { return len(s.S(k).Runs) == 0 })
}

// vs is the median of metric of the series a over b's.
func vs(a, b, metric string) func(*Section) (float64, string, bool) {
	return func(s *Section) (float64, string, bool) {
		x, y := s.Med(a, metric), s.Med(b, metric)
		return ratio(x, y), fmt.Sprintf("%s s vs %s s", g(x), g(y)), ran(s, a, b)
	}
}

// pairedVs is vs of the times with each run's own ratio beside.
func pairedVs(a, b string) func(*Section) (float64, string, bool) {
	return func(s *Section) (float64, string, bool) {
		v, detail, ok := vs(a, b, "s")(s)
		runs := paired(s.S(a).Of("s"), s.S(b).Of("s"))
		return v, fmt.Sprintf("%s; run by run %s, median %.2fx", detail, runs.List(2), runs.Median()), ok
	}
}

func median(key string) func(*Section) (float64, string, bool) {
	return func(s *Section) (float64, string, bool) {
		return s.Med(key, "s"), fmt.Sprintf("median of %d", len(s.S(key).Runs)), ran(s, key)
	}
}

// peak is the highest max RSS of the series keys' runs (of their medians
// if med), once one ran.
func peak(med bool, keys ...string) func(*Section) (float64, string, bool) {
	return func(s *Section) (v float64, detail string, ok bool) {
		var each []string
		for _, k := range keys {
			x := s.S(k).Of("rss").Max()
			if med {
				x = s.Med(k, "rss")
			}
			v, ok, each = max(v, x), ok || ran(s, k), append(each, fmt.Sprintf("%s %.1f MiB", s.S(k).Name, x))
		}
		return v, strings.Join(each, ", "), ok
	}
}

var targets = []target{
	{"explain", "explain at least 20x faster than the shell recipe (the recipe's time over explain's)", ">=", 20, "x", at("medium", vs("recipe", "explain", "s")), ""},
	{"explain", "explain within 1.5x of the floor, the plugin binary run directly like the floor", "<=", 1.5, "x", vs("plugin", "floor", "s"),
		"beyond the floor's sweep explain lists the pods again with their spec, reads webhooks, CRDs and the namespace, evaluates the controller's deletion pass and encodes the JSON report, and on 2 cores it competes with kube-apiserver and etcd for CPU. Fix: fold the pod grace periods into the sweep and aggregate while paging."},
	{"explain", "explain within 1.5x of the floor, through kubectl", "<=", 1.5, "x", vs("explain", "floor", "s"),
		"the gap is kubectl's own start-up: it finds the plugin on PATH and execs it, and the gcloud kubectl is a dispatcher that first execs a versioned kubectl; `kubectl ns-doctor version` (no API call, in the table) measures that fixed cost, which does not grow with the namespace. The plugin binary run like the floor is the like-for-like line; only a kubectl without dispatcher removes it."},
	// 8 of explain's own, and the 7 cluster-wide lists owner inference
	// reads once when a finalizer is not in the catalogue (the fixtures'
	// are not): ClusterRoles, ClusterRoleBindings, Roles, RoleBindings,
	// Deployments, StatefulSets, DaemonSets (#34).
	{"explain", "explain's LISTs beyond the floor's one per type and page (cluster-wide lists, nothing per object; 7 of them owner inference's)", "<=", 8 + 7, "", func(s *Section) (float64, string, bool) {
		return s.Med("explain", "lists") - s.Med("floor", "lists"), "", ran(s, "explain", "floor")
	}, ""},
	// Besides LISTs, explain sends /version, a GET of the namespace,
	// discovery's two and at most 6 holders' status reads; the API server's
	// own (lease renewals, OpenAPI aggregation) add up to 2 meanwhile.
	{"explain", "explain's other requests (/version, the namespace, discovery, 6 holders' status reads, 2 of the API server's own)", "<=", 4 + 6 + 2, "", func(s *Section) (float64, string, bool) {
		return s.Med("explain", "requests") - s.Med("explain", "lists"), "", ran(s, "explain")
	}, ""},
	{"explain", "explain's peak memory (median), the plugin binary or through kubectl, whichever is higher", "<=", 100, " MiB", at("large", peak(true, "plugin", "explain")),
		"explain keeps, per type, every object that holds the namespace and a few examples, and counts the rest while paging; a namespace where most objects hold it keeps them all, and GOGC=100 lets the heap grow to about twice that."},
	{"explain-link", "explain over the link within 1.3x of the floor through the same link, through kubectl", "<=", 1.3, "x", vs("link-explain", "link-floor", "s"), ""},
	{"explain-link", "explain over the link within 1.3x of the floor through the same link, the plugin binary run directly", "<=", 1.3, "x", vs("link-plugin", "link-floor", "s"), ""},
	{"explain-link", "the shell recipe over the link, its time over explain's through the same link", "", 0, "x", vs("link-recipe", "link-explain", "s"), ""},
	{"guard", "the guard's p99 as kube-apiserver waited for it, below its budget (--guard-timeout)", "<", guardBudget.Seconds(), " s", func(s *Section) (float64, string, bool) {
		return s.Webhook.Quantile(0.99), fmt.Sprintf("p50 %s s, of %s calls", g(s.Webhook.Quantile(0.5)), g(s.Webhook.Count)), s.Webhook.Count > 0
	}, "the prediction is one explain --if-deleted: a discovery and a metadata list per type, which on 2 cores shared with kube-apiserver and etcd take longer as the namespace grows; a prediction past the budget fails open, so a slow guard never blocks a delete."},
	{"guard", "the guard's answers that failed open (its own count and kube-apiserver's)", "<=", 0, "", func(s *Section) (float64, string, bool) { return s.FailedOpen, "", s.Webhook.Count > 0 }, ""},
	// The same floor run to run on loopback differs by up to a quarter (the
	// purge section's spread); the guard is never asked about content, so
	// a real cost would be a request per object, far beyond.
	{"guard", "the deletion of content with the guard registered within 1.2x of without (purge's floor, command alone)", "<=", 1.2, "x", pairedVs("floor-guard", "floor"), ""},
	{"purge", "purge --force at least 1.5x faster than the namespace controller on loopback (its time over purge's, from `kubectl delete namespace` to gone)", ">=", 1.5, "x", vs("controller", "purge", "delete"), ""},
	{"purge", "purge --force at least 1.5x faster than the namespace controller over the link (only the delete and purge use it)", ">=", 1.5, "x", vs("link-controller", "link-purge", "delete"), ""},
	{"purge", "purge --force within 1.3x of the parallel floor on loopback, command alone", "<=", 1.3, "x", pairedVs("purge", "floor"), ""},
	{"purge", "purge --force within 1.3x of the parallel floor through the same link, command alone", "<=", 1.3, "x", pairedVs("link-purge", "link-floor"), ""},
	{"purge-memory", "purge --force's peak memory, the highest of the runs", "<=", 150, " MiB", peak(false, "purge"), ""},
	{"many", "explain with no name shares one discovery: its discovery requests beyond one explain's", "<=", 0, "", func(s *Section) (float64, string, bool) {
		d := func(key string) float64 {
			v := s.S(key).First().ByVerb
			return v["GET (non-resource)"] + v["GET /api"] + v["GET /apis"]
		}
		return d("all") - d("one"), fmt.Sprintf("%s vs %s", g(d("all")), g(d("one"))), ran(s, "all", "one")
	}, ""},
	{"purge-many", "purge of namespaces an uninstalled operator left stuck, the separate runs' time over one run's", "", 0, "x", vs("loop", "one", "s"), ""},
	{"purge-1000", "purge -l of the namespaces an uninstalled operator left stuck", "<", 60, " s", median("one"), ""},
	{"purge-1000", "explain with no name over the terminating namespaces", "<", 5, " s", median("explain"), ""},
	{"purge-1000", "peak RSS of explain with no name and purge -l, the highest of the runs", "<", 200, " MiB", peak(false, "explain", "one"), ""},
	{"purge-1000", "the per-namespace loop's time over purge -l's", "", 0, "x", vs("loop", "one", "s"), ""},
	{"purge-1000", "purge -l, the -purge-compare build's time over this tree's", "", 0, "x", vs("compare", "one", "s"), ""},
	{"watch", "the watch's peak RSS (VmHWM at the end)", "<", 100, " MiB", watchRead(func(s *Section) (float64, string) { return float64(s.Last().MaxRSS) / 1024, "" }), ""},
	{"watch", "the watch's requests per resync grow with the stuck namespaces: its own requests per resync and stuck namespace", ">", 0, "", watchRead(func(s *Section) (float64, string) {
		first, last := s.Steps[0], s.Last()
		if last.Stuck == first.Stuck {
			return s.Own(first) / float64(first.Stuck), ""
		}
		return (s.Own(last) - s.Own(first)) / float64(last.Stuck-first.Stuck), "between the first step and the last"
	}), ""},
	{"watch", "the watch's GETs of single ConfigMaps or Secrets per resync (nothing per object)", "<=", 0, "", watchRead(func(s *Section) (n float64, _ string) {
		for _, st := range s.Steps {
			n += st.ByVerb["GET configmaps"] + st.ByVerb["GET secrets"]
		}
		return n, ""
	}), ""},
	{"watch", "the watch's most requests of one type per resync, over the cluster's namespaces (nothing near one per namespace)", "<", 0.5, "", watchRead(func(s *Section) (most float64, detail string) {
		for _, st := range s.Steps {
			for k, v := range st.ByVerb {
				if v/float64(s.Namespaces) > most {
					most, detail = v/float64(s.Namespaces), fmt.Sprintf("%s ×%s with %d stuck", k, g(v), st.Stuck)
				}
			}
		}
		return most, detail
	}), ""},
}

// watchRead reads a watch section that measured at least one step.
func watchRead(read func(*Section) (float64, string)) func(*Section) (float64, string, bool) {
	return func(s *Section) (float64, string, bool) {
		if len(s.Steps) == 0 || s.Idle == nil {
			return 0, "", false
		}
		v, detail := read(s)
		return v, detail, true
	}
}

// verdict is one line of the Targets section.
type verdict struct{ Mark, Text, Why string }

func (t target) met(v float64) bool {
	c := cmp.Compare(v, t.limit)
	return c < 0 && t.op[0] == '<' || c > 0 && t.op[0] == '>' || c == 0 && strings.HasSuffix(t.op, "=")
}

func verdicts(r *Result) (out []verdict) {
	for _, t := range targets {
		for _, s := range r.Sections {
			if s.Phase != t.phase {
				continue
			}
			v, detail, ok := t.read(s)
			if !ok {
				continue
			}
			line := verdict{"**info**", fmt.Sprintf("%s (%s): %s%s", t.what, s.Scope, g(v), t.unit), ""}
			if t.op != "" {
				line.Mark, line.Text = "**met**", line.Text+fmt.Sprintf(", target %s %s%s", t.op, g(t.limit), t.unit)
				if !t.met(v) {
					line.Mark, line.Why = "**MISSED**", t.why
				}
			}
			if detail != "" {
				line.Text += "; " + detail
			}
			out = append(out, line)
		}
	}
	return out
}

func summary(vs []verdict) string {
	n := map[string]int{}
	for _, v := range vs {
		n[v.Mark]++
	}
	return fmt.Sprintf("Targets met: %d; MISSED: %d; numbers for comparison only (info): %d.", n["**met**"], n["**MISSED**"], n["**info**"])
}
