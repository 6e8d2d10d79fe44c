// Package controlplane runs a real cluster on loopback for tests, the demo
// and `make cluster`: etcd and kube-apiserver, and by default what a real
// cluster runs beside them (the full bed): kube-controller-manager with its
// default controllers as kubeadm runs it, kube-scheduler, and nodes whose
// kubelets are kwok processes, one of them lost. The real namespace
// controller is the oracle ns-doctor is checked against.
// docs/development.md ("The test bed") says what runs, what is simulated
// and what a test may assume.
package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options says what to start.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager. Empty
	// means $NSDOCTOR_CONTROLPLANE_BIN, else the cached build (see Binaries).
	BinDir string
	// Dir is where state, certificates and logs go. Empty means a new temp
	// dir, removed by Stop.
	Dir string
	// WithoutControllerManager starts no controller, scheduler or node: a
	// cluster whose terminating namespaces nobody works on.
	WithoutControllerManager bool
	// Minimal is the bed of a package whose tests craft inert objects and
	// write their status as their controllers would: kube-controller-manager
	// runs the namespace controller, the garbage collector and Controllers
	// only, kube-apiserver admits pods without a ServiceAccount, and there
	// is no scheduler and no node (a pod's node is a name). The package
	// says why it needs it.
	Minimal bool
	// Quiet are default controllers of the full bed that every test of a
	// package needs stopped (kube-controller-manager's --controllers names),
	// each with the package's reason beside it; QuietControllers stops
	// them for one test.
	Quiet []string
	// Nodes is how many nodes the full bed starts besides the lost one
	// (node-0, node-1, ...); 0 means 2.
	Nodes int
	// Version is the Kubernetes minor to run, e.g. "1.33", built from the
	// pins in hack/controlplane/1.33; empty is the default (1.37).
	Version string
	// FeatureGates are kube-controller-manager's --feature-gates, e.g.
	// "OrderedNamespaceDeletion=false" (a 1.30-1.32 controller).
	FeatureGates string
	// APIServerFeatureGates are kube-apiserver's --feature-gates, e.g.
	// "AllowUnsafeMalformedObjectDeletion=true".
	APIServerFeatureGates string
	// APIServerArgs are more kube-apiserver flags, e.g. an admission
	// configuration file.
	APIServerArgs []string
	// ControllerCredentials is the identity kube-controller-manager's
	// controllers send their requests as: empty is "serviceaccounts" on the
	// full bed and the test's admin on the minimal one; "user" runs it as
	// system:kube-controller-manager (in group system:masters: the role the
	// API server bootstraps for that user does not cover the controllers'
	// own work); "serviceaccounts" runs it as system:kube-controller-manager
	// with the RBAC the API server bootstraps for it, and adds
	// --use-service-account-credentials, so each controller is its own
	// service account in kube-system (kubeadm's setup). Tests of what
	// admission sees of the controllers need one of the last two.
	ControllerCredentials string
	// Controllers are, on the minimal bed, kube-controller-manager's
	// controllers to run beside the namespace controller and the garbage
	// collector (its --controllers names, e.g. persistentvolume-binder).
	Controllers []string
	// EncryptionConfig is kube-apiserver's EncryptionConfiguration (YAML),
	// written to the control plane's dir and passed as
	// --encryption-provider-config; empty: none.
	EncryptionConfig string
}

// FromEnv is Options with the version and the controller's feature gates
// taken from $NSDOCTOR_K8S and $NSDOCTOR_KCM_FEATURE_GATES, so one test
// package runs against every version (make test-versions).
func FromEnv(opts Options) Options {
	opts.Version = os.Getenv("NSDOCTOR_K8S")
	opts.FeatureGates = os.Getenv("NSDOCTOR_KCM_FEATURE_GATES")
	return opts
}

// ControlPlane is a running test bed. Its methods are not safe for
// concurrent use.
type ControlPlane struct {
	// Config is cluster-admin (group system:masters).
	Config *rest.Config
	// Kubeconfig is a file holding Config, for kubectl and the plugin.
	Kubeconfig string
	Dir        string
	// EtcdURL is etcd's client URL (plain HTTP): a test can write to
	// storage behind the API server's back, as a corruption would.
	EtcdURL string

	ownDir       bool
	featureGates string
	ca           *authority
	apiPort      int
	etcd         *process
	apiserver    *process
	controller   *process

	// The full bed's: where the binaries are, the controllers quieted for
	// the package and its credentials mode (to start the manager again),
	// the scheduler, the nodes and their kubelets' files.
	binDir         string
	minimal        bool
	quiet          []string
	extra          []string
	credentials    string
	scheduler      *process
	nodes          []*Node
	kwokConfig     string
	kwokKubeconfig string
}

// ServerPIDs are the process IDs of etcd and kube-apiserver, for a
// benchmark that reads what they spend (0 for one not running).
func (c *ControlPlane) ServerPIDs() []int {
	var out []int
	for _, p := range []*process{c.etcd, c.apiserver} {
		pid := 0
		if p.running() {
			pid = p.cmd.Process.Pid
		}
		out = append(out, pid)
	}
	return out
}

// Start brings the control plane up and returns once kube-apiserver's
// /readyz answers ok. On error everything started so far is stopped.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	binDir, err := binDir(ctx, opts.BinDir, opts.Version)
	if err != nil {
		return nil, err
	}
	cp = &ControlPlane{Dir: opts.Dir}
	if cp.Dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "ns-doctor-cp-"); err != nil {
			return nil, fmt.Errorf("creating control plane dir: %w", err)
		}
		cp.ownDir = true
	}
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()
	cp.featureGates = opts.FeatureGates
	cp.binDir, cp.minimal, cp.quiet, cp.extra = binDir, opts.Minimal, opts.Quiet, opts.Controllers
	full := !opts.Minimal && !opts.WithoutControllerManager
	cp.credentials = opts.ControllerCredentials
	if full && cp.credentials == "" {
		cp.credentials = "serviceaccounts"
	}
	if err := cp.prepare(binDir, !opts.WithoutControllerManager, full); err != nil {
		return nil, err
	}
	if err := cp.controllerCredentials(cp.credentials); err != nil {
		return nil, err
	}
	if opts.APIServerFeatureGates != "" {
		cp.apiserver.args = append(cp.apiserver.args, "--feature-gates="+opts.APIServerFeatureGates)
	}
	cp.apiserver.args = append(cp.apiserver.args, opts.APIServerArgs...)
	if opts.EncryptionConfig != "" {
		if err := os.WriteFile(cp.path("encryption.yaml"), []byte(opts.EncryptionConfig), 0o600); err != nil {
			return nil, fmt.Errorf("writing the encryption config: %w", err)
		}
		cp.apiserver.args = append(cp.apiserver.args, "--encryption-provider-config="+cp.path("encryption.yaml"))
	}
	if err := cp.etcd.start(); err != nil {
		return nil, err
	}
	if err := cp.StartAPIServer(ctx); err != nil {
		return nil, err
	}
	if cp.controller != nil {
		if err := cp.StartControllerManager(); err != nil {
			return nil, err
		}
	}
	if full {
		nodes := opts.Nodes
		if nodes == 0 {
			nodes = 2
		}
		if err := cp.startCluster(ctx, nodes); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// prepare writes certificates and kubeconfigs and lays out the processes.
func (cp *ControlPlane) prepare(binDir string, withController, full bool) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdPort, peerPort := ports[0], ports[1]
	cp.apiPort = ports[2]
	if cp.ca, err = newAuthority(); err != nil {
		return err
	}
	serverCert, serverKey, err := cp.ca.issue("kube-apiserver", nil, true)
	if err != nil {
		return err
	}
	files := map[string][]byte{"ca.crt": cp.ca.certPEM, "apiserver.crt": serverCert, "apiserver.key": serverKey}
	for name, data := range files {
		if err := os.WriteFile(cp.path(name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	if err := writeServiceAccountKey(cp.path("sa.key")); err != nil {
		return err
	}
	if err := cp.writeCAKey(); err != nil {
		return err
	}
	if cp.Config, cp.Kubeconfig, err = cp.MintUser("admin", "system:masters"); err != nil {
		return err
	}

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	cp.EtcdURL = etcdURL
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	cp.etcd = &process{name: "etcd", path: filepath.Join(binDir, "etcd"), logPath: cp.path("etcd.log"), args: []string{
		"--data-dir=" + cp.path("etcd"), "--name=default",
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		// Test data is disposable; skipping fsync makes fixtures of
		// thousands of objects quick on slow disks.
		"--unsafe-no-fsync",
	}}
	cp.apiserver = &process{name: "kube-apiserver", path: filepath.Join(binDir, "kube-apiserver"), logPath: cp.path("kube-apiserver.log"), args: []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(cp.apiPort),
		"--cert-dir=" + cp.path("certs"),
		"--tls-cert-file=" + cp.path("apiserver.crt"), "--tls-private-key-file=" + cp.path("apiserver.key"),
		"--client-ca-file=" + cp.path("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + cp.path("sa.key"), "--service-account-signing-key-file=" + cp.path("sa.key"),
		"--authorization-mode=RBAC", "--service-cluster-ip-range=10.0.0.0/24",
		// Loopback can't be a Service endpoint; nothing here routes to the
		// kubernetes Service anyway.
		"--endpoint-reconciler-type=none",
	}}
	switch {
	case full:
		cp.controller = cp.fullControllerManager(binDir, cp.quiet)
	case withController:
		cp.controller = cp.controllerManager(binDir, cp.quiet)
	}
	if !full {
		// No ServiceAccount controller makes "default" service accounts,
		// so pods could not be created in fresh namespaces.
		cp.apiserver.args = append(cp.apiserver.args, "--disable-admission-plugins=ServiceAccount")
	}
	return nil
}

// controllerManager runs the namespace controller (the oracle), the
// garbage collector and the extra controllers named, nothing else (the
// minimal bed), less those quieted.
func (cp *ControlPlane) controllerManager(binDir string, quiet []string) *process {
	names := slices.DeleteFunc(append([]string{"namespace-controller", "garbage-collector-controller"}, cp.extra...),
		func(n string) bool { return slices.Contains(quiet, n) })
	args := []string{
		"--kubeconfig=" + cp.Kubeconfig,
		"--controllers=" + strings.Join(names, ","),
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
	}
	if cp.featureGates != "" {
		args = append(args, "--feature-gates="+cp.featureGates)
	}
	return &process{name: "kube-controller-manager", path: filepath.Join(binDir, "kube-controller-manager"), logPath: cp.path("kube-controller-manager.log"), args: args}
}

// controllerCredentials makes kube-controller-manager authenticate as
// it does in a real cluster (Options.ControllerCredentials).
func (cp *ControlPlane) controllerCredentials(mode string) error {
	if cp.controller == nil || mode == "" {
		return nil
	}
	if mode != "user" && mode != "serviceaccounts" {
		return fmt.Errorf("unknown ControllerCredentials %q: use user or serviceaccounts", mode)
	}
	// The role the API server bootstraps for system:kube-controller-manager
	// is only enough to mint the controllers' service account tokens: run
	// without them, the controllers need more, which clusters that do so
	// grant it (here: system:masters). The user name is what admission sees.
	var groups []string
	if mode == "user" {
		groups = []string{"system:masters"}
	}
	_, kubeconfig, err := cp.MintUser("system:kube-controller-manager", groups...)
	if err != nil {
		return err
	}
	for i, a := range cp.controller.args {
		if strings.HasPrefix(a, "--kubeconfig=") {
			cp.controller.args[i] = "--kubeconfig=" + kubeconfig
		}
	}
	if mode == "serviceaccounts" {
		cp.controller.args = append(cp.controller.args, "--use-service-account-credentials=true")
	}
	return nil
}

func (cp *ControlPlane) path(name string) string { return filepath.Join(cp.Dir, name) }

// StartAPIServer starts kube-apiserver (again) and waits for /readyz.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	if err := cp.apiserver.start(); err != nil {
		return err
	}
	return cp.waitReady(ctx, 90*time.Second)
}

// StopEtcd stops etcd, keeping its data: the API server answers errors
// until StartEtcd.
func (cp *ControlPlane) StopEtcd() { cp.etcd.stop() }

// StartEtcd starts etcd again on the same data and port.
func (cp *ControlPlane) StartEtcd() error { return cp.etcd.start() }

// StopAPIServer stops kube-apiserver, leaving etcd and its data alone.
func (cp *ControlPlane) StopAPIServer() { cp.apiserver.stop() }

// StartControllerManager starts kube-controller-manager, also on a control
// plane started without it.
func (cp *ControlPlane) StartControllerManager() error {
	if cp.controller == nil {
		cp.controller = cp.controllerManager(filepath.Dir(cp.apiserver.path), cp.quiet)
	}
	if cp.controller.running() {
		return nil
	}
	if err := cp.controller.start(); err != nil {
		return err
	}
	// It has no serving port to probe; a controller manager that dies at
	// once (bad flag, unreachable API) is caught here.
	return cp.controller.stillRunningAfter(time.Second)
}

// StopControllerManager stops the namespace controller.
func (cp *ControlPlane) StopControllerManager() {
	if cp.controller != nil {
		cp.controller.stop()
	}
}

// ControllerManagerRunning tells whether a namespace controller is up.
func (cp *ControlPlane) ControllerManagerRunning() bool {
	return cp.controller != nil && cp.controller.running()
}

// Stop stops everything and removes the directory it created. It is safe
// to call more than once.
func (cp *ControlPlane) Stop() {
	for _, n := range cp.nodes {
		n.kubelet.stop()
	}
	for _, p := range []*process{cp.scheduler, cp.controller, cp.apiserver, cp.etcd} {
		if p != nil {
			p.stop()
		}
	}
	if cp.ownDir && os.Getenv("NSDOCTOR_KEEP_CONTROLPLANE") == "" {
		_ = os.RemoveAll(cp.Dir)
	}
}

// Server is the API server's URL.
func (cp *ControlPlane) Server() string { return "https://127.0.0.1:" + strconv.Itoa(cp.apiPort) }

// MintUser returns a config and a kubeconfig file for a user in the given
// groups, authenticated by a client certificate. It has only the
// permissions RBAC grants it.
func (cp *ControlPlane) MintUser(name string, groups ...string) (*rest.Config, string, error) {
	certPEM, keyPEM, err := cp.ca.issue(name, groups, false)
	if err != nil {
		return nil, "", err
	}
	cfg := &rest.Config{
		Host:            cp.Server(),
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.ca.certPEM, CertData: certPEM, KeyData: keyPEM},
		QPS:             200, Burst: 400,
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["ns-doctor-test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cp.ca.certPEM}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "ns-doctor-test", AuthInfo: name}
	kc.CurrentContext = name
	path := cp.path("kubeconfig-" + name)
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return nil, "", fmt.Errorf("writing kubeconfig for %s: %w", name, err)
	}
	return cfg, path, nil
}

func (cp *ControlPlane) waitReady(ctx context.Context, timeout time.Duration) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cp.ca.certPEM)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if !cp.apiserver.running() {
			return cp.apiserver.exitedError()
		}
		if !cp.etcd.running() {
			return cp.etcd.exitedError()
		}
		if readyz(ctx, client, cp.Server()+"/readyz") == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready after %s (log: %s)", timeout, cp.apiserver.logPath)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// readyz needs no credentials: /readyz is open to system:unauthenticated.
func readyz(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errNotReady
	}
	return nil
}

// freePorts asks the kernel for n distinct free ports. Holding all
// listeners until every port is known keeps them distinct.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

var errNoBinaries = errors.New("control plane binaries not found")
