package e2e

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
	"github.com/ns-doctor/ns-doctor/test/support/scenario"
)

func startAggregated(t *testing.T) *scenario.AggregatedAPI {
	return plugintest.AggregatedAPI(t, cluster)
}

// aggregatedDownNamespace holds gadgets whose aggregated API answers 503
// in this namespace after discovery listed it, and a configmap held by a
// finalizer; it is deleted, and the controller has met the 503. Cleanup
// lets the namespace go.
func aggregatedDownNamespace(t *testing.T, agg *scenario.AggregatedAPI, name string) *v1.Namespace {
	t.Helper()
	ctx := context.Background()
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
	plugintest.Must(t, agg.Create(ctx, name, "g1"))
	agg.Fail(name, "gadget backend is down")
	t.Cleanup(func() {
		agg.Recover(name)
		_ = cluster.ReleaseConfigMap(context.Background(), name, "held")
	})
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	return waitCondition(t, name, v1.NamespaceDeletionContentFailure, v1.ConditionTrue)
}

// A list answering 503 is named with the aggregated API behind it, the
// rest of the namespace is still diagnosed, and the conditions explain
// computes equal those the controller wrote after meeting the 503.
func TestBlockerAggregatedAPIAnswers503(t *testing.T) {
	agg := startAggregated(t)
	name := plugintest.UniqueName(t)
	aggregatedDownNamespace(t, agg, name)

	e := explain(t, cp.Kubeconfig, name)
	if e.code != 3 {
		t.Errorf("exit %d, want 3 (stuck)", e.code)
	}
	b := e.blocker(t, diagnose.BlockerListFailed, "gadget backend is down", "kubectl delete apiservice "+agg.APIService)
	e.blocker(t, diagnose.BlockerFinalizers, "example.com/hold on 1 of 1 configmaps", "--remove-finalizers=")
	wantEvidence := []string{"apiservice/" + agg.APIService + " Available=True: discovery answered, the list did not",
		"service default/" + agg.ServiceName + ": ExternalName localhost"}
	for _, want := range wantEvidence {
		if !containsPrefix(b.Evidence, want) {
			t.Errorf("evidence %q lacks %q", b.Evidence, want)
		}
	}
	e.agrees(t)
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

// A type whose list answers 404 is skipped by the controller as not
// supporting list; explain skips it too: no blocker, the type shown with
// its error, and the conditions equal the controller's.
func TestExplainSkipsTypeAnswering404LikeTheController(t *testing.T) {
	ctx := context.Background()
	agg := startAggregated(t)
	name := plugintest.UniqueName(t)
	plugintest.Must(t, cluster.CreateNamespace(ctx, name))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, name, "held", nil, "example.com/hold"))
	plugintest.Must(t, agg.Create(ctx, name, "g1"))
	agg.FailWith(name, apierrors.NewNotFound(agg.GVR.GroupResource(), ""))
	t.Cleanup(func() {
		_ = cluster.ReleaseConfigMap(context.Background(), name, "held")
	})
	plugintest.Must(t, cluster.DeleteNamespace(ctx, name))
	waitCondition(t, name, v1.NamespaceFinalizersRemaining, v1.ConditionTrue)

	e := explain(t, cp.Kubeconfig, name)
	for _, b := range e.report.Blockers {
		if b.Kind == diagnose.BlockerListFailed {
			t.Errorf("a 404 raised %s: %+v", b.Kind, b)
		}
	}
	shown := false
	for _, c := range e.report.Content {
		shown = shown || (c.Resource == agg.GVR.Resource && apierror.ClassifyMessage(c.Error).Kind == apierror.NotFound)
	}
	if !shown {
		t.Errorf("gadgets not shown with their error: %+v", e.report.Content)
	}
	e.blocker(t, diagnose.BlockerFinalizers, "example.com/hold on 1 of 1 configmaps", "--remove-finalizers=")
	e.agrees(t)
}
