package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// brokenConversion makes a CRD served in v1 (storage) and v2 whose
// conversion webhook's Service does not exist, removed at the test's end;
// with an object stored in namespace other when other is set. It returns
// the CRD's name.
func brokenConversion(t *testing.T, other string, before ...string) string {
	t.Helper()
	ctx := context.Background()
	group := fmt.Sprintf("w%d.example.com", time.Now().UnixNano()%100000)
	crd, v1GVR, err := cluster.BrokenConversionCRD(ctx, group, "Conv", "convs", "conv-system", "converter")
	t.Cleanup(func() {
		_ = cluster.Dynamic.Resource(crdsGVR).Delete(context.Background(), crd, metav1.DeleteOptions{})
	})
	plugintest.Must(t, err)
	// The API server's watch cache of the preferred version (v2) starts
	// with the first read of it, while nothing needs converting, as it
	// does in a cluster where the webhook went down after the objects were
	// made.
	for _, ns := range before {
		plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
	}
	v2 := v1GVR.GroupResource().WithVersion("v2")
	for range 3 {
		_, err = cluster.Dynamic.Resource(v2).List(ctx, metav1.ListOptions{})
		plugintest.Must(t, err)
		time.Sleep(time.Second)
	}
	if other != "" {
		plugintest.Must(t, cluster.CreateNamespace(ctx, other))
		t.Cleanup(func() { _ = cluster.DeleteNamespace(context.Background(), other) })
		plugintest.Must(t, cluster.CreateCustomResource(ctx, v1GVR, "Conv", other, "elsewhere"))
		// The object cannot be converted to v2: the watch cache of v2
		// stops following storage. A list that is not paged (the namespace controller's count of
		// what remains) is answered from that cache: once it restarts and
		// cannot fill itself, such a list is refused in every namespace
		// ("storage is (re)initializing", 429), while paged lists (the
		// DELETECOLLECTION's, ns-doctor's) go to etcd.
		plugintest.Must(t, wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cluster.Dynamic.Resource(v2).Namespace("default").List(ctx, metav1.ListOptions{})
			return apierrors.IsTooManyRequests(err), nil
		}))
	}
	return crd
}

// The controller says it failed, ns-doctor's own pass does not: a
// namespace that holds no object of a custom type whose conversion
// webhook is down, while another namespace holds one. On 1.37 the type's
// storage fails for the controller's requests in every namespace, so its
// NamespaceDeletionContentFailure is True here too, while ns-doctor's
// lists of this namespace succeed (empty). The verdict is not the
// all-clear: exit 3, the type's failure across namespaces found and told
// as its ConversionWebhookDown blocker, with the controller's words.
func TestNoAllClearWhileTheControllerFails(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	crd := brokenConversion(t, name+"-other", name)
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	// The controller's count is retried while answered 429, a minute or
	// two, before its pass fails.
	ns, err := cluster.WaitForConditionStatus(ctx, name, 4*time.Minute, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)
	plugintest.Must(t, err)
	t.Logf("the controller: %+v", ns.Status.Conditions)

	e := explain(t, cp.Kubeconfig, name)
	if e.code != 3 || e.report.Verdict.State != diagnose.StateStuck {
		t.Fatalf("exit %d, verdict %+v\n%s", e.code, e.report.Verdict, e.human)
	}
	b := e.blocker(t, diagnose.BlockerConversionWebhook, "the namespace controller's last pass: Failed to delete all resource types",
		`"strategy":"None"`)
	if !strings.Contains(strings.Join(b.Evidence, "\n"), "what cannot be read is elsewhere: "+name+"-other/elsewhere") {
		t.Errorf("the object elsewhere is not named: %+v", b.Evidence)
	}
	if b.Subject != crd || !strings.Contains(b.Summary, "though ns-doctor lists none in this namespace: the type fails across namespaces") ||
		!strings.Contains(strings.Join(b.Evidence, "\n"), "a list of convs."+strings.TrimPrefix(crd, "convs.")+" across namespaces: ") {
		t.Errorf("blocker %+v", b)
	}
	if !strings.Contains(e.human, "differs") {
		t.Errorf("the conditions table does not show the disagreement:\n%s", e.human)
	}
}

// The counter-example: the same broken conversion webhook, but no object
// anywhere needs converting, so the controller's pass does not fail; the
// namespace, held by a ConfigMap within --grace, is being deleted and
// nothing blocks it: the conversion webhook is not blamed, and the
// controller and ns-doctor agree.
func TestBrokenConversionWithNothingToConvertIsNoCause(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	brokenConversion(t, "")
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
	t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), name, "held") })
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)

	e := explain(t, cp.Kubeconfig, name, "--grace=1h")
	e.agrees(t)
	if e.code != 0 || e.report.Verdict.State != diagnose.StateTerminating || len(e.report.Blockers) != 0 {
		t.Errorf("exit %d, verdict %+v, blockers %+v\n%s", e.code, e.report.Verdict, e.report.Blockers, e.human)
	}
}
