package rescue

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(kind, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace("shop")
	return u
}

func TestReferences(t *testing.T) {
	podSpec := map[string]any{
		"serviceAccountName": "web",
		"imagePullSecrets":   []any{map[string]any{"name": "pull"}},
		"volumes": []any{
			map[string]any{"configMap": map[string]any{"name": "settings"}},
			map[string]any{"configMap": map[string]any{"name": "maybe", "optional": true}},
			map[string]any{"secret": map[string]any{"secretName": "tls"}},
			map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "data"}},
			map[string]any{"projected": map[string]any{"sources": []any{map[string]any{"secret": map[string]any{"name": "token"}}}}},
		},
		"containers": []any{map[string]any{
			"envFrom": []any{map[string]any{"secretRef": map[string]any{"name": "env"}}},
			"env":     []any{map[string]any{"valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "keys"}}}},
		}},
	}
	fromPod := []string{"ServiceAccount/web", "Secret/pull", "ConfigMap/settings", "Secret/tls", "PersistentVolumeClaim/data", "Secret/token", "Secret/env", "ConfigMap/keys"}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want []string
	}{
		{"a pod names what it uses; optional references prove nothing", obj("Pod", "p", map[string]any{"spec": podSpec}), fromPod},
		{"any kind with a pod template", obj("Rollout", "r", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": podSpec}}}), fromPod},
		{"a CronJob's job template", obj("CronJob", "c", map[string]any{"spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"serviceAccountName": "cron"}}}}}}), []string{"ServiceAccount/cron"}},
		{"a StatefulSet's Service", obj("StatefulSet", "s", map[string]any{"spec": map[string]any{"serviceName": "db"}}), []string{"Service/db"}},
		{"a RoleBinding's Role and its own namespace's ServiceAccounts, not a ClusterRole or another namespace's", obj("RoleBinding", "rb", map[string]any{
			"roleRef":  map[string]any{"kind": "Role", "name": "reader"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "web"}, map[string]any{"kind": "ServiceAccount", "name": "far", "namespace": "other"}, map[string]any{"kind": "User", "name": "ann"}},
		}), []string{"Role/reader", "ServiceAccount/web"}},
		{"a ClusterRole is not the namespace's", obj("RoleBinding", "rb", map[string]any{"roleRef": map[string]any{"kind": "ClusterRole", "name": "view"}}), nil},
		{"an Ingress's Services and Secrets", obj("Ingress", "i", map[string]any{"spec": map[string]any{
			"tls":   []any{map[string]any{"secretName": "cert"}},
			"rules": []any{map[string]any{"http": map[string]any{"paths": []any{map[string]any{"backend": map[string]any{"service": map[string]any{"name": "web"}}}}}}},
		}}), []string{"Secret/cert", "Service/web"}},
		{"owners of namespaced kinds only", obj("ReplicaSet", "rs", map[string]any{"metadata": map[string]any{"ownerReferences": []any{
			map[string]any{"kind": "Deployment", "name": "web", "apiVersion": "apps/v1", "uid": "1"},
			map[string]any{"kind": "Node", "name": "n1", "apiVersion": "v1", "uid": "2"},
		}}}), []string{"Deployment/web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range references(tc.obj, map[string]bool{"Deployment": true}) {
				got = append(got, r.kind+"/"+r.name)
				if r.by != tc.obj.GetKind()+"/"+tc.obj.GetName() {
					t.Errorf("%s named by %q", r.kind+"/"+r.name, r.by)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLost(t *testing.T) {
	refs := []ref{
		{kind: "ConfigMap", name: "settings", by: "Pod/b"},
		{kind: "ConfigMap", name: "settings", by: "Pod/a"},
		{kind: "ConfigMap", name: "settings", by: "Pod/a"},
		{kind: "Secret", name: "kept", by: "Pod/a"},
		{kind: "PersistentVolumeClaim", name: "data", by: "PersistentVolume/pv1"},
	}
	got := lost(refs, map[string]bool{"Secret/kept": true})
	want := []Lost{
		{Kind: "ConfigMap", Name: "settings", By: []string{"Pod/a", "Pod/b"}},
		{Kind: "PersistentVolumeClaim", Name: "data", By: []string{"PersistentVolume/pv1"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lost %+v, want %+v", got, want)
	}
	if got := lost(refs[3:4], map[string]bool{"Secret/kept": true}); len(got) != 0 {
		t.Errorf("what is saved is not lost: %+v", got)
	}
}
