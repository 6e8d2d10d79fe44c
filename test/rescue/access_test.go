package rescue

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/test/support/apimetrics"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// reviews counts the access reviews kube-apiserver served between two
// reads of its request counter: SelfSubjectRulesReviews and
// SelfSubjectAccessReviews (no other client of the test bed sends any).
func reviews(before, after map[string]float64) (rules, access int) {
	for what, n := range apimetrics.Delta(before, after) {
		switch {
		case strings.HasSuffix(what, " selfsubjectrulesreviews"):
			rules += int(n)
		case strings.HasSuffix(what, " selfsubjectaccessreviews"):
			access += int(n)
		}
	}
	return rules, access
}

// Every command that changes a cluster checks its access once, batched
// (internal/access): one SelfSubjectRulesReview for the namespace it
// changes things in answers the namespaced permissions at once, and only
// the cluster-scoped ones are each a SelfSubjectAccessReview (their
// number is the command's in docs/rbac.md). Before, rescue asked about
// every type of the namespace one by one: 41 reviews for a namespace of
// one ConfigMap and one pod. Counted by kube-apiserver itself.
func TestEachCommandChecksItsAccessOnce(t *testing.T) {
	ctx := context.Background()
	k := cluster.Kube
	ns := plugintest.UniqueName(t)
	active, purged := ns+"-a", ns+"-p"
	for _, name := range []string{ns, active, purged} {
		plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	}
	plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "settings", nil))
	plugintest.Must(t, cluster.CreateBoundPod(ctx, ns, "stuck", 3600))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, purged, "held", nil, "example.com/hold"))
	t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), purged, "held") })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, purged))
	resources, err := discovery.ServerPreferredNamespacedResources(k.Discovery())
	plugintest.Must(t, err)
	types := 0
	for _, list := range resources {
		types += len(list.APIResources)
	}

	dir := t.TempDir()
	for _, tc := range []struct {
		what string
		args []string
		// before runs first (outside the count).
		before func()
		// rules and access are the most reviews of each kind: a rules
		// review per namespace concerned, an access review per
		// cluster-scoped permission.
		rules, access int
	}{
		// The hold's policy and binding (get, create, patch), get
		// namespaces, list and patch persistentvolumes.
		{what: "rescue", args: []string{"rescue", ns, "--yes", "--backup-dir", dir}, rules: 1, access: 9},
		// Delete the policy and binding, list persistentvolumes.
		{what: "rescue --release", args: []string{"rescue", ns, "--release", "--yes"}, access: 3},
		// Delete the policy and binding, list persistentvolumes (the
		// release); update namespaces/finalize (purge's pass); get, create
		// and patch namespaces, get and patch persistentvolumes (the
		// restore).
		{what: "rescue --restore", args: []string{"rescue", ns, "--restore", "--yes", "--backup-dir", dir, "--wait", "2m"}, rules: 1, access: 9,
			before: func() {
				plugintest.Must(t, k.CoreV1().Pods(ns).Delete(ctx, "stuck", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))
			}},
		// Into another namespace: get, create and patch namespaces; get,
		// list and patch persistentvolumes; a rules review of each
		// namespace (the clone, and the saved one's claims).
		{what: "restore -n", args: []string{"restore", dir, "-n", ns + "-copy", "--yes"}, rules: 2, access: 6},
		// The policy and binding: get, create, patch; get, delete.
		{what: "protect", args: []string{"protect", active, "--yes"}, access: 6},
		{what: "protect --remove", args: []string{"protect", active, "--remove", "--yes"}, access: 4},
		// The finalize call.
		{what: "purge --force", args: []string{"purge", purged, "--force", "--yes", "--remove-finalizers=example.com/*", "--backup-dir", t.TempDir(), "--timeout=1m"},
			rules: 1, access: 1},
	} {
		if tc.before != nil {
			tc.before()
		}
		before, err := apimetrics.RequestCounts(ctx, k)
		plugintest.Must(t, err)
		started := time.Now()
		r := plugin.Kubectl(t, cp.Kubeconfig, append([]string{"ns-doctor"}, tc.args...)...)
		took := time.Since(started)
		after, err := apimetrics.RequestCounts(ctx, k)
		plugintest.Must(t, err)
		rules, access := reviews(before, after)
		t.Logf("%s: %d SelfSubjectRulesReview(s), %d SelfSubjectAccessReview(s) (%d namespaced types served), in %s", tc.what, rules, access, types, took.Round(time.Millisecond))
		if r.Code != 0 {
			t.Errorf("%s: exit %d\n%s\n%s", tc.what, r.Code, r.Stdout, r.Stderr)
			continue
		}
		if rules > tc.rules || access > tc.access || rules+access == 0 {
			t.Errorf("%s sent %d rules and %d access reviews; want at most %d and %d, and some", tc.what, rules, access, tc.rules, tc.access)
		}
	}
}
