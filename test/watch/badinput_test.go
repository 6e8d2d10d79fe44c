package watch

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestWatchBadInput: each mistake ends in one line that says what to do,
// with its documented exit code, before anything is watched.
func TestWatchBadInput(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer func() { _ = busy.Close() }()
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown unit", []string{"--after=5x"}, 2, `invalid argument "5x" for "--after" flag`},
		{"metrics address in use", []string{"--metrics-addr=" + busy.Addr().String()}, 1, "address already in use: choose a free address with --metrics-addr"},
		{"selector of every namespace", []string{"--purge-selector=kubernetes.io/metadata.name"}, 2, "selects the system namespace"},
		{"selector of kube-system", []string{"--purge-selector=kubernetes.io/metadata.name in (kube-system,ci)"}, 2, "selects the system namespace kube-system"},
		{"empty selector", []string{"--purge-selector="}, 2, "selects every namespace"},
		{"escalation without selector", []string{"--remove-finalizers=example.com/*"}, 2, "--remove-finalizers is the janitor's: it needs --purge-selector"},
		{"force without selector", []string{"--purge-force"}, 2, "--purge-force is the janitor's"},
		{"bad output", []string{"-o", "yaml"}, 2, "watch prints -o json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := plugintest.Command(t, "", time.Minute, []string{"KUBECONFIG=" + cp.Kubeconfig}, binary, append([]string{"watch"}, c.args...)...)
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			if r.Code != c.code || len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], c.want) {
				t.Errorf("watch %v: exit %d, stderr %q; want exit %d and one error line with %q", c.args, r.Code, r.Stderr, c.code, c.want)
			}
		})
	}
}

// TestWatchWithoutEventPermission: a user who may read what explain reads
// but not create Events gets the diagnoses in the metrics, and one line
// saying that Events cannot be recorded, however many it would record.
// Not parallel: another test's watch would record the Events this one
// cannot.
func TestWatchWithoutEventPermission(t *testing.T) {
	ctx := context.Background()
	user := "watch-no-events"
	r := plugintest.Command(t, "", time.Minute, []string{"KUBECONFIG=" + cp.Kubeconfig}, "kubectl", "apply", "-f", filepath.Join("..", "..", "docs", "rbac", "explain-clusterrole.yaml"))
	if r.Code != 0 {
		t.Fatalf("applying the explain ClusterRole: %s", r.Stderr)
	}
	_, kubeconfig, err := cp.MintUser(user)
	must(t, err)
	_, err = cluster.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metaName(user),
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "ns-doctor-explain"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: user, APIGroup: "rbac.authorization.k8s.io"}},
	}, createOptions)
	must(t, err)

	base := plugintest.UniqueName(t)
	var names []string
	for i := range 2 {
		ns := fmt.Sprintf("%s-%d", base, i)
		names = append(names, ns)
		must(t, cluster.CreateNamespace(ctx, ns))
		must(t, cluster.CreateConfigMap(ctx, ns, "held", nil, "example.com/no-events"))
		must(t, cluster.DeleteNamespace(ctx, ns))
		t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), ns, "held") })
	}
	w := startWatch(t, kubeconfig, "--after=0s", "--resync=2s", "--grace=0s")
	poll(t, time.Minute, "the diagnoses in the metrics, and Events refused", func() (bool, error) {
		for _, ns := range names {
			if len(w.series(t, "nsdoctor_namespace_blocker", fmt.Sprintf(`namespace=%q`, ns))) == 0 {
				return false, nil
			}
		}
		refused := w.series(t, "nsdoctor_event_errors_total")
		return len(refused) == 1 && !strings.HasSuffix(refused[0], " 0"), nil
	})
	// Several resyncs later, still one line.
	time.Sleep(6 * time.Second)
	if n := strings.Count(w.Stderr.String(), "cannot record Events"); n != 1 {
		t.Errorf("the watch said %d times that it cannot record Events, want once:\n%s", n, w.Stderr.String())
	}
	if !strings.Contains(w.Stderr.String(), "grant create/patch on events") {
		t.Errorf("the line does not say what to do:\n%s", w.Stderr.String())
	}
	for _, ns := range names {
		if len(events(t, ns, "NamespaceStuck")) > 0 {
			t.Errorf("an Event on %s was recorded without permission", ns)
		}
	}
}
