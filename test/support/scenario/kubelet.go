package scenario

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FakeKubelet is a Node whose kubelet answers only one thing: the
// /containerLogs of the pods bound to it, which kube-apiserver proxies
// `kubectl logs` (pods/log) to. The test bed runs no kubelet; this lets a
// test give an owner's pod a log.
type FakeKubelet struct {
	Node string
	srv  *httptest.Server
	c    *Cluster
	mu   sync.Mutex
	logs map[string]string
}

// StartFakeKubelet serves on a loopback port (TLS: kube-apiserver dials
// kubelets over HTTPS, not verifying them without
// --kubelet-certificate-authority) and registers Node name at that address.
func (c *Cluster) StartFakeKubelet(ctx context.Context, name string) (*FakeKubelet, error) {
	k := &FakeKubelet{Node: name, c: c, logs: map[string]string{}}
	k.srv = httptest.NewTLSServer(http.HandlerFunc(k.serve))
	_, portText, _ := net.SplitHostPort(k.srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	created, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		k.srv.Close()
		return nil, fmt.Errorf("creating node %s: %w", name, err)
	}
	created.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}}
	created.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := c.Kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		k.Close(ctx)
		return nil, fmt.Errorf("setting node %s's kubelet address: %w", name, err)
	}
	return k, nil
}

// SetLog makes text the log of a pod's container.
func (k *FakeKubelet) SetLog(namespace, pod, container, text string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.logs[namespace+"/"+pod+"/"+container] = text
}

// serve answers /containerLogs/NAMESPACE/POD/CONTAINER with the log set,
// honouring tailLines.
func (k *FakeKubelet) serve(w http.ResponseWriter, r *http.Request) {
	key, ok := strings.CutPrefix(r.URL.Path, "/containerLogs/")
	k.mu.Lock()
	text, found := k.logs[key]
	k.mu.Unlock()
	if !ok || !found {
		http.NotFound(w, r)
		return
	}
	if n, err := strconv.Atoi(r.URL.Query().Get("tailLines")); err == nil {
		lines := strings.SplitAfter(text, "\n")
		if len(lines) > n {
			text = strings.Join(lines[len(lines)-n:], "")
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(text))
}

// Close stops the kubelet and deletes its Node.
func (k *FakeKubelet) Close(ctx context.Context) {
	k.srv.Close()
	_ = k.c.Kube.CoreV1().Nodes().Delete(ctx, k.Node, metav1.DeleteOptions{})
}
