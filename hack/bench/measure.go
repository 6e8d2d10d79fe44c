package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	"k8s.io/client-go/kubernetes"

	"github.com/ns-doctor/ns-doctor/test/support/apimetrics"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// contender is one measured command of a phase.
type contender struct {
	*Series
	max     int                                        // runs at most (0: every run)
	fresh   func(ctx context.Context, id string) error // builds its own fixture, named id, before each run (nil: none)
	measure func(ctx context.Context, id string) (Sample, error)
}

const settle = time.Second // the pause before each timed run: the API server's GC and such

// race runs each contender once per run, in order's order, fixture then pause.
func race(ctx context.Context, name string, runs int, pause time.Duration, cs ...contender) error {
	for r := range runs {
		for _, i := range order(r, len(cs)) {
			c, id := cs[i], fmt.Sprintf("%s-%d-%d", name, r, i)
			if c.max > 0 && r >= c.max {
				continue
			} else if c.fresh != nil {
				if err := c.fresh(ctx, id); err != nil {
					return fmt.Errorf("building %s: %w", id, err)
				}
			}
			time.Sleep(pause)
			x, err := c.measure(ctx, id)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", id, c.Name, err)
			}
			c.add(x)
			logf("[%s] %s: %.2fs (from the delete %.2fs), %.0f requests, %d KiB", id, c.Name, x.Seconds, x.FromDelete, x.Requests, x.MaxRSS)
		}
	}
	return nil
}

// order is n contenders' in run r: over 2n runs each takes each place, as
// whoever follows a heavy one finds the API server busier (GC, watch cache).
func order(r, n int) []int {
	out := make([]int, n)
	for k := range out {
		if out[k] = (r + k) % n; (r/n)%2 == 1 {
			out[k] = (r + n - k) % n
		}
	}
	return out
}

// meter reads kube-apiserver's request counter: every request, any client.
type meter struct {
	key, on string // its series' key prefix and name suffix: "link-", " [link (50ms RTT)]"
	client  kubernetes.Interface
	env     []string
	servers func() []int // etcd's and kube-apiserver's PIDs
}

// count measures fn: its time, its requests, etcd's and kube-apiserver's CPU.
func (m *meter) count(ctx context.Context, fn func() error) (Sample, error) {
	before, err := apimetrics.RequestCounts(ctx, m.client)
	if err != nil {
		return Sample{}, err
	}
	server0, t0 := m.serverCPU(), time.Now()
	if err := fn(); err != nil {
		return Sample{}, err
	}
	took := time.Since(t0).Seconds()
	after, err := apimetrics.RequestCounts(ctx, m.client)
	s := Sample{Seconds: took, ByVerb: apimetrics.Delta(before, after), ServerCPU: m.serverCPU() - server0}
	s.Requests, s.Discoveries = apimetrics.Total(s.ByVerb), s.ByVerb["GET /apis"]
	for k, v := range s.ByVerb {
		if strings.HasPrefix(k, "LIST ") {
			s.Lists += v
		}
	}
	return s, err
}

// run runs the commands one after another, as a script would, measured as one.
func (m *meter) run(ctx context.Context, ok int, argvs ...[]string) (Sample, error) {
	s, _, err := m.runMarked(ctx, ok, "", argvs...)
	return s, err
}

// runMarked is run, also timing each command's first stderr line that starts
// with mark (none if empty) from that command's start (the last one's in
// Marked); it returns their stderr, in order.
func (m *meter) runMarked(ctx context.Context, ok int, mark string, argvs ...[]string) (Sample, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	var own Sample
	var stderr strings.Builder
	s, err := m.count(ctx, func() error {
		for _, argv := range argvs {
			one, text, err := m.spawn(ctx, argv, ok, mark)
			stderr.WriteString(text)
			if err != nil {
				return err
			}
			own.Seconds, own.CPU, own.MaxRSS, own.Marked, own.Output = own.Seconds+one.Seconds, own.CPU+one.CPU, max(own.MaxRSS, one.MaxRSS), one.Marked, own.Output+one.Output
		}
		return nil
	})
	s.Seconds, s.CPU, s.MaxRSS, s.Marked, s.Output = own.Seconds, own.CPU, own.MaxRSS, own.Marked, own.Output
	return s, stderr.String(), err
}

const (
	spawnEnv = "NSDOCTOR_BENCH_SPAWN" // switches the bench binary into spawn
	markEnv  = "NSDOCTOR_BENCH_MARK"  // the prefix of the stderr line spawn times
)

// spawn runs argv through the bench's spawn, which times it and, when mark is
// not empty, its first stderr line starting with mark; its stderr.
func (m *meter) spawn(ctx context.Context, argv []string, ok int, mark string) (s Sample, _ string, err error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "/proc/self/exe", argv...)
	cmd.Env, cmd.Stderr = append(m.env, spawnEnv+"=1", markEnv+"="+mark), &stderr
	out, err := cmd.Output()
	if err != nil && (ok == 0 || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != ok) {
		return s, stderr.String(), fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, plugintest.Tail(stderr.String(), 40))
	}
	marked := -1.0
	if _, err = fmt.Sscan(string(out), &s.Seconds, &s.MaxRSS, &s.CPU, &marked, &s.Output); err == nil && mark != "" {
		if marked < 0 {
			return s, stderr.String(), fmt.Errorf("%s: no stderr line starting with %q; its stderr:\n%s", strings.Join(argv, " "), mark, plugintest.Tail(stderr.String(), 40))
		}
		s.Marked = marked
	}
	return s, stderr.String(), err
}

// spawn runs a command, output counted, and prints its time, ru_maxrss
// (KiB), CPU, the time from its start to its first stderr line starting with
// $NSDOCTOR_BENCH_MARK (-1: none, or no mark), and its stdout's bytes. Go starts children with vfork,
// and Linux charges the parent's peak RSS to the child's: from the bench,
// which holds 100k objects.
func spawn(argv []string) {
	cmd := exec.Command(argv[0], argv[1:]...)
	out := &counter{}
	cmd.Stdout = out
	mark := &marker{prefix: []byte(os.Getenv(markEnv)), out: os.Stderr, at: -1}
	cmd.Stderr = os.Stderr
	if len(mark.prefix) > 0 { // else the child writes to stderr itself
		cmd.Stderr = mark
	}
	mark.start = time.Now()
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		fmt.Fprintln(os.Stderr, "spawn:", err)
		os.Exit(127)
	}
	ps := cmd.ProcessState
	fmt.Printf("%f %d %f %f %d\n", time.Since(mark.start).Seconds(), ps.SysUsage().(*syscall.Rusage).Maxrss, (ps.UserTime() + ps.SystemTime()).Seconds(), mark.at, out.n)
	os.Exit(ps.ExitCode())
}

// counter counts what is written to it.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// marker passes a child's stderr on, noting when the first line starting
// with prefix ended (seconds since start): the moment it was written, as the
// child writes its stderr unbuffered.
type marker struct {
	prefix, line []byte
	out          io.Writer
	start        time.Time
	at           float64
}

func (m *marker) Write(p []byte) (int, error) {
	for rest := p; m.at < 0 && len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			m.line = append(m.line, rest...)
			break
		}
		if m.line = append(m.line, rest[:i]...); bytes.HasPrefix(m.line, m.prefix) {
			m.at = time.Since(m.start).Seconds()
		}
		m.line, rest = m.line[:0], rest[i+1:]
	}
	return m.out.Write(p)
}

func (m *meter) serverCPU() (total float64) {
	for _, pid := range m.servers() {
		cpu, _ := procStat(pid)
		total += cpu
	}
	return total
}

// procStat is a process's CPU seconds so far and VmHWM (KiB), or zeros.
func procStat(pid int) (cpu float64, hwm int64) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, 0
	}
	if st, err := p.Stat(); err == nil {
		cpu = st.CPUTime()
	}
	if st, err := p.NewStatus(); err == nil {
		hwm = int64(st.VmHWM / 1024)
	}
	return cpu, hwm
}

// fams are the metric families of a /metrics text, by name.
type fams = map[string]*dto.MetricFamily

func parse(r io.Reader) (fams, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// series are f's with each name=value of want.
func series(f *dto.MetricFamily, want ...string) []*dto.Metric {
	return slices.DeleteFunc(slices.Clone(f.GetMetric()), func(m *dto.Metric) bool {
		return slices.ContainsFunc(want, func(w string) bool {
			return !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName()+"="+l.GetValue() == w })
		})
	})
}

// sum adds up the counters and gauges of f's series with want.
func sum(f *dto.MetricFamily, want ...string) (t float64) {
	for _, m := range series(f, want...) {
		t += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return t
}

func histogram(f *dto.MetricFamily, want ...string) (h Histogram) {
	for _, m := range series(f, want...) {
		for i, b := range m.GetHistogram().GetBucket() {
			if i == len(h.Bounds) && !math.IsInf(b.GetUpperBound(), 1) {
				h.Bounds, h.Counts = append(h.Bounds, b.GetUpperBound()), append(h.Counts, 0)
			}
			if i < len(h.Counts) {
				h.Counts[i] += float64(b.GetCumulativeCount())
			}
		}
		h.Count, h.Sum = h.Count+float64(m.GetHistogram().GetSampleCount()), h.Sum+m.GetHistogram().GetSampleSum()
	}
	return h
}

// linkTo starts a TCP proxy to target, holding every chunk delay each way.
func linkTo(target string, delay time.Duration) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// Each connection, both ways, until the link is closed.
	go func() {
		for client, err := ln.Accept(); err == nil; client, err = ln.Accept() {
			go func() {
				if server, err := net.Dial("tcp", target); err == nil {
					var wg sync.WaitGroup
					wg.Go(func() { pipe(server, client, delay) })
					pipe(client, server, delay)
					wg.Wait()
					_ = server.Close()
				}
				_ = client.Close()
			}()
		}
	}()
	return ln, nil
}

// pipe copies src to dst, each chunk delay after it was read: a waiting chunk
// never holds up the reads behind it, so throughput is not limited.
func pipe(dst, src net.Conn, delay time.Duration) {
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
			time.Sleep(time.Until(c.at.Add(delay)))
			if _, err = dst.Write(c.data); err != nil {
				_, _ = src.Close(), dst.Close()
			}
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok && err == nil {
		_ = tc.CloseWrite()
	}
}
