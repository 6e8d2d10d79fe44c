package scenario

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// CuttingProxy stands between the plugin and the API server, and closes
// the connection half-way through the body of the lists it is told to
// cut: an API server, load balancer or network that drops a list
// mid-answer.
type CuttingProxy struct {
	// Kubeconfig reaches the API server through the proxy.
	Kubeconfig string
	// Cuts counts the answers cut so far.
	Cuts atomic.Int64

	server *httptest.Server
	mu     sync.Mutex
	cut    map[string]bool // path suffix: /namespaces/NS/RESOURCE
}

// StartCuttingProxy proxies to the API server of cfg, authenticating as
// cfg does, and writes a kubeconfig for it into dir.
func StartCuttingProxy(cfg *rest.Config, dir string) (*CuttingProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's address %q: %w", cfg.Host, err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the API server's transport: %w", err)
	}
	p := &CuttingProxy{cut: map[string]bool{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1 // send what comes at once, so the cut is mid-body
	rp.ModifyResponse = p.modify
	p.server = httptest.NewTLSServer(rp)
	p.Kubeconfig = filepath.Join(dir, "cutting-proxy.kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.server.URL, InsecureSkipTLSVerify: true}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kc.CurrentContext = "proxy"
	if err := clientcmd.WriteToFile(*kc, p.Kubeconfig); err != nil {
		p.server.Close()
		return nil, fmt.Errorf("writing the proxy's kubeconfig: %w", err)
	}
	return p, nil
}

// CutLists makes every list of resource (core group) in namespace end
// half-way through its body.
func (p *CuttingProxy) CutLists(namespace, resource string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut["/namespaces/"+namespace+"/"+resource] = true
}

// Close stops the proxy and removes its kubeconfig.
func (p *CuttingProxy) Close() {
	p.server.Close()
	_ = os.Remove(p.Kubeconfig)
}

func (p *CuttingProxy) modify(resp *http.Response) error {
	req := resp.Request
	if req.Method != http.MethodGet || req.URL.Query().Get("watch") != "" || resp.StatusCode != http.StatusOK {
		return nil
	}
	p.mu.Lock()
	cut := false
	for suffix := range p.cut {
		cut = cut || strings.HasSuffix(req.URL.Path, suffix)
	}
	p.mu.Unlock()
	if !cut {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	p.Cuts.Add(1)
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Body = &cutBody{half: body[:len(body)/2]}
	return nil
}

// cutBody gives half of a body, then fails: the proxy then aborts the
// connection, as a dropped one.
type cutBody struct {
	half []byte
	sent bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	if !b.sent {
		n := copy(p, b.half)
		b.half = b.half[n:]
		b.sent = len(b.half) == 0
		return n, nil
	}
	return 0, io.ErrUnexpectedEOF
}

func (b *cutBody) Close() error { return nil }
