// Command bench is `make bench`: it measures ns-doctor on the local control
// plane (real etcd + kube-apiserver + kube-controller-manager) into one
// Result, written as JSON (-json), and renders docs/benchmarks.md from it
// through benchmarks.md.tmpl; -render re-renders a JSON file alone.
//
// It is a benchmark, not a test: nothing fails on a slow machine; each
// target (report.go) is written down as met or MISSED with its numbers.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
)

// phases, in the order they run: each adds its sections to the result.
// Phases of one plane share a control plane (the namespace controller
// off), started for the first of them. The explain phases share the stuck
// fixtures (the guard's namespace stays Active, and comes last); the
// namespace controller of the purge plane would work on them too; the
// phases at scale each have their own, or a thousand namespaces of one
// would be in the other's cluster.
var phases = []struct {
	name, plane string
	run         func(*bench, context.Context) error
}{
	{"explain", "stuck", (*bench).explain},
	{"explain-link", "stuck", (*bench).explainLink},
	{"guard", "stuck", (*bench).guard},
	{"purge", "purge", (*bench).purge},
	{"purge-memory", "purge", (*bench).purgeMemory},
	{"many", "purge", (*bench).many},
	{"purge-many", "purge", (*bench).purgeMany},
	{"purge-1000", "purge-1000", (*bench).purge1000},
	{"watch", "watch", (*bench).watch},
}

type options struct {
	phases                     map[string]bool
	sizes                      []size
	scale                      float64
	runs                       int
	out, json, render, compare string
	linkDelay                  time.Duration
}

func parseFlags(args []string) (o options, err error) {
	var names []string
	for _, p := range phases {
		names = append(names, p.name)
	}
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	phaseList := fs.String("phases", strings.Join(names, ","), "phases to run, of "+strings.Join(names, ","))
	sizeList := fs.String("sizes", "small,medium,large", "explain's fixtures: small (40 types, 200 objects), medium (150, 10k), large (150, 100k), or a number of objects over 150 types; explain-link, guard and purge take the second (or only), purge-memory the last, purge-1000 the last one's types")
	fs.Float64Var(&o.scale, "scale", 1, "namespaces of many (50), purge-many (20), purge-1000 (1000) and watch (1000, 20 then 40 stuck), times this")
	fs.IntVar(&o.runs, "runs", 0, "runs per contender in every phase (0: explain 5, 3 at 100k objects; guard 30 DELETEs each way, 6 content deletions; purge 6; many and purge-many 3; purge-1000 1)")
	fs.StringVar(&o.out, "out", "docs/benchmarks.md", "the markdown to write; the results go beside it, as JSON")
	fs.StringVar(&o.render, "render", "", "render -out from this JSON file of an earlier run, measuring nothing")
	fs.StringVar(&o.compare, "purge-compare", "", "purge, purge-1000: a folder with another build of kubectl-ns_doctor, measured in the same runs")
	fs.DurationVar(&o.linkDelay, "link-delay", 25*time.Millisecond, "one-way delay of the slow link (0: loopback only, no explain-link)")
	_ = fs.Parse(args)
	o.json, o.phases = strings.TrimSuffix(o.out, filepath.Ext(o.out))+".json", map[string]bool{}
	for p := range strings.SplitSeq(*phaseList, ",") {
		if o.phases[p] = true; !slices.Contains(names, p) {
			return o, fmt.Errorf("unknown phase %q (phases: %s)", p, strings.Join(names, ","))
		}
	}
	o.phases["explain-link"] = o.phases["explain-link"] && o.linkDelay > 0 // no link, nothing to compare
	for name := range strings.SplitSeq(*sizeList, ",") {
		s, err := sizeOf(name)
		if err != nil {
			return o, err
		}
		o.sizes = append(o.sizes, s)
	}
	if o.compare != "" {
		o.compare = filepath.Join(o.compare, "kubectl-ns_doctor")
		if _, err := os.Stat(o.compare); err != nil {
			return o, fmt.Errorf("-purge-compare: %w", err)
		}
	}
	if o.scale <= 0 || o.runs < 0 || o.linkDelay < 0 {
		return o, fmt.Errorf("-scale must be positive, -runs and -link-delay not negative")
	}
	return o, nil
}

func main() {
	if out := os.Getenv(spawnEnv); out != "" {
		spawn(out, os.Args[1:])
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if o.render != "" {
		err = renderFile(o.render, o.out)
	} else {
		err = run(ctx, o)
	}
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// bench carries what every phase needs.
type bench struct {
	o                  options
	res                *Result
	tmp, plugin, floor string
	cp                 *controlplane.ControlPlane
	fx                 *fixtures
	meter              *meter   // commands on loopback
	paths              []*meter // the ways commands reach the API server: loopback, and the slow link (-link-delay)
	link               *link
	built              map[string]bool // the stuck fixtures this control plane holds
}

func run(ctx context.Context, o options) (err error) {
	started := time.Now()
	tmp, err := os.MkdirTemp("", "ns-doctor-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	b := &bench{o: o, tmp: tmp, res: &Result{Run: machine()}, plugin: filepath.Join(tmp, "kubectl-ns_doctor"), floor: filepath.Join(tmp, "floor")}
	// A plain build (no -ldflags -s -w): what `go install` gives users.
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", tmp+"/", "./cmd/kubectl-ns_doctor", "./hack/bench/floor").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	defer b.stopControlPlane()
	// Saved after every phase: an interrupted run still leaves what it measured.
	defer func() { err = cmp.Or(err, b.save()) }()
	plane := ""
	for _, p := range phases {
		if !o.phases[p.name] {
			continue
		} else if p.plane != plane {
			b.stopControlPlane()
			if err := b.startControlPlane(ctx); err != nil {
				return err
			}
			plane = p.plane
		}
		logf("phase %s", p.name)
		if err := p.run(b, ctx); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		_ = b.save()
	}
	b.res.Run.Minutes = time.Since(started).Minutes()
	return nil
}

func (b *bench) save() error {
	data, err := json.MarshalIndent(b.res, "", " ")
	if err == nil {
		err = os.WriteFile(b.o.json, append(data, '\n'), 0o644)
	}
	return cmp.Or(err, writeMarkdown(b.res, b.o.out))
}

func (b *bench) startControlPlane(ctx context.Context) (err error) {
	logf("starting etcd and kube-apiserver (namespace controller off)")
	if b.cp, err = controlplane.Start(ctx, controlplane.Options{WithoutControllerManager: true}); err == nil {
		b.fx, err = newFixtures(b.cp.Config)
	}
	if err != nil {
		return err
	}
	add := func(name, kubeconfig string) *meter {
		b.paths = append(b.paths, &meter{name: name, client: b.fx.Kube, tmp: b.tmp, servers: b.cp.ServerPIDs, env: append(os.Environ(), "PATH="+b.tmp+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+kubeconfig, "KUBECACHEDIR="+filepath.Join(b.tmp, "kube-cache"))}) // kubectl's discovery cache, not ~/.kube's
		return b.paths[len(b.paths)-1]
	}
	b.built, b.paths = map[string]bool{}, nil
	b.meter = add("loopback", b.cp.Kubeconfig)
	if kc := filepath.Join(b.tmp, "kubeconfig-link"); b.o.linkDelay > 0 {
		b.link, err = linkTo(b.cp.Kubeconfig, kc, b.o.linkDelay)
		add(fmt.Sprintf("link (%v RTT)", 2*b.o.linkDelay), kc)
	}
	return err
}

func (b *bench) stopControlPlane() {
	if b.link != nil {
		_ = b.link.Close()
		b.link = nil
	}
	if b.cp != nil {
		b.cp.Stop()
		b.cp = nil
	}
}

// section adds an empty section of the result for a phase to fill: one
// that fails half-way is kept with what it measured.
func (b *bench) section(phase, scope string) *Section {
	s := &Section{Phase: phase, Scope: scope}
	b.res.Sections = append(b.res.Sections, s)
	return s
}

// via is how a series through m is keyed and named: the link's with a
// "link-" key and its name.
func (b *bench) via(sec *Section, m *meter) (key, on string) {
	if m == b.meter {
		return "", ""
	}
	sec.Delay = b.o.linkDelay
	return "link-", " [" + m.name + "]"
}

// runs is -runs, or def; scaled is n namespaces times -scale; size(i) is
// the i-th of -sizes, the last past the end.
func (b *bench) runs(def int) int { return cmp.Or(b.o.runs, def) }
func (b *bench) scaled(n int) int { return max(1, int(math.Round(float64(n)*b.o.scale))) }
func (b *bench) size(i int) size  { return b.o.sizes[min(i, len(b.o.sizes)-1)] }

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// link is a TCP proxy that holds every chunk a fixed delay in each
// direction, as a slow network would: a round trip through it costs twice
// the delay, but throughput is not limited, since chunks are queued with
// their arrival time and written out once their delay is over while later
// ones keep arriving. TLS passes through untouched.
type link struct {
	net.Listener
	target string
	delay  time.Duration
}

// linkTo starts a link to the server of the kubeconfig at src and writes a
// copy pointing at it to dst. The API server's serving certificate names
// 127.0.0.1 (test/support/controlplane/certs.go), where the link listens,
// so the same CA verifies it: no tls-server-name, no insecure-skip-tls-verify.
func linkTo(src, dst string, delay time.Duration) (*link, error) {
	kc, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &link{Listener: ln, delay: delay}
	for _, c := range kc.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil || l.target != "" && l.target != u.Host {
			return l, fmt.Errorf("%s: one cluster wanted (%v)", src, err)
		}
		l.target, u.Host = u.Host, ln.Addr().String()
		c.Server = u.String()
	}
	go l.serve()
	return l, clientcmd.WriteToFile(*kc, dst)
}

// serve forwards each connection, both ways, until the link is closed.
func (l *link) serve() {
	for client, err := l.Accept(); err == nil; client, err = l.Accept() {
		go func() {
			if server, err := net.Dial("tcp", l.target); err == nil {
				var wg sync.WaitGroup
				wg.Go(func() { l.pipe(server, client) })
				l.pipe(client, server)
				wg.Wait()
				_ = server.Close()
			}
			_ = client.Close()
		}()
	}
}

// pipe copies src to dst, each chunk delay after it was read. A reader and
// a writer joined by a queue, so a chunk waiting for its time never holds
// up the reads behind it; at most 4096 chunks of 64 KiB wait, beyond which
// TCP's own flow control slows the sender, as a full window would. At
// src's end dst is half-closed once all before is delivered; on a write
// error both ends are cut.
func (l *link) pipe(dst, src net.Conn) {
	type chunk struct {
		data []byte
		at   time.Time // when it was read
	}
	queue := make(chan chunk, 4096)
	go func() {
		defer close(queue)
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 { // a copy of exactly what arrived
				queue <- chunk{append([]byte(nil), buf[:n]...), time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	var err error
	for c := range queue {
		if err == nil { // else drained, so the reader is never stuck
			time.Sleep(time.Until(c.at.Add(l.delay)))
			if _, err = dst.Write(c.data); err != nil {
				_, _ = src.Close(), dst.Close()
			}
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok && err == nil {
		_ = tc.CloseWrite()
	}
}
