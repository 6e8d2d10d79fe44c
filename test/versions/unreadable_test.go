package versions

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/internal/purge"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// A Secret encrypted with a key the API server no longer has (the
// encryption-key case): explain's ContentDeletionFailed equals the
// controller's on each version, in each version's words (1.37 quotes the
// first storage error); purge --dry-run=server proves the object
// unreadable with the unsafe DELETE as a dry run on 1.37, and never sends
// that request to 1.36, although its list names the object too.
func TestUnreadableSecretFollowsTheVersion(t *testing.T) {
	for _, b := range both() {
		ctx := context.Background()
		ns := plugintest.UniqueName(t) + "-" + strings.ReplaceAll(b.minor, ".", "")
		plugintest.Must(t, b.cluster.CreateNamespace(ctx, ns))
		_, err := b.cluster.Kube.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fine"}}, metav1.CreateOptions{})
		plugintest.Must(t, err)
		key := "/registry/secrets/" + ns + "/broken"
		plugintest.Must(t, scenario.PutInEtcd(b.cp.EtcdURL, key, "k8s:enc:aescbc:v1:lost:"+strings.Repeat("x", 64)))
		t.Cleanup(func() { _ = scenario.DeleteInEtcd(b.cp.EtcdURL, key) })
		plugintest.Must(t, b.cluster.DeleteNamespace(ctx, ns))
		_, err = b.cluster.WaitForConditionStatus(ctx, ns, time.Minute, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)
		plugintest.Must(t, err)

		doc := decode[printer.DiagnosisDocument](t, plugin.Kubectl(t, b.cp.Kubeconfig, "ns-doctor", "explain", ns, "-o", "json"))
		words := map[string]string{"1.36": "failed to read one or more secrets from the storage", "1.37": "failed to read one or more secrets from the storage: StorageError: corrupt object"}[b.minor]
		for _, c := range doc.Conditions {
			if c.Type != string(v1.NamespaceDeletionContentFailure) {
				continue
			}
			if !c.Agree || c.Controller == nil || !strings.Contains(c.Controller.Message, words) {
				t.Errorf("%s: ContentDeletionFailure agree=%v, controller %+v, computed %+v; want %q in both", b.minor, c.Agree, c.Controller, c.Computed, words)
			}
		}

		r := plugin.Kubectl(t, b.cp.Kubeconfig, "ns-doctor", "purge", ns, "--dry-run=server", "-o", "json", "-v=8")
		plan := decode[printer.PurgeDocument](t, r)
		proven := slices.ContainsFunc(plan.WarningDetails, func(w printer.WarningDetail) bool {
			return w.Kind == purge.WarnUnreadableProven && w.Name == "broken" && strings.HasSuffix(w.Request, "/namespaces/"+ns+"/secrets/broken")
		})
		sent := strings.Contains(r.Stderr, "ignoreStoreReadErrorWithClusterBreakingPotential")
		if proven != (b == newer) || sent != (b == newer) {
			t.Errorf("%s: proven %v, unsafe delete sent %v\n%+v", b.minor, proven, sent, plan.WarningDetails)
		}
		if b == newer {
			human := plugin.Kubectl(t, b.cp.Kubeconfig, "ns-doctor", "purge", ns, "--dry-run=server")
			if !strings.Contains(human.Stdout, "secrets/broken cannot be read from storage, proven") {
				t.Errorf("the human view does not say it:\n%s", human.Stdout)
			}
		}
	}
}

// What purge's proof of unreadable objects (prover) counts on, asked of
// the real servers: 1.37 answers the unsafe DELETE's dry run of a
// decodable object with 409 (ns-doctor's
// "decodable now"), 1.36 refuses the dry run itself (422), which is why it
// is never sent there.
func TestUnsafeDryRunAnswers(t *testing.T) {
	for _, b := range both() {
		ctx := context.Background()
		ns := plugintest.UniqueName(t) + "-" + strings.ReplaceAll(b.minor, ".", "")
		plugintest.Must(t, b.cluster.CreateNamespace(ctx, ns))
		plugintest.Must(t, b.cluster.CreateConfigMap(ctx, ns, "readable", nil))
		err := b.cluster.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, "readable", metav1.DeleteOptions{
			DryRun: []string{metav1.DryRunAll}, IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true)})
		if b == newer && !apierrors.IsConflict(err) || b == older && !apierrors.IsInvalid(err) {
			t.Errorf("%s: the unsafe dry run of a decodable object answered %v", b.minor, err)
		}
		plugintest.Must(t, b.cluster.DeleteNamespace(ctx, ns))
	}
}
