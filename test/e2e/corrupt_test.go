package e2e

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/controlplane"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

// Objects the API server cannot read from storage (written undecodable
// behind its back, as a lost encryption key or a bad write leaves them):
// with KEP-3926's gate off (the default), explain says to turn it on; with
// it on, it names each and gives the unsafe DELETE that removes it, which
// then lets the namespace go. Each on its own control plane, at once: a
// kube-apiserver restarted over such an object waits a minute for its
// cache, and the shared one must stay readable.
func TestCorruptObjectsHaveAWayOut(t *testing.T) {
	t.Run("gate off", func(t *testing.T) {
		t.Parallel()
		// Beta and on by default from 1.37: turned off, as 1.32-1.36 ship it.
		own, name := corruptNamespace(t, "AllowUnsafeMalformedObjectDeletion=false")
		e := explain(t, own.Kubeconfig, name)
		e.agrees(t)
		b := e.blocker(t, diagnose.BlockerListFailed, "", "else turn on kube-apiserver's feature gate AllowUnsafeMalformedObjectDeletion")
		if len(b.Actions) != 1 || b.Actions[0].Kind != diagnose.ActionEnableUnsafeDelete || !strings.Contains(b.Summary, "fails to read it from its own storage") {
			t.Errorf("%+v\n%s", b, e.human)
		}
	})
	t.Run("a key that no longer decrypts", func(t *testing.T) {
		t.Parallel()
		own, name := encryptedNamespace(t)
		e := explain(t, own.Kubeconfig, name)
		e.agrees(t)
		key := "/registry/configmaps/" + name + "/broken"
		b := e.blocker(t, diagnose.BlockerListFailed, "unreadable: broken (its storage key, in the server's error: "+key,
			"kubectl delete --raw '/api/v1/namespaces/"+name+"/configmaps/broken?ignoreStoreReadErrorWithClusterBreakingPotential=true'")
		if len(b.Actions) != 3 || b.Actions[2].Kind != diagnose.ActionEtcdDelete || b.Actions[2].Step != "etcdctl del '"+key+"'  # removes it from storage, skipping its finalizers and admission" {
			t.Fatalf("actions %+v", b.Actions)
		}
		// The etcd step, as given, works: the namespace then goes.
		plugintest.Must(t, scenario.DeleteInEtcd(own.EtcdURL, key))
		r := plugintest.Kubectl(t, plugin.Dir, own.Kubeconfig, "ns-doctor", "explain", name, "--wait=60s")
		if r.Code != 0 {
			t.Errorf("the namespace did not go after the key's removal: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
	t.Run("gate on", func(t *testing.T) {
		t.Parallel()
		own, name := corruptNamespace(t, "") // on by default from 1.37
		e := explain(t, own.Kubeconfig, name)
		e.agrees(t)
		b := e.blocker(t, diagnose.BlockerListFailed, "unreadable: broken", "ignoreStoreReadErrorWithClusterBreakingPotential=true")
		want := "kubectl delete --raw '/api/v1/namespaces/" + name + "/configmaps/broken?ignoreStoreReadErrorWithClusterBreakingPotential=true'"
		if len(b.Actions) != 1 || b.Actions[0].Step != want {
			t.Fatalf("actions %+v, want the step %q", b.Actions, want)
		}
		// The step, as given, works: the namespace then goes.
		args := strings.Fields(strings.ReplaceAll(want, "'", ""))
		if r := plugintest.Kubectl(t, plugin.Dir, own.Kubeconfig, args[1:]...); r.Code != 0 {
			t.Fatalf("%s: exit %d: %s", want, r.Code, r.Stderr)
		}
		r := plugintest.Kubectl(t, plugin.Dir, own.Kubeconfig, "ns-doctor", "explain", name, "--wait=60s")
		if r.Code != 0 {
			t.Errorf("the namespace did not go after the unsafe delete: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}

// corruptNamespace starts a control plane with kube-apiserver's gates,
// and deletes a namespace in it holding a ConfigMap that cannot be decoded,
// once the controller has met it.
func corruptNamespace(t *testing.T, gates string) (*controlplane.ControlPlane, string) {
	ctx := context.Background()
	own, err := controlplane.Start(ctx, controlplane.Options{Minimal: true, APIServerFeatureGates: gates})
	plugintest.Must(t, err)
	t.Cleanup(own.Stop)
	c, err := scenario.NewCluster(own.Config)
	plugintest.Must(t, err)
	name := plugintest.UniqueName(t)
	plugintest.Must(t, c.CreateNamespace(ctx, name))
	plugintest.Must(t, c.CreateConfigMap(ctx, name, "fine", nil))
	plugintest.Must(t, scenario.PutInEtcd(own.EtcdURL, "/registry/configmaps/"+name+"/broken", "not an object"))
	plugintest.Must(t, c.DeleteNamespace(ctx, name))
	_, err = c.WaitForConditionStatus(ctx, name, time.Minute, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)
	plugintest.Must(t, err)
	return own, name
}

// encryptedNamespace starts a control plane that encrypts ConfigMaps, and
// deletes a namespace in it holding a ConfigMap encrypted with a key the
// API server no longer has (its config changed, a KMS key lost): the
// server's error names its storage key.
func encryptedNamespace(t *testing.T) (*controlplane.ControlPlane, string) {
	ctx := context.Background()
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	// KEP-3926's gate off (its default up to 1.36): the server's error
	// quotes the storage key, not the object.
	own, err := controlplane.Start(ctx, controlplane.Options{Minimal: true, APIServerFeatureGates: "AllowUnsafeMalformedObjectDeletion=false", EncryptionConfig: `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: ["configmaps"]
  providers:
  - aescbc:
      keys:
      - name: current
        secret: ` + key + "\n"})
	plugintest.Must(t, err)
	t.Cleanup(own.Stop)
	c, err := scenario.NewCluster(own.Config)
	plugintest.Must(t, err)
	name := plugintest.UniqueName(t)
	plugintest.Must(t, c.CreateNamespace(ctx, name))
	plugintest.Must(t, c.CreateConfigMap(ctx, name, "fine", nil))
	plugintest.Must(t, scenario.PutInEtcd(own.EtcdURL, "/registry/configmaps/"+name+"/broken", "k8s:enc:aescbc:v1:lost:"+strings.Repeat("x", 64)))
	plugintest.Must(t, c.DeleteNamespace(ctx, name))
	_, err = c.WaitForConditionStatus(ctx, name, time.Minute, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)
	plugintest.Must(t, err)
	return own, name
}
