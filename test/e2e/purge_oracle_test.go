package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

// The conditions purge's plan computes equal those the real namespace
// controller wrote, on namespaces of different shapes.
func TestPurgePlanConditionsMatchController(t *testing.T) {
	ctx := context.Background()
	shapes := map[string]func(name string) v1.NamespaceConditionType{
		"finalizers and discovery failure": func(name string) v1.NamespaceConditionType {
			group := fmt.Sprintf("p%d.example.com", time.Now().UnixNano()%100000)
			demo, err := cluster.CreateDemo(ctx, name, group, 0)
			t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), demo.APIService) })
			plugintest.Must(t, err)
			return v1.NamespaceFinalizersRemaining
		},
		"fail-closed webhook": func(name string) v1.NamespaceConditionType {
			plugintest.Must(t, cluster.CreateNamespace(ctx, name))
			plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil))
			plugintest.Must(t, cluster.FailClosedWebhook(ctx, name, name, "webhook-system", "guard", configMaps))
			t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), name) })
			plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
			return v1.NamespaceDeletionContentFailure
		},
		"aggregated API answering 503": func(name string) v1.NamespaceConditionType {
			aggregatedDownNamespace(t, startAggregated(t), name)
			return v1.NamespaceDeletionContentFailure
		},
		"pod on a dead node": func(name string) v1.NamespaceConditionType {
			plugintest.Must(t, cluster.CreateNamespace(ctx, name))
			plugintest.Must(t, cluster.CreateBoundPod(ctx, name, "stuck", 1))
			plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "waits", nil, "example.com/hold"))
			plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
			return v1.NamespaceDeletionContentFailure
		},
	}
	for shape, create := range shapes {
		t.Run(shape, func(t *testing.T) {
			name := plugintest.UniqueName(t)
			ns := waitCondition(t, name, create(name), v1.ConditionTrue)
			r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", name, "-o", "json")
			if r.Code != 0 {
				t.Fatalf("purge plan: exit %d\n%s", r.Code, r.Stderr)
			}
			var rep printer.PurgeDocument
			plugintest.Must(t, json.Unmarshal([]byte(r.Stdout), &rep))
			if len(rep.Conditions) != 5 {
				t.Fatalf("plan has %d conditions", len(rep.Conditions))
			}
			for _, c := range rep.Conditions {
				got := fmt.Sprintf("%s/%s/%s", c.Status, c.Reason, c.Message)
				want := "(not set)"
				for _, oc := range ns.Status.Conditions {
					if string(oc.Type) == c.Type {
						want = fmt.Sprintf("%s/%s/%s", oc.Status, oc.Reason, oc.Message)
					}
				}
				if got != want {
					t.Errorf("%s:\n purge      %s\n controller %s", c.Type, got, want)
				}
			}
		})
	}
}
