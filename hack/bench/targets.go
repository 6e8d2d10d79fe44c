package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// target is one goal of the bench: a value compared with a threshold.
// The Targets section's lines and its summary all come from this list.
type target struct {
	what  string
	op    string // "<=", "<", ">=", ">"; "": written down for comparison only (info)
	limit float64
	unit  string
	read  func(*Result) []reading // a value per size or path; none when its phase did not run
	why   string                  // under a MISSED line: why, and what would fix it
}

// reading is a target's value at one scope, with the numbers behind it.
type reading struct {
	scope, detail string
	value         float64
}

// each reads a target on every result of of that f gives a reading for.
func each[T any](of func(*Result) []T, f func(T) *reading) func(*Result) []reading {
	return func(r *Result) (out []reading) {
		for _, x := range of(r) {
			if rd := f(x); rd != nil {
				out = append(out, *rd)
			}
		}
		return out
	}
}

// vs reads a's median of metric over b's.
func vs(scope string, a, b *Series, metric, more string) *reading {
	x, y := med(a, metric), med(b, metric)
	return &reading{scope, fmt.Sprintf("%s s vs %s s%s", g(x), g(y), more), ratio(x, y)}
}

// g prints a number to three significant digits, bigger ones whole.
func g(x float64) string {
	if math.Abs(x) >= 100 {
		return strconv.FormatFloat(math.Round(x), 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

func opt[T any](x *T) []*T {
	if x == nil {
		return nil
	}
	return []*T{x}
}

var (
	explains = func(r *Result) []*ExplainResult { return r.Explain }
	links    = func(r *Result) []*LinkResult { return opt(r.Link) }
	p1ks     = func(r *Result) []*BatchResult { return opt(r.P1k) }
	watches  = func(r *Result) []*WatchResult { return opt(r.Watch) }
	paths    = func(r *Result) []*PurgePath {
		if r.Purge == nil {
			return nil
		}
		return r.Purge.Paths
	}
)

var targets = []target{
	{what: "explain at least 20x faster than the shell recipe (the recipe's time over explain's)", op: ">=", limit: 20, unit: "x",
		read: each(explains, func(e *ExplainResult) *reading {
			if e.Size.Name != "medium" {
				return nil
			}
			return vs(e.Size.Name, &e.Recipe, &e.Explain, "s", "")
		})},
	{what: "explain within 1.5x of the floor, the plugin binary run directly like the floor", op: "<=", limit: 1.5, unit: "x",
		read: each(explains, func(e *ExplainResult) *reading { return vs(e.Size.Name, &e.Plugin, &e.Floor, "s", "") }),
		why:  "beyond the floor's sweep explain lists the pods again with their spec, reads webhooks, CRDs and the namespace, evaluates the controller's deletion pass and encodes the JSON report, and on 2 cores it competes with kube-apiserver and etcd for CPU. Fix: fold the pod grace periods into the sweep and aggregate while paging."},
	{what: "explain within 1.5x of the floor, through kubectl", op: "<=", limit: 1.5, unit: "x",
		read: each(explains, func(e *ExplainResult) *reading {
			return vs(e.Size.Name, &e.Explain, &e.Floor, "s", fmt.Sprintf("; `kubectl ns-doctor version` alone takes %s s", g(med(&e.Version, "s"))))
		}),
		why: "the gap is kubectl's own start-up: it finds the plugin on PATH and execs it, and the gcloud kubectl is a dispatcher that first execs a versioned kubectl; `kubectl ns-doctor version` (no API call) measures that fixed cost, which does not grow with the namespace. The plugin binary run like the floor is the like-for-like line; only a kubectl without dispatcher removes it."},
	{what: "explain's LISTs beyond the floor's one per type and page (cluster-wide lists, nothing per object)", op: "<=", limit: 8,
		read: each(explains, func(e *ExplainResult) *reading {
			return &reading{e.Size.Name, fmt.Sprintf("%s LIST for %d types, %s pages: %s", g(med(&e.Explain, "lists")), e.Types, g(med(&e.Floor, "lists")),
				extraLists(e.Explain.First().ByVerb, e.Floor.First().ByVerb)), med(&e.Explain, "lists") - med(&e.Floor, "lists")}
		})},
	// Besides LISTs, explain sends /version, a GET of the namespace,
	// discovery's two and at most 6 holders' status reads; the API server's
	// own (lease renewals, OpenAPI aggregation) add up to 2 meanwhile.
	{what: "explain's other requests (/version, the namespace, discovery, 6 holders' status reads, 2 of the API server's own)", op: "<=", limit: 4 + 6 + 2,
		read: each(explains, func(e *ExplainResult) *reading {
			return &reading{e.Size.Name, "", med(&e.Explain, "requests") - med(&e.Explain, "lists")}
		})},
	{what: "explain's peak memory, the plugin binary or through kubectl, whichever is higher", op: "<=", limit: 100, unit: " MiB",
		read: each(explains, func(e *ExplainResult) *reading {
			if e.Size.Name != "large" {
				return nil
			}
			p, k := med(&e.Plugin, "rss"), med(&e.Explain, "rss")
			return &reading{e.Size.Name, fmt.Sprintf("plugin binary %.1f MiB, through kubectl %.1f MiB, the floor %.1f MiB", p, k, med(&e.Floor, "rss")), max(p, k)}
		}),
		why: "explain keeps, per type, every object that holds the namespace and a few examples, and counts the rest while paging; a namespace where most objects hold it keeps them all, and GOGC=100 lets the heap grow to about twice that."},
	{what: "explain over the link within 1.3x of the floor through the same link, through kubectl", op: "<=", limit: 1.3, unit: "x",
		read: each(links, func(l *LinkResult) *reading {
			return vs(l.Size.Name, &l.LinkExplain, &l.LinkFloor, "s", fmt.Sprintf("; on loopback %.2fx", ratio(med(&l.Explain, "s"), med(&l.Floor, "s"))))
		})},
	{what: "explain over the link within 1.3x of the floor through the same link, the plugin binary run directly", op: "<=", limit: 1.3, unit: "x",
		read: each(links, func(l *LinkResult) *reading { return vs(l.Size.Name, &l.LinkPlugin, &l.LinkFloor, "s", "") })},
	{what: "the shell recipe over the link, its time over explain's through the same link", unit: "x",
		read: each(links, func(l *LinkResult) *reading {
			return vs(l.Size.Name, &l.LinkRecipe, &l.LinkExplain, "s", fmt.Sprintf("; on loopback %.0fx", ratio(med(&l.Recipe, "s"), med(&l.Explain, "s"))))
		})},
	{what: "purge --force at least 1.5x faster than the namespace controller (its time over purge's, from `kubectl delete namespace` to gone)", op: ">=", limit: 1.5, unit: "x",
		read: each(paths, func(p *PurgePath) *reading {
			if len(p.Controller.Runs) == 0 {
				return nil
			}
			return vs(p.Name, &p.Controller, &p.Purge, "delete", "")
		})},
	{what: "purge --force within 1.3x of the parallel floor through the same path, command alone", op: "<=", limit: 1.3, unit: "x",
		read: each(paths, func(p *PurgePath) *reading {
			runs := paired(p.Purge.Of("s"), p.Floor.Of("s"))
			return vs(p.Name, &p.Purge, &p.Floor, "s", fmt.Sprintf("; %.2fx from `kubectl delete namespace`; run by run %s, median %.2fx",
				ratio(med(&p.Purge, "delete"), med(&p.Floor, "delete")), runs.List(2), runs.Percentile(50)))
		})},
	{what: "purge --force's peak memory, the highest of the runs", op: "<=", limit: 150, unit: " MiB",
		read: each(func(r *Result) []*MemoryResult { return opt(r.Memory) }, func(m *MemoryResult) *reading {
			return &reading{fmt.Sprintf("%s, %d objects", m.Size.Name, m.Size.Objects), fmt.Sprintf("%d run(s)", len(m.Purge.Runs)), m.Purge.Of("rss").Percentile(100)}
		})},
	{what: "explain with no name shares one discovery: its discovery requests beyond one explain's", op: "<=", limit: 0,
		read: each(func(r *Result) []*ManyResult { return opt(r.Many) }, func(m *ManyResult) *reading {
			d := func(s *Series) float64 {
				v := s.First().ByVerb
				return v["GET (non-resource)"] + v["GET /api"] + v["GET /apis"]
			}
			return &reading{fmt.Sprintf("%d namespaces", m.Namespaces), fmt.Sprintf("%s vs %s; %s s per namespace against %s s for one explain alone",
				g(d(&m.All)), g(d(&m.One)), g(med(&m.All, "s")/float64(m.Namespaces)), g(med(&m.One, "s"))), d(&m.All) - d(&m.One)}
		})},
	{what: "purge of namespaces an uninstalled operator left stuck, the separate runs' time over one run's", unit: "x",
		read: each(func(r *Result) []*BatchResult { return opt(r.PurgeMany) }, func(m *BatchResult) *reading {
			if l := m.Loop(); l != nil {
				return vs(fmt.Sprintf("%d namespaces", m.Namespaces), l, &m.One, "s", fmt.Sprintf("; discoveries %s vs %s, requests %s vs %s",
					g(med(l, "discoveries")), g(med(&m.One, "discoveries")), g(med(l, "requests")), g(med(&m.One, "requests"))))
			}
			return nil
		})},
	{what: "purge -l of the namespaces an uninstalled operator left stuck", op: "<", limit: 60, unit: " s",
		read: each(p1ks, func(p *BatchResult) *reading {
			return &reading{fmt.Sprintf("%d namespaces, %d types", p.Namespaces, p.Types), fmt.Sprintf("median of %d; %s requests; its CPU %s s, etcd's and kube-apiserver's %s s",
				len(p.One.Runs), g(med(&p.One, "requests")), g(med(&p.One, "cpu")), g(med(&p.One, "server"))), med(&p.One, "s")}
		})},
	{what: "explain with no name over the terminating namespaces", op: "<", limit: 5, unit: " s",
		read: each(p1ks, func(p *BatchResult) *reading {
			return &reading{fmt.Sprintf("%d namespaces", p.Namespaces), fmt.Sprintf("median of %d; %s requests", len(p.Explain.Runs), g(med(&p.Explain, "requests"))), med(&p.Explain, "s")}
		})},
	{what: "peak RSS of explain with no name and purge -l, the highest of the runs", op: "<", limit: 200, unit: " MiB",
		read: each(p1ks, func(p *BatchResult) *reading {
			e, u := p.Explain.Of("rss").Percentile(100), p.One.Of("rss").Percentile(100)
			return &reading{fmt.Sprintf("%d namespaces", p.Namespaces), fmt.Sprintf("explain %.1f MiB, purge -l %.1f MiB", e, u), max(e, u)}
		})},
	{what: "the per-namespace loop's time over purge -l's", unit: "x",
		read: each(p1ks, func(p *BatchResult) *reading {
			if l := p.Loop(); l != nil {
				return vs(fmt.Sprintf("%d namespaces", p.Namespaces), l, &p.One, "s", "")
			}
			return nil
		})},
	{what: "purge -l, the -purge-compare build's time over this tree's", unit: "x",
		read: each(p1ks, func(p *BatchResult) *reading {
			if len(p.Compare.Runs) == 0 {
				return nil
			}
			return vs(fmt.Sprintf("%d namespaces", p.Namespaces), &p.Compare, &p.One, "s", "")
		})},
	{what: "the watch's peak RSS (VmHWM at the end)", op: "<", limit: 100, unit: " MiB",
		read: each(watches, func(w *WatchResult) *reading { return &reading{watchScope(w), "", float64(w.HWM) / 1024} })},
	{what: "the watch's requests per resync grow with the stuck namespaces: its own requests per resync and stuck namespace", op: ">", limit: 0,
		read: each(watches, func(w *WatchResult) *reading {
			first, last := w.Steps[0], w.Last()
			slope := w.Own(first) / float64(first.Stuck)
			if last.Stuck > first.Stuck {
				slope = (w.Own(last) - w.Own(first)) / float64(last.Stuck-first.Stuck)
			}
			var own []string
			for _, st := range w.Steps {
				own = append(own, fmt.Sprintf("%s with %d stuck", g(w.Own(st)), st.Stuck))
			}
			return &reading{watchScope(w), fmt.Sprintf("%s (beyond the API server's own %s)", strings.Join(own, ", "), g(w.IdleTotal())), slope}
		})},
	{what: "the watch's GETs of single ConfigMaps or Secrets per resync (nothing per object)", op: "<=", limit: 0,
		read: each(watches, func(w *WatchResult) *reading {
			n := 0.0
			for _, st := range w.Steps {
				n += st.Per(st.Requests.ByVerb["GET configmaps"] + st.Requests.ByVerb["GET secrets"])
			}
			return &reading{watchScope(w), "", n}
		})},
	{what: "the watch's most requests of one type per resync, over the cluster's namespaces (nothing near one per namespace)", op: "<", limit: 0.5,
		read: each(watches, func(w *WatchResult) *reading {
			rd := reading{watchScope(w), "", 0}
			for _, st := range w.Steps {
				for k, v := range st.Requests.ByVerb {
					if per := st.Per(v); per/float64(w.Namespaces) > rd.value {
						rd.value, rd.detail = per/float64(w.Namespaces), fmt.Sprintf("%s ×%s with %d stuck", k, g(per), st.Stuck)
					}
				}
			}
			return &rd
		})},
}

func watchScope(w *WatchResult) string {
	return fmt.Sprintf("%d namespaces, %d objects, up to %d stuck, %d types", w.Namespaces, w.Namespaces*w.ObjectsPer, w.Last().Stuck, w.Types)
}

// verdict is one line of the Targets section.
type verdict struct{ Mark, Text, Why string }

func (t target) met(v float64) bool {
	switch t.op {
	case "<=":
		return v <= t.limit
	case "<":
		return v < t.limit
	case ">=":
		return v >= t.limit
	}
	return v > t.limit
}

func verdicts(r *Result) (out []verdict) {
	for _, t := range targets {
		for _, rd := range t.read(r) {
			v := verdict{"**info**", fmt.Sprintf("%s (%s): %s%s", t.what, rd.scope, g(rd.value), t.unit), ""}
			if t.op != "" {
				v.Mark, v.Text = "**met**", v.Text+fmt.Sprintf(", target %s %s%s", t.op, g(t.limit), t.unit)
				if !t.met(rd.value) {
					v.Mark, v.Why = "**MISSED**", t.why
				}
			}
			if rd.detail != "" {
				v.Text += "; " + rd.detail
			}
			out = append(out, v)
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
