package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestOwnerLogsSayItCannotFinish: the owner of a finalizer runs (KubeBlocks'
// data protection controller, its Deployment ready), its holder's status
// says nothing useful, and only its log says why: the Job that deletes the
// backup's files cannot be created in the terminating namespace. explain
// reads the recent log of the owner's pod (through kube-apiserver's
// pods/log, from a kubelet that serves only logs), names the refusal, and
// says waiting will not help. A namespace held by the same finalizer that
// the log does not name stays an ordinary FinalizersRemaining.
func TestOwnerLogsSayItCannotFinish(t *testing.T) {
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	quiet := name + "-quiet"
	backups, err := cluster.EnsureCRD(ctx, "dataprotection.example.com", "Backup", "backups")
	plugintest.Must(t, err)
	const finalizer = "dataprotection.kubeblocks.io/finalizer"

	kubelet, err := cluster.StartFakeKubelet(ctx, "node-"+name)
	plugintest.Must(t, err)
	t.Cleanup(func() { kubelet.Close(context.Background()) })
	fakeWorkload(t, "kb-system", "kubeblocks-dataprotection")
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dp-" + name, Namespace: "kb-system", Labels: map[string]string{"app": "kubeblocks-dataprotection"}},
		Spec:       v1.PodSpec{NodeName: kubelet.Node, Containers: []v1.Container{{Name: "manager", Image: "registry.example/dataprotection:v1"}}},
	}
	_, err = cluster.Kube.CoreV1().Pods("kb-system").Create(ctx, pod, metav1.CreateOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() { _ = cluster.Kube.CoreV1().Pods("kb-system").Delete(context.Background(), pod.Name, zeroGrace) })
	refused := fmt.Sprintf(`jobs.batch "dp-delete-nightly" is forbidden: unable to create new content in namespace %s because it is being terminated`, name)
	kubelet.SetLog("kb-system", pod.Name, "manager", strings.Join([]string{
		`I1125 06:00:01 backup_controller.go:120 "reconciling" backup="other/weekly"`,
		fmt.Sprintf(`E1125 06:00:02 backup_controller.go:311 "failed to delete backup data" backup="%s/nightly" err="%s"`, name, refused),
		`I1125 06:00:03 backup_controller.go:120 "reconciling" backup="other/weekly"`,
	}, "\n")+"\n")

	for _, ns := range []string{name, quiet} {
		plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
		createHeld(t, backups, "Backup", ns, "nightly", finalizer, nil, condition("Ready", "False", "Deleting", "deleting backup data"))
		plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
		waitCondition(t, ns, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)
	}

	e := explain(t, cp.Kubeconfig, name, "--grace=1h")
	if e.code != 3 {
		t.Fatalf("exit %d, want 3 (stuck)\n%s", e.code, e.human)
	}
	b := e.blocker(t, diagnose.BlockerOwnerCannotFinish, "pod/kb-system/"+pod.Name+" log of container manager: ", "--remove-finalizers="+finalizer)
	if !strings.Contains(strings.Join(b.Evidence, "\n"), "because it is being terminated") || strings.Contains(strings.Join(b.Evidence, "\n"), "other/weekly") {
		t.Errorf("the evidence does not quote the refusal alone: %q", b.Evidence)
	}
	for _, f := range e.report.Finalizers {
		if f.Name == finalizer && f.OwnerState.State != diagnose.OwnerRunningCannotFinish {
			t.Errorf("%s: owner %+v, want %s", f.Name, f.OwnerState, diagnose.OwnerRunningCannotFinish)
		}
	}

	// The log names the other namespace only: the same owner, the same
	// finalizer, an ordinary wait (its grace passed: 0s).
	q := explain(t, cp.Kubeconfig, quiet)
	q.blocker(t, diagnose.BlockerFinalizers, "", "")
	for _, blocker := range q.report.Blockers {
		if blocker.Kind == diagnose.BlockerOwnerCannotFinish {
			t.Errorf("%s: %+v from a log that does not name it", quiet, blocker)
		}
	}
	t.Cleanup(func() {
		for _, ns := range []string{name, quiet} {
			_, _ = cluster.Dynamic.Resource(backups).Namespace(ns).Patch(context.Background(), "nightly", "application/merge-patch+json",
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
}
