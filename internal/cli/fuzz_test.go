package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Any command line, against a server that refuses connections, ends in a
// documented exit code and at most one error line: never a panic or stack.
func FuzzRun(f *testing.F) {
	kubeconfig := filepath.Join(f.TempDir(), "kubeconfig")
	data := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\"}\n" +
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: t}\ncurrent-context: c\n"
	if err := os.WriteFile(kubeconfig, []byte(data), 0o600); err != nil {
		f.Fatal(err)
	}
	f.Setenv("KUBECONFIG", kubeconfig)
	f.Setenv("HOME", f.TempDir())
	for _, seed := range []string{
		"explain demo", "explain", "explain Demo_X", "explain a b", "explain demo -o xml", "explain demo --color=never -o yaml",
		"purge demo", "purge kube-system", "purge demo --force --dry-run=server", "purge demo --remove-all-finalizers --remove-finalizers=a*",
		"purge demo --timeout=-1s", "version -o json", "explain --if-deleted", "--request-timeout=x explain demo", "explain demo --controller-grace=0",
		"watch --after=5x", "watch --purge-force", "watch --purge-selector=a=b --metrics-addr=0",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		for _, a := range args {
			// Completion scripts and help are fine; writing files is not
			// what this target explores.
			if strings.Contains(a, "backup-dir") || strings.Contains(a, "kubeconfig") || strings.Contains(a, "cache-dir") {
				t.Skip()
			}
		}
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		code := Run(ctx, append(args, "--request-timeout=1s"), genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		switch code {
		case ExitOK, ExitError, ExitUsage, ExitStuck, ExitNotFound, ExitIncomplete:
		default:
			t.Fatalf("undocumented exit code %d for %q", code, args)
		}
		stderr := errOut.String()
		if strings.Contains(stderr, "internal error") || strings.Contains(stderr, "goroutine ") {
			t.Fatalf("%q crashed:\n%s", args, stderr)
		}
		if n := strings.Count(strings.TrimRight(stderr, "\n"), "\n"); code != ExitOK && n > 0 && !strings.Contains(stderr, "pass ") {
			t.Fatalf("%q: %d lines on stderr:\n%s", args, n+1, stderr)
		}
	})
}
