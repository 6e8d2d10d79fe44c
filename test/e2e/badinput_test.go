package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each bad input gives one line on stderr, a documented exit code, and no
// stack trace.
func TestBadInput(t *testing.T) {
	closed := kubeconfigFor(t, closedPort(t))
	silent := kubeconfigFor(t, silentServer(t))
	badToken := withToken(t, cp.Kubeconfig, "not-a-valid-token")
	broken := filepath.Join(t.TempDir(), "broken")
	if err := os.WriteFile(broken, []byte("apiVersion: v1\nclusters: [this is not: a kubeconfig\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, nobody, err := cp.MintUser("nobody-at-all")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		kubeconfig string
		args       []string
		code       int
		want       string
	}{
		{"unknown namespace", cp.Kubeconfig, []string{"explain", "no-such-namespace"}, 4, `namespace "no-such-namespace" not found`},
		{"invalid name", cp.Kubeconfig, []string{"explain", "Not_Valid"}, 2, `"Not_Valid" is not a valid namespace name`},
		{"unknown flag", cp.Kubeconfig, []string{"explain", "x", "--no-such-flag"}, 2, "unknown flag: --no-such-flag"},
		{"too many arguments", cp.Kubeconfig, []string{"version", "extra"}, 2, "takes exactly 0 argument"},
		{"--if-deleted without a name", cp.Kubeconfig, []string{"explain", "--if-deleted"}, 2, "--if-deleted needs a namespace NAME"},
		{"unknown output format", cp.Kubeconfig, []string{"explain", "x", "-o", "xml"}, 2, `unknown output format "xml"`},
		{"unreachable server", closed, []string{"explain", "x", "--request-timeout=5s"}, 1, "connection refused"},
		{"server that never answers", silent, []string{"explain", "x", "--request-timeout=1s"}, 1, "did not answer in time"},
		{"purge a system namespace", cp.Kubeconfig, []string{"purge", "kube-system"}, 2, "refusing to purge"},
		{"missing kubeconfig", cp.Kubeconfig, []string{"explain", "x", "--kubeconfig", "/nonexistent/kubeconfig"}, 1, "/nonexistent/kubeconfig"},
		{"broken kubeconfig", broken, []string{"explain", "x"}, 1, "invalid kubeconfig"},
		{"unknown context", cp.Kubeconfig, []string{"explain", "x", "--context", "nope"}, 1, `context "nope"`},
		{"invalid token", badToken, []string{"explain", "default"}, 1, "401 Unauthorized"},
		{"forbidden namespace", nobody, []string{"explain", "default"}, 1, `cannot get resource "namespaces"`},
		{"conflicting purge modes", cp.Kubeconfig, []string{"purge", "x", "--force", "--dry-run=server"}, 2, "--force conflicts with --dry-run=server"},
		{"conflicting strip flags", cp.Kubeconfig, []string{"purge", "x", "--remove-all-finalizers", "--remove-finalizers=a"}, 2, "conflicts with --remove-all-finalizers"},
		{"bad --request-timeout", cp.Kubeconfig, []string{"explain", "x", "--request-timeout=soon"}, 2, `invalid --request-timeout "soon"`},
		{"bad --color", cp.Kubeconfig, []string{"explain", "x", "--color=rainbow"}, 2, `invalid --color "rainbow"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := plugin.Kubectl(t, tc.kubeconfig, append([]string{"ns-doctor"}, tc.args...)...)
			lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
			if r.Code != tc.code || len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("code %d (want %d), stderr:\n%s", r.Code, tc.code, r.Stderr)
			}
			if strings.Contains(r.Stderr, "goroutine") || strings.Contains(r.Stderr, "panic") {
				t.Fatalf("stack trace on stderr:\n%s", r.Stderr)
			}
			if tc.name == "server that never answers" && time.Since(start) > 30*time.Second {
				t.Fatalf("--request-timeout=1s not honoured: took %s", time.Since(start))
			}
		})
	}
}

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// silentServer accepts connections and never answers.
func silentServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	return l.Addr().String()
}

func kubeconfigFor(t *testing.T, addr string) string {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	data := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://" + addr + "\", insecure-skip-tls-verify: true}\n" +
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: t}\ncurrent-context: c\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// withToken copies a kubeconfig with its user's credentials replaced by a
// bearer token.
func withToken(t *testing.T, kubeconfig, token string) string {
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	s = s[:strings.Index(s, "users:")] + "users:\n- name: admin\n  user:\n    token: " + token + "\n"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
