package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/ns-doctor/ns-doctor/test/support/apimetrics"
)

// sample is one measured command run.
type sample struct {
	Seconds  float64
	Requests float64            // all API requests it caused
	Lists    float64            // of which LIST
	ByVerb   map[string]float64 // "VERB resource" -> count, for the raw table
	MaxRSS   int64              // KiB, from the child's rusage; 0 when not read
	// CPU is the child's user + system time, s: on a machine of few cores
	// the client's CPU is taken from the API server it waits on.
	CPU float64
	// ServerCPU is what etcd and kube-apiserver spent (user + system, s)
	// while the command ran: the work it caused on the server's side.
	ServerCPU float64
}

// meter reads kube-apiserver's own request counter, so every request a
// command makes is counted whatever client it uses. The namespace
// controller is stopped while measuring: only the command talks.
type meter struct {
	client kubernetes.Interface
	env    []string
	tmp    string
	// servers are the PIDs of etcd and kube-apiserver.
	servers func() []int
}

// withPath is m with dir first on PATH, where kubectl finds its plugins.
func (m *meter) withPath(dir string) *meter {
	c := *m
	// The last PATH wins (os/exec keeps the last of duplicate keys).
	c.env = append(slices.Clone(m.env), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return &c
}

// run runs argv (no shell when it is a single command, so rusage is the
// command's own) and measures it. okCodes are accepted exit codes besides
// 0 (explain exits 3 on a stuck namespace).
func (m *meter) run(ctx context.Context, argv []string, okCodes ...int) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	before, err := m.counts(ctx)
	if err != nil {
		return sample{}, err
	}
	serverBefore := m.serverCPU()
	// Through the spawn helper (see spawn.go) for a true ru_maxrss.
	self, err := os.Executable()
	if err != nil {
		return sample{}, err
	}
	res := filepath.Join(m.tmp, "spawn.out")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, self, argv...)
	cmd.Env = append(m.env, spawnEnv+"="+res)
	cmd.Stderr = &stderr // stdout goes to /dev/null: printing is not measured
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		for _, c := range okCodes {
			if ee.ExitCode() == c {
				err = nil
			}
		}
	}
	if err != nil {
		return sample{}, fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, tail(stderr.String()))
	}
	serverCPU := m.serverCPU() - serverBefore
	var secs, cpu float64
	var rss int64
	raw, err := os.ReadFile(res)
	if err != nil {
		return sample{}, err
	}
	if _, err := fmt.Sscan(string(raw), &secs, &rss, &cpu); err != nil {
		return sample{}, fmt.Errorf("reading %s: %w", res, err)
	}
	after, err := m.counts(ctx)
	if err != nil {
		return sample{}, err
	}
	s := requestDelta(before, after)
	s.Seconds, s.MaxRSS, s.CPU, s.ServerCPU = secs, rss, cpu, serverCPU
	return s, nil
}

// runAll runs the commands one after another, as exec does, and measures
// them as one: wall time from the first's start to the last's exit, and
// every request they caused. Their memory is not read: started straight
// from the bench, rusage would charge them its peak (see spawn.go).
func (m *meter) runAll(ctx context.Context, argvs [][]string) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	before, err := m.counts(ctx)
	if err != nil {
		return sample{}, err
	}
	t0 := time.Now()
	for _, argv := range argvs {
		if err := m.exec(ctx, nil, argv...); err != nil {
			return sample{}, err
		}
	}
	secs := since(t0)
	after, err := m.counts(ctx)
	if err != nil {
		return sample{}, err
	}
	s := requestDelta(before, after)
	s.Seconds = secs
	return s, nil
}

// requestDelta is what was counted between two reads of the request
// counter, less the "before" read of /metrics itself, which "after"
// counts.
func requestDelta(before, after map[string]float64) sample {
	s := sample{ByVerb: map[string]float64{}}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			s.ByVerb[k] += d
			s.Requests += d
			if strings.HasPrefix(k, "LIST ") {
				s.Lists += d
			}
		}
	}
	if s.ByVerb["GET /metrics"] > 0 {
		s.ByVerb["GET /metrics"]--
		s.Requests--
		if s.ByVerb["GET /metrics"] == 0 {
			delete(s.ByVerb, "GET /metrics")
		}
	}
	return s
}

// discoveries counts the discovery rounds in s: each starts with GET /apis.
func discoveries(s sample) float64 { return s.ByVerb["GET /apis"] }

// exec runs argv with the meter's environment but measures nothing: no
// /metrics reads, so nothing but the command itself lands in a timed
// window around it. stdout is dropped; stderr goes to stderr when not
// nil, and is in the error otherwise.
func (m *meter) exec(ctx context.Context, stderr io.Writer, argv ...string) error {
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = m.env
	cmd.Stderr = &buf
	if stderr != nil {
		cmd.Stderr = stderr
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, tail(buf.String()))
	}
	return nil
}

// serverCPU is the user + system time etcd and kube-apiserver have spent
// so far, s, from /proc (0 where it cannot be read).
func (m *meter) serverCPU() float64 {
	if m.servers == nil {
		return 0
	}
	total := 0.0
	for _, pid := range m.servers() {
		total += processCPU(pid)
	}
	return total
}

// processCPU reads utime + stime of a process from /proc/PID/stat, in
// seconds (clock ticks of 1/100 s, as on every Linux machine here).
func processCPU(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing one.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	var utime, stime float64
	_, _ = fmt.Sscan(fields[11], &utime)
	_, _ = fmt.Sscan(fields[12], &stime)
	return (utime + stime) / 100
}

// counts reads kube-apiserver's request counter (test/support/apimetrics).
func (m *meter) counts(ctx context.Context) (map[string]float64, error) {
	return apimetrics.RequestCounts(ctx, m.client)
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// stats is the median and spread (min..max) of xs.
func stats(xs []float64) (med, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// breakdown prints a ByVerb map compactly, biggest first.
func breakdown(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s ×%.0f", k, m[k])
	}
	return b.String()
}
