package mcp_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// --http serves only this machine: a request naming another host (a DNS
// rebinding page) or sent cross-origin by a browser is refused before any
// tool runs; an address already in use, or one that is not loopback, is
// one clear line and an exit code.
func TestHTTPRefusesOtherHostsAndOrigins(t *testing.T) {
	serving := serveHTTP(t, cp.Kubeconfig)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	post := func(header http.Header) int {
		req, err := http.NewRequest(http.MethodPost, serving, strings.NewReader(initialize))
		plugintest.Must(t, err)
		req.Header = header
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if h := header.Get("Host"); h != "" {
			req.Host = h
		}
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		plugintest.Must(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(http.Header{}); code != http.StatusOK {
		t.Fatalf("a local client: %d, want 200", code)
	}
	if code := post(http.Header{"Host": {"evil.example.com"}}); code != http.StatusForbidden {
		t.Errorf("Host evil.example.com (DNS rebinding): %d, want 403", code)
	}
	if code := post(http.Header{"Origin": {"https://evil.example.com"}, "Sec-Fetch-Site": {"cross-site"}}); code != http.StatusForbidden {
		t.Errorf("a cross-origin browser request: %d, want 403", code)
	}

	u, err := url.Parse(serving)
	plugintest.Must(t, err)
	for _, tc := range []struct {
		addr string
		code int
		want string
	}{
		{u.Host, 1, "cannot serve on --http=" + u.Host},
		{"0.0.0.0:8765", 2, "refusing --http=0.0.0.0:8765: the HTTP transport has no authentication"},
	} {
		r := plugin.Direct(t, cp.Kubeconfig, "mcp", "--http="+tc.addr)
		if r.Code != tc.code || !strings.Contains(r.Stderr, tc.want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") > 0 {
			t.Errorf("mcp --http=%s: exit %d, want %d with %q on one line\n%s", tc.addr, r.Code, tc.code, tc.want, r.Stderr)
		}
	}
}
