package rescue

import (
	"context"
	"fmt"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// TestWhatAPolicySeesOfTheControllers records, through a policy's
// messageExpression, the admission request kube-apiserver hands a
// ValidatingAdmissionPolicy for the namespace controller's
// DELETECOLLECTION and for the garbage collector's DELETE: the identities
// and the operation rescue's hold matches on.
func TestWhatAPolicySeesOfTheControllers(t *testing.T) {
	ctx := context.Background()
	ns := plugintest.UniqueName(t)
	k := cluster.Kube
	_, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	owner, err := k.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	_, err = k.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}}}, metav1.CreateOptions{})
	plugintest.Must(t, err)

	name := "probe-" + ns
	policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: admissionv1.ValidatingAdmissionPolicySpec{
		FailurePolicy: ptr.To(admissionv1.Fail),
		MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: []admissionv1.OperationType{admissionv1.OperationAll},
			Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
		// The test's own user (admin) passes: it deletes the owner.
		MatchConditions: []admissionv1.MatchCondition{{Name: "ns", Expression: `request.namespace == "` + ns + `" && request.userInfo.username != "admin"`}},
		Validations: []admissionv1.Validation{{Expression: "false",
			MessageExpression: `"SEEN op=" + request.operation + " name=[" + (has(request.name) ? request.name : "") + "] old=" + (oldObject == null ? "null" : oldObject.metadata.name) + " user=" + request.userInfo.username`}},
	}}
	_, err = k.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	plugintest.Must(t, err)
	t.Cleanup(func() {
		_ = k.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = k.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	_, err = k.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}}}, metav1.CreateOptions{})
	plugintest.Must(t, err)
	// The API server loads the binding asynchronously: in force once the
	// garbage collector's dry-run DELETE of the dependent is refused.
	cfg := rest.CopyConfig(cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:generic-garbage-collector"}
	asGC, err := kubernetes.NewForConfig(cfg)
	plugintest.Must(t, err)
	eventually(t, 30*time.Second, "the probe policy in force", func() (bool, string) {
		err := asGC.CoreV1().ConfigMaps(ns).Delete(ctx, "dependent", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "SEEN"), fmt.Sprintf("a dry-run DELETE answered %v", err)
	})

	// The garbage collector deletes the dependent of a deleted owner.
	plugintest.Must(t, k.CoreV1().ConfigMaps(ns).Delete(ctx, "owner", metav1.DeleteOptions{}))
	gcUser, nsUser := "system:serviceaccount:kube-system:generic-garbage-collector", "system:serviceaccount:kube-system:namespace-controller"
	if credentials == "user" {
		gcUser, nsUser = "system:kube-controller-manager", "system:kube-controller-manager"
	}
	gcSaw := "SEEN op=DELETE name=[dependent] old=dependent user=" + gcUser
	eventually(t, 60*time.Second, "the garbage collector's DELETE refused (its log)", func() (bool, string) {
		data, _ := os.ReadFile(filepath.Join(cp.Dir, "kube-controller-manager.log"))
		return strings.Contains(string(data), gcSaw), "not in kube-controller-manager.log"
	})

	plugintest.Must(t, k.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	var message string
	eventually(t, 60*time.Second, "the namespace controller's DELETECOLLECTION refused (its condition)", func() (bool, string) {
		got, err := k.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionContentFailure && strings.Contains(c.Message, "SEEN") {
				message = c.Message
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %+v", got.Status.Conditions)
	})
	t.Logf("the namespace controller's condition: %s", message)
	// Each item of the collection is admitted as a DELETE of its own,
	// with the item as oldObject but without a name (kube-apiserver reuses
	// the collection's attributes, whose name is empty; the refusal names
	// the object "Unknown"): a policy must read oldObject.metadata.name,
	// never request.name, and match the user, not the verb.
	want := "SEEN op=DELETE name=[] old=dependent user=" + nsUser
	if !strings.Contains(message, want) {
		t.Errorf("condition %q lacks %q", message, want)
	}
	// Release the namespace for the next tests.
	_ = k.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
}
