package purge_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// --delete-apiservice against the real kube-apiserver: the plan plays the
// APIService's deletion and then finalizes; a server dry run sends its
// DELETE as a dry run and changes nothing; --force saves it, deletes it,
// and the namespace goes; the saved copy re-applies.
func TestDeleteAPIService(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	group := fmt.Sprintf("x%d.example.com", time.Now().UnixNano()%100000)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "plain", nil))
	svc, err := cluster.BrokenAPIService(ctx, group, "v1", "kube-system", "gone-"+name)
	t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), svc) })
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	flag := "--delete-apiservice=" + svc

	for _, mode := range []string{"--dry-run=client", "--dry-run=server"} {
		rep, r := purgeJSON(t, name, mode, flag)
		if r.Code != 0 || rep.Outcome != purge.OutcomePlanned || !rep.Finalize.Would {
			t.Fatalf("%s: exit %d, outcome %s, finalize %+v\n%s", mode, r.Code, rep.Outcome, rep.Finalize, r.Stderr)
		}
		if !slices.ContainsFunc(rep.Steps, func(s printer.StepDocument) bool {
			return s.Verb == "delete" && s.Resource == "apiservices.apiregistration.k8s.io" && s.Name == svc && s.Status == purge.StepPlanned
		}) {
			t.Errorf("%s: the plan's steps lack the APIService's deletion: %+v", mode, rep.Steps)
		}
		if len(rep.Escalations) != 1 || rep.Escalations[0].Flag != "--delete-apiservice" {
			t.Errorf("%s: escalations %+v", mode, rep.Escalations)
		}
		if _, err := cluster.Dynamic.Resource(apiServicesGVR).Get(ctx, svc, metav1.GetOptions{}); err != nil {
			t.Fatalf("%s changed the cluster: apiservice %s: %v", mode, svc, err)
		}
	}

	dir := filepath.Join(t.TempDir(), "backup")
	rep, r := purgeJSON(t, name, "--force", "--yes", flag, "--backup-dir", dir, "--timeout=2m")
	if r.Code != 0 || rep.Outcome != purge.OutcomeGone {
		t.Fatalf("--force: exit %d, outcome %s: %s\n%s", r.Code, rep.Outcome, rep.Message, r.Stderr)
	}
	if !slices.ContainsFunc(rep.ChangeDetails, func(c printer.ChangeDetail) bool { return c.Kind == purge.ChangeDeletedAPIService && c.Name == svc }) {
		t.Errorf("changes %q do not say the APIService was deleted", rep.Changes)
	}
	if _, err := cluster.Dynamic.Resource(apiServicesGVR).Get(ctx, svc, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("apiservice %s still there: %v", svc, err)
	}
	saved, err := filepath.Glob(filepath.Join(dir, "cluster", "*"+svc+"*"))
	if err != nil || len(saved) != 1 {
		t.Fatalf("the APIService was not saved to the backup's cluster/ folder: %v %v", saved, err)
	}
	if body, _ := os.ReadFile(saved[0]); !strings.Contains(string(body), "kind: APIService") {
		t.Errorf("the saved copy is not the APIService:\n%s", body)
	}
	if r := plugintest.Command(t, "", time.Minute, []string{"KUBECONFIG=" + cp.Kubeconfig}, "kubectl", "apply", "-f", saved[0]); r.Code != 0 {
		t.Fatalf("the saved APIService does not re-apply: %s", r.Stderr)
	}
	if _, err := cluster.Dynamic.Resource(apiServicesGVR).Get(ctx, svc, metav1.GetOptions{}); err != nil {
		t.Fatalf("re-applied apiservice %s: %v", svc, err)
	}
}

// Bad input is refused with one line and exit 2 before anything is sent:
// an APIService that does not exist, one served by kube-apiserver itself,
// and one that is Available.
func TestDeleteAPIServiceRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	agg := startAggregated(t) // an aggregated API that is Available
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	for _, tc := range []struct{ value, want string }{
		{"v1.nothing.example.com", "no APIService of that name"},
		{"v1.apps", "served by kube-apiserver itself (local)"},
		{agg.APIService, "is Available, so it does not keep namespaces from going"},
		{"Not_A_Name", "invalid --delete-apiservice"},
	} {
		for _, mode := range []string{"--dry-run=client", "--force"} {
			r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, mode, "--yes", "--delete-apiservice="+tc.value, "--backup-dir", t.TempDir())
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			if r.Code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("%s %s: exit %d, stderr %q; want exit 2 and one line with %q", mode, tc.value, r.Code, r.Stderr, tc.want)
			}
		}
	}
	if _, err := cluster.Dynamic.Resource(apiServicesGVR).Get(ctx, agg.APIService, metav1.GetOptions{}); err != nil {
		t.Fatalf("the Available APIService was touched: %v", err)
	}
	if _, err := cluster.Dynamic.Resource(apiServicesGVR).Get(ctx, "v1.apps", metav1.GetOptions{}); err != nil {
		t.Fatalf("the local APIService was touched: %v", err)
	}
}
