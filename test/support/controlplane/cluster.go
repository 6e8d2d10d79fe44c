package controlplane

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// The full bed's timing of lost nodes, shortened from a real cluster's so a
// test sees a node go NotReady in seconds rather than a minute: kwok renews
// a node's Lease every quarter of its duration (3 s, as a kubelet does with
// its 40 s), and the node lifecycle controller marks a node whose Lease is
// not renewed for 15 s Unknown (a real cluster: 50 s), checking every 2 s
// (5 s). The ratio of grace to renewal is a real cluster's, 5.
const (
	nodeLeaseSeconds       = 12
	nodeMonitorGracePeriod = "15s"
	nodeMonitorPeriod      = "2s"
)

// LostNodeName is the node of the full bed whose kubelet died at start: it
// exists, its Ready condition is Unknown and it carries the node lifecycle
// controller's unreachable taints, so a pod bound to it is never confirmed
// gone, as on a real node that lost power.
const LostNodeName = "node-lost"

// LostNode is the node a pod that must never be confirmed gone is bound
// to: LostNodeName on the full bed, a name no node has otherwise.
func (cp *ControlPlane) LostNode() string {
	if cp.kwokConfig == "" {
		return "node-gone"
	}
	return LostNodeName
}

// Full tells whether this is the full bed (controllers, scheduler, nodes).
func (cp *ControlPlane) Full() bool { return cp.kwokConfig != "" }

// nodeAnnotation marks the bed's nodes (kwok's own marker of a fake node).
const nodeAnnotation = "kwok.x-k8s.io/node"

// fullControllerManager is kube-controller-manager as kubeadm runs it: every
// controller it enables by default, each under its own service account
// (--use-service-account-credentials), the keys and CA the token
// controller, the root CA publisher and the CSR signer need. Controllers
// that need a cloud provider (cloud-node-lifecycle, service-lb,
// node-route) or node IPAM (--allocate-node-cidrs) stay off, as they do
// on a cluster without them; those kube-controller-manager disables by
// default (bootstrap-signer, token-cleaner) too. quiet are the default
// controllers a test package needs stopped.
func (cp *ControlPlane) fullControllerManager(binDir string, quiet []string) *process {
	controllers := "*"
	for _, name := range quiet {
		controllers += ",-" + name
	}
	args := []string{
		"--kubeconfig=" + cp.Kubeconfig,
		"--controllers=" + controllers,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
		"--service-account-private-key-file=" + cp.path("sa.key"),
		"--root-ca-file=" + cp.path("ca.crt"),
		"--cluster-signing-cert-file=" + cp.path("ca.crt"), "--cluster-signing-key-file=" + cp.path("ca.key"),
		"--node-monitor-grace-period=" + nodeMonitorGracePeriod, "--node-monitor-period=" + nodeMonitorPeriod,
	}
	if cp.featureGates != "" {
		args = append(args, "--feature-gates="+cp.featureGates)
	}
	return &process{name: "kube-controller-manager", path: filepath.Join(binDir, "kube-controller-manager"), logPath: cp.path("kube-controller-manager.log"), args: args}
}

// startScheduler runs kube-scheduler as system:kube-scheduler, the user
// kube-apiserver bootstraps its role for.
func (cp *ControlPlane) startScheduler(binDir string) error {
	_, kubeconfig, err := cp.MintUser("system:kube-scheduler")
	if err != nil {
		return err
	}
	cp.scheduler = &process{name: "kube-scheduler", path: filepath.Join(binDir, "kube-scheduler"), logPath: cp.path("kube-scheduler.log"), args: []string{
		"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
	}}
	if err := cp.scheduler.start(); err != nil {
		return err
	}
	return cp.scheduler.stillRunningAfter(time.Second)
}

// Node is a node of the bed and its kubelet, a kwok process that manages
// this node only: it keeps the node's Lease and Ready condition fresh, runs
// the pods bound to it (Running and Ready) and removes those being deleted
// at the end of their grace period.
type Node struct {
	Name    string
	kubelet *process
}

// StartNode registers a node and starts its kubelet, and returns once the
// node is Ready.
func (cp *ControlPlane) StartNode(ctx context.Context, name string) (*Node, error) {
	if cp.binDir == "" || cp.kwokConfig == "" {
		return nil, fmt.Errorf("node %s: the bed runs no nodes (Options.Minimal or WithoutControllerManager)", name)
	}
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels:      map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"},
		Annotations: map[string]string{nodeAnnotation: "fake"}}}
	if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("registering node %s: %w", name, err)
	}
	n := &Node{Name: name, kubelet: &process{name: "kwok " + name, path: filepath.Join(cp.binDir, "kwok"), logPath: cp.path("kwok-" + name + ".log"), args: []string{
		"--kubeconfig=" + cp.kwokKubeconfig, "--config=" + cp.kwokConfig,
		"--manage-single-node=" + name, "--node-lease-duration-seconds=" + strconv.Itoa(nodeLeaseSeconds),
		"--cidr=" + cp.nextPodCIDR(), "--node-ip=127.0.0.1",
	}}}
	if err := n.kubelet.start(); err != nil {
		return nil, err
	}
	cp.nodes = append(cp.nodes, n)
	if err := waitNode(ctx, kube, name, func(s v1.ConditionStatus) bool { return s == v1.ConditionTrue }); err != nil {
		return nil, fmt.Errorf("node %s not Ready: %w (log: %s)", name, err, n.kubelet.logPath)
	}
	return n, nil
}

// nextPodCIDR gives each node pod addresses of its own.
func (cp *ControlPlane) nextPodCIDR() string {
	return "10.244." + strconv.Itoa(len(cp.nodes)) + ".0/24"
}

// Stop kills the node's kubelet, as a node that loses power: its Lease is
// no longer renewed, the node lifecycle controller marks it Unknown after
// its grace period and taints it unreachable, and its pods are never
// confirmed gone.
func (n *Node) Stop() {
	n.kubelet.kill()
}

// LoseNode stops a node's kubelet and waits until the node lifecycle
// controller has marked it NotReady (Ready Unknown).
func (cp *ControlPlane) LoseNode(ctx context.Context, name string) error {
	i := slices.IndexFunc(cp.nodes, func(n *Node) bool { return n.Name == name })
	if i < 0 {
		return fmt.Errorf("node %s is not one of the bed's", name)
	}
	cp.nodes[i].Stop()
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	if err := waitNode(ctx, kube, name, func(s v1.ConditionStatus) bool { return s != v1.ConditionTrue }); err != nil {
		return fmt.Errorf("node %s still Ready after its kubelet stopped: %w", name, err)
	}
	return nil
}

// DeleteNode stops a node's kubelet and deletes the Node: the pods bound to
// it are orphans, which the pod garbage collector force-deletes 40 s later
// unless a test quiets it.
func (cp *ControlPlane) DeleteNode(ctx context.Context, name string) error {
	for _, n := range cp.nodes {
		if n.Name == name {
			n.Stop()
		}
	}
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	if err := kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	return nil
}

// waitNode waits until the node's Ready condition satisfies ok.
func waitNode(ctx context.Context, kube kubernetes.Interface, name string, ok func(v1.ConditionStatus) bool) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		node, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		status := v1.ConditionUnknown
		found := false
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeReady {
				status, found = c.Status, true
			}
		}
		return found && ok(status), nil
	})
}

// startCluster starts what the full bed adds to the API server and the
// controller manager: the scheduler, the nodes, and a node that is lost.
// It returns once the nodes are Ready, the lost one NotReady, and the
// ServiceAccount controller has made `default` in the default namespace
// (so the controllers a test relies on are working).
func (cp *ControlPlane) startCluster(ctx context.Context, nodes int) error {
	if err := cp.startScheduler(cp.binDir); err != nil {
		return err
	}
	if err := cp.writeKwokFiles(); err != nil {
		return err
	}
	for i := range nodes {
		if _, err := cp.StartNode(ctx, "node-"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	lost, err := cp.StartNode(ctx, LostNodeName)
	if err != nil {
		return err
	}
	lost.Stop()
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	if err := waitNode(ctx, kube, LostNodeName, func(s v1.ConditionStatus) bool { return s != v1.ConditionTrue }); err != nil {
		return fmt.Errorf("node %s still Ready after its kubelet stopped: %w (log: %s)", LostNodeName, err, cp.controller.logPath)
	}
	return WaitForDefaultServiceAccount(ctx, kube, metav1.NamespaceDefault)
}

// WaitForDefaultServiceAccount waits until the ServiceAccount controller
// has made `default` in namespace: until then, admission refuses a pod
// there ("error looking up service account"), on every cluster.
func WaitForDefaultServiceAccount(ctx context.Context, kube kubernetes.Interface, namespace string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("no ServiceAccount default in %s: %w", namespace, err)
	}
	return nil
}

// writeKwokFiles writes the kubeconfig the kubelets use (their own user,
// in system:masters: kwok simulates every kubelet of the bed, so the Node
// authorizer's per-node scoping is not modelled) and points at the stages
// built beside the binaries.
func (cp *ControlPlane) writeKwokFiles() error {
	_, kubeconfig, err := cp.MintUser("kwok", "system:masters")
	if err != nil {
		return err
	}
	cp.kwokKubeconfig = kubeconfig
	cp.kwokConfig = filepath.Join(cp.binDir, "kwok-stages.yaml")
	if _, err := os.Stat(cp.kwokConfig); err != nil {
		return fmt.Errorf("kwok's stages: %w (rebuild with hack/build-controlplane.sh)", err)
	}
	return nil
}

// writeCAKey writes the CA's key for the CSR signer.
func (cp *ControlPlane) writeCAKey() error {
	der, err := x509.MarshalECPrivateKey(cp.ca.key)
	if err != nil {
		return err
	}
	return os.WriteFile(cp.path("ca.key"), pemBlock("EC PRIVATE KEY", der), 0o600)
}

// QuietControllers restarts kube-controller-manager without the named
// controllers (its --controllers names, e.g. namespace-controller,
// pod-garbage-collector-controller) for a test that needs them stopped,
// and returns what restarts it with them; a test's clean-up calls it. The
// test says why in its own words. Tests sharing the bed run one after
// another (those that quiet a controller never in parallel), so the others
// never see them quiet.
func (cp *ControlPlane) QuietControllers(names ...string) (restore func() error, err error) {
	if cp.controller == nil {
		return nil, fmt.Errorf("quieting %s: the bed runs no controller manager", strings.Join(names, ", "))
	}
	restart := func(quiet []string) error {
		cp.controller.stop()
		if cp.minimal {
			cp.controller = cp.controllerManager(cp.binDir, quiet)
		} else {
			cp.controller = cp.fullControllerManager(cp.binDir, quiet)
		}
		if err := cp.controllerCredentials(cp.credentials); err != nil {
			return err
		}
		return cp.StartControllerManager()
	}
	if err := restart(append(slices.Clone(cp.quiet), names...)); err != nil {
		return nil, err
	}
	return func() error { return restart(cp.quiet) }, nil
}

// stillRunningAfter catches a process that dies at once (a bad flag, an
// unreachable API) for binaries with no port to probe.
func (p *process) stillRunningAfter(d time.Duration) error {
	select {
	case <-p.done:
		return p.exitedError()
	case <-time.After(d):
		return nil
	}
}
