// Package prometheus runs a real Prometheus server for tests: it scrapes
// given targets every second, evaluates given rule files every second, and
// answers through its HTTP API, which small typed helpers query (alerts
// firing by name and labels, an instant query's vector). It also installs
// the pinned Prometheus and promtool (hack/install-prometheus.sh), fetches
// the Prometheus Operator's CRDs from the Go module cache, and turns a
// PrometheusRule manifest into a plain rules file. Never linked into the
// plugin.
package prometheus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

// DefaultJob is the scrape job's name by default: the Service's name, as
// the ServiceMonitor in deploy/monitoring makes it.
const DefaultJob = "ns-doctor-watch-metrics"

// Interval is both the scrape and the rule evaluation interval.
const Interval = time.Second

// Options says what the server scrapes and evaluates.
type Options struct {
	// Binary is the prometheus server (Tools.Prometheus).
	Binary string
	// Targets are host:port addresses whose /metrics are scraped.
	Targets []string
	// Job is the scrape job's name; empty is DefaultJob.
	Job string
	// TargetLabels are added to every scraped series, as Kubernetes
	// service discovery adds namespace, pod and service.
	TargetLabels map[string]string
	// HonorLabels keeps a scraped series' own labels where they collide
	// with TargetLabels (the ServiceMonitor's honorLabels).
	HonorLabels bool
	// RuleFiles are Prometheus rules files (see WriteRuleFile).
	RuleFiles []string
}

// Server is a running Prometheus. Stop it when done.
type Server struct {
	// URL is its HTTP API's base, http://127.0.0.1:<port>.
	URL string
	// Dir holds its config, storage and log (prometheus.log).
	Dir string

	cmd    *exec.Cmd
	cancel context.CancelFunc // stops it: SIGTERM, then SIGKILL after 10 s
	done   chan struct{}
	err    error
	client *http.Client
}

// Start writes the config, starts Prometheus on a free loopback port and
// returns once /-/ready answers 200. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Binary == "" {
		return nil, errors.New("prometheus: Options.Binary is empty (see Install)")
	}
	dir, err := os.MkdirTemp("", "ns-doctor-prometheus-")
	if err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "prometheus.yml")
	data, err := configYAML(opts)
	if err == nil {
		err = os.WriteFile(config, data, 0o644)
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("writing the Prometheus config: %w", err)
	}
	// A free port can be taken between asking for it and binding it:
	// Prometheus then exits at once, and another port is tried.
	for attempt := 1; ; attempt++ {
		s, err := start(ctx, opts.Binary, dir, config)
		if err == nil {
			return s, nil
		}
		if attempt == 3 || !errors.Is(err, errAddrInUse) {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
}

var errAddrInUse = errors.New("address already in use")

func start(ctx context.Context, binary, dir, config string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	procCtx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(procCtx, binary,
		"--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=info",
	)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	s := &Server{URL: "http://" + addr, Dir: dir, cmd: cmd, cancel: cancel, done: make(chan struct{}), client: &http.Client{Timeout: 10 * time.Second}}
	go func() {
		s.err = cmd.Wait()
		_ = logFile.Close()
		close(s.done)
	}()
	if err := s.waitReady(ctx, 2*time.Minute); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// configYAML is the server's config: one job scraping the targets every
// second and the rules evaluated every second.
func configYAML(opts Options) ([]byte, error) {
	job := opts.Job
	if job == "" {
		job = DefaultJob
	}
	static := map[string]any{"targets": opts.Targets}
	if len(opts.TargetLabels) > 0 {
		static["labels"] = opts.TargetLabels
	}
	interval := Interval.String()
	config := map[string]any{
		"global": map[string]any{
			"scrape_interval":     interval,
			"scrape_timeout":      interval,
			"evaluation_interval": interval,
		},
	}
	if len(opts.RuleFiles) > 0 {
		config["rule_files"] = opts.RuleFiles
	}
	if len(opts.Targets) > 0 {
		config["scrape_configs"] = []any{map[string]any{
			"job_name":       job,
			"honor_labels":   opts.HonorLabels,
			"metrics_path":   "/metrics",
			"static_configs": []any{static},
		}}
	}
	return yaml.Marshal(config)
}

func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		select {
		case <-s.done:
			err := fmt.Errorf("prometheus exited (%v): %s", s.err, s.LogTail())
			if strings.Contains(s.LogTail(), "address already in use") {
				err = fmt.Errorf("%w: %w", errAddrInUse, err)
			}
			return err
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", nil)
		if err != nil {
			return err
		}
		if resp, err := s.client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("prometheus not ready after %s: %s", timeout, s.LogTail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// LogTail is the end of the server's log, for failure messages.
func (s *Server) LogTail() string {
	data, _ := os.ReadFile(filepath.Join(s.Dir, "prometheus.log"))
	if len(data) > 3000 {
		data = data[len(data)-3000:]
	}
	return string(bytes.TrimSpace(data))
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s) and removes its
// folder, unless $NSDOCTOR_KEEP_PROMETHEUS is set. Safe to call twice.
func (s *Server) Stop() {
	s.stop()
	if os.Getenv("NSDOCTOR_KEEP_PROMETHEUS") == "" {
		_ = os.RemoveAll(s.Dir)
	}
}

func (s *Server) stop() {
	s.cancel()
	<-s.done
	s.client.CloseIdleConnections()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
