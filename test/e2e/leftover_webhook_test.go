package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/installers"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// marks are a lifecycle manager's labels and annotations for an
// installation in home.
type marks func(home string) (labels, annotations map[string]string)

func helm(home string) (map[string]string, map[string]string) {
	return map[string]string{"app.kubernetes.io/managed-by": "Helm"}, helmMarks("ledger", home)
}

func olm(home string) (map[string]string, map[string]string) {
	return map[string]string{"olm.owner": "ledger.v1.2.0", "olm.owner.namespace": home, "olm.owner.kind": "ClusterServiceVersion"}, nil
}

// leftoverWebhook makes a namespace whose content a fail-closed webhook
// catches; its configuration carries the marks given (a lifecycle
// manager's installation in home), its Service home/ledger-webhook is
// missing, home is Active (the Service could come back there, were
// anything to make it). It returns the namespace, terminating, and home.
func leftoverWebhook(t *testing.T, m marks) (string, string) {
	t.Helper()
	ctx := context.Background()
	name := plugintest.UniqueName(t)
	home := name + "-op"
	labels, annotations := m(home)
	plugintest.Must(t, cluster.CreateNamespace(ctx, home))
	t.Cleanup(func() { _ = cluster.DeleteNamespace(context.Background(), home) })
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil))
	plugintest.Must(t, cluster.FailClosedWebhook(ctx, name, name, home, "ledger-webhook", configMaps))
	t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), name) })
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}})
	plugintest.Must(t, err)
	_, err = cluster.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)
	return name, home
}

func helmMarks(release, ns string) map[string]string {
	return map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns}
}

// installerOf is the installer the JSON names for the webhook blocker.
func installerOf(t *testing.T, e explained) (*installers.Installer, []diagnose.ActionKind) {
	t.Helper()
	for _, b := range e.report.Blockers {
		if b.Kind == diagnose.BlockerWebhook {
			var kinds []diagnose.ActionKind
			for _, a := range b.Actions {
				kinds = append(kinds, a.Kind)
			}
			return b.Installer, kinds
		}
	}
	t.Fatalf("no BlockingWebhook:\n%s", e.human)
	return nil, nil
}

// Class 6: an operator its lifecycle manager removed (`helm uninstall`:
// the release's records deleted, its Deployment and Service with them)
// left its webhook configuration behind. The owner is not running, said
// from what is there: no release record, no workload bearing the
// release's marks. Deleting the leftover comes first; restoring a Service
// nothing will run is no step.
func TestWebhookLeftByAnUninstalledRelease(t *testing.T) {
	name, home := leftoverWebhook(t, helm)
	e := explain(t, cp.Kubeconfig, name)
	if e.code != 3 {
		t.Fatalf("exit code %d, want 3", e.code)
	}
	e.agrees(t)
	b := e.blocker(t, diagnose.BlockerWebhook, "installed by Helm release "+home+"/ledger: uninstalled, no record of it left (no record: nothing found by kubectl get secrets -l owner=helm,name=ledger",
		"nothing will serve it again (its operator was uninstalled)")
	if !strings.Contains(strings.Join(b.Evidence, "\n"), "no deployment, statefulset or daemonset of it in "+home) || !strings.Contains(b.Summary, "left behind") {
		t.Errorf("blocker %+v", b)
	}
	inst, kinds := installerOf(t, e)
	if inst == nil || inst.State != installers.Gone || !inst.Removed() || len(kinds) != 2 || kinds[0] != diagnose.ActionDeleteWebhookConfiguration || kinds[1] != diagnose.ActionPurge {
		t.Errorf("installer %+v, steps %v", inst, kinds)
	}
	if strings.Contains(b.NextStep, "restore service") {
		t.Errorf("restoring a service nothing runs offered: %s", b.NextStep)
	}
}

// `helm uninstall --keep-history`: the latest record says uninstalled.
// And OLM's: the configuration names a ClusterServiceVersion whose API is
// not served (OLM itself gone): no record either.
func TestWebhookLeftByItsManagerWhateverTheRecord(t *testing.T) {
	t.Run("kept history", func(t *testing.T) {
		name, home := leftoverWebhook(t, helm)
		releaseRecord(t, home, "ledger", "3", "uninstalled")
		e := explain(t, cp.Kubeconfig, name)
		inst, kinds := installerOf(t, e)
		if inst == nil || inst.State != installers.Uninstalled || inst.Record != "secret sh.helm.release.v1.ledger.v3: uninstalled" || kinds[0] != diagnose.ActionDeleteWebhookConfiguration {
			t.Errorf("installer %+v, steps %v\n%s", inst, kinds, e.human)
		}
	})
	t.Run("olm", func(t *testing.T) {
		name, home := leftoverWebhook(t, olm)
		e := explain(t, cp.Kubeconfig, name)
		e.blocker(t, diagnose.BlockerWebhook, "installed by OLM ClusterServiceVersion "+home+"/ledger.v1.2.0: uninstalled, no record of it left", "nothing will serve it again")
		if inst, _ := installerOf(t, e); inst == nil || inst.State != installers.Gone {
			t.Errorf("installer %+v", inst)
		}
	})
}

// releaseRecord makes a Helm release record as Helm's secrets driver
// labels it (its data is not read).
func releaseRecord(t *testing.T, ns, release, version, status string) {
	t.Helper()
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1." + release + ".v" + version, Namespace: ns,
		Labels: map[string]string{"owner": "helm", "name": release, "version": version, "status": status}},
		Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte("H4sI")}}
	_, err := cluster.Kube.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{})
	plugintest.Must(t, err)
}

// The counter-examples: the release is deployed (its operator is being
// upgraded, or its pods are down): the Service can come back, and
// restoring it stays the first step; the record is gone but a Deployment
// bearing the release's marks still runs (a resource Helm was told to
// keep): nothing is concluded from the record alone.
func TestWebhookOfAnInstalledReleaseIsNotALeftover(t *testing.T) {
	t.Run("deployed", func(t *testing.T) {
		name, home := leftoverWebhook(t, helm)
		releaseRecord(t, home, "ledger", "1", "superseded")
		releaseRecord(t, home, "ledger", "2", "deployed")
		e := explain(t, cp.Kubeconfig, name)
		b := e.blocker(t, diagnose.BlockerWebhook, "installed by Helm release "+home+"/ledger: installed (secret sh.helm.release.v1.ledger.v2: deployed)", "restore service "+home+"/ledger-webhook")
		if strings.Contains(b.NextStep, "nothing will serve it again") || strings.Contains(b.Summary, "left behind") {
			t.Errorf("blocker %+v", b)
		}
	})
	t.Run("a workload of it runs", func(t *testing.T) {
		name, home := leftoverWebhook(t, helm)
		labels := map[string]string{"app": "ledger"}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "ledger-operator", Namespace: home, Annotations: helmMarks("ledger", home)},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "op", Image: "ledger:1"}}}}}}
		_, err := cluster.Kube.AppsV1().Deployments(home).Create(context.Background(), d, metav1.CreateOptions{})
		plugintest.Must(t, err)
		e := explain(t, cp.Kubeconfig, name)
		b := e.blocker(t, diagnose.BlockerWebhook, "still running: deployment/ledger-operator", "restore service")
		if inst, _ := installerOf(t, e); inst == nil || inst.Removed() || strings.Contains(b.NextStep, "nothing will serve it again") {
			t.Errorf("installer %+v, blocker %+v", inst, b)
		}
	})
}
