package oracle

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/printer"
	"github.com/ns-doctor/ns-doctor/test/support/plugintest"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// until is the condition, and its status, the controller sets once it has
// met what holds a namespace.
type until struct {
	condition v1.NamespaceConditionType
	status    v1.ConditionStatus
}

// shape makes a stuck namespace of one kind.
type shape struct {
	name string
	make func(t *testing.T, ns string) until
	// ordering: the two deletion orders give different conditions here.
	ordering bool
}

// lostNodePod: a pod bound to a node that does not exist (no kubelet will
// confirm its end), a widget whose operator is gone, and a plain
// ConfigMap. Ordered, the controller touches nothing but the pod; not
// ordered, it deletes the ConfigMap in the same pass.
func lostNodePod(t *testing.T, ns string) until {
	ctx := context.Background()
	gvr, err := cluster.EnsureCRD(ctx, "example.com", "Widget", "widgets")
	plugintest.Must(t, err)
	plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
	plugintest.Must(t, cluster.CreateBoundPod(ctx, ns, "on-lost-node", 1))
	plugintest.Must(t, cluster.CreateCustomResource(ctx, gvr, "Widget", ns, "w1", "example.com/cleanup"))
	plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "plain", nil))
	t.Cleanup(func() {
		releaseWidget(ns)
		_ = cluster.Kube.CoreV1().Pods(ns).Delete(context.Background(), "on-lost-node", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	})
	plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
	return until{v1.NamespaceDeletionContentFailure, v1.ConditionTrue}
}

var shapes = []shape{
	{name: "pod on a lost node and a custom resource with a finalizer", make: lostNodePod, ordering: true},
	{name: "pod held by a finalizer", ordering: true, make: func(t *testing.T, ns string) until {
		ctx := context.Background()
		plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
		_, err := cluster.Kube.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/pod-hold"}},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "registry.invalid/none"}}},
		}, metav1.CreateOptions{})
		plugintest.Must(t, err)
		plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "held", nil, "example.com/hold"))
		t.Cleanup(func() { releasePod(ns, "held"); _ = cluster.ReleaseConfigMap(context.Background(), ns, "held") })
		plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
		if ordered {
			// Pods first: the other content is never counted.
			return until{v1.NamespaceDeletionDiscoveryFailure, v1.ConditionFalse}
		}
		return until{v1.NamespaceFinalizersRemaining, v1.ConditionTrue}
	}},
	{name: "finalizers on built-in objects", make: func(t *testing.T, ns string) until {
		ctx := context.Background()
		plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
		plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "held", nil, "example.com/hold"))
		t.Cleanup(func() { _ = cluster.ReleaseConfigMap(context.Background(), ns, "held") })
		plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
		return until{v1.NamespaceFinalizersRemaining, v1.ConditionTrue}
	}},
	{name: "an aggregated API whose service is gone", make: func(t *testing.T, ns string) until {
		ctx := context.Background()
		group := fmt.Sprintf("o%d.example.com", time.Now().UnixNano()%100000)
		plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
		svc, err := cluster.BrokenAPIService(ctx, group, "v1", "kube-system", "gone")
		t.Cleanup(func() { _ = cluster.DeleteAPIService(context.Background(), svc) })
		plugintest.Must(t, err)
		plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
		return until{v1.NamespaceDeletionDiscoveryFailure, v1.ConditionTrue}
	}},
	{name: "a fail-closed webhook whose service is gone", make: func(t *testing.T, ns string) until {
		ctx := context.Background()
		plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
		plugintest.Must(t, cluster.CreateConfigMap(ctx, ns, "guarded", nil))
		plugintest.Must(t, cluster.FailClosedWebhook(ctx, ns, ns, "webhook-system", "guard", configMaps))
		t.Cleanup(func() { _ = cluster.DeleteWebhook(context.Background(), ns) })
		plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
		return until{v1.NamespaceDeletionContentFailure, v1.ConditionTrue}
	}},
	{name: "an aggregated API answering 503", make: func(t *testing.T, ns string) until {
		ctx := context.Background()
		agg := plugintest.AggregatedAPI(t, cluster)
		plugintest.Must(t, cluster.CreateNamespace(ctx, ns))
		plugintest.Must(t, agg.Create(ctx, ns, "g1"))
		agg.Fail(ns, "gadget backend is down")
		t.Cleanup(func() { agg.Recover(ns) })
		plugintest.Must(t, cluster.DeleteNamespace(ctx, ns))
		return until{v1.NamespaceDeletionContentFailure, v1.ConditionTrue}
	}},
}

// Each shape, once the controller has met it: explain's conditions agree
// with the controller's, the plan's are the controller's, and where the
// deletion order matters, explain on auto recognises a controller whose
// gate is set otherwise and names the flag.
func TestConditionsAgreeWithTheController(t *testing.T) {
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			ns := plugintest.UniqueName(t)
			waitFor(t, ns, s.make(t, ns))
			eventually(t, "explain agrees with the controller", func() string { return explainDisagreement(t, ns, orderingFlag) })
			eventually(t, "the plan predicts the controller", func() string { return planDisagreement(t, ns) })
			if !s.ordering {
				return
			}
			if gateRemoved() {
				// 1.37+: no controller runs the other order; off is
				// refused, and auto never names it.
				r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", ns, "--ordered-deletion=off")
				if r.Code != 2 || !strings.Contains(r.Stderr, "removed in 1.37") {
					t.Errorf("--ordered-deletion=off on a 1.37+ controller: exit %d\n%s", r.Code, r.Stderr)
				}
				if explain(t, ns, orderingFlag).Ordering.OtherMatches {
					t.Error("explain names another deletion order on a controller that has none")
				}
				return
			}
			other := map[string]string{"auto": "off", "off": "on"}[orderingFlag]
			r := explain(t, ns, other)
			if !r.Ordering.OtherMatches {
				t.Errorf("with --ordered-deletion=%s on this controller, explain does not name the other order: %+v", other, r.Ordering)
			}
			if orderingFlag == "off" {
				// auto assumes the 1.33 default: the note must lead to off.
				h := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", ns, "--grace=0s")
				if !strings.Contains(h.Stdout, "--ordered-deletion=off") {
					t.Errorf("on a gate-off controller explain does not point to --ordered-deletion=off:\n%s", h.Stdout)
				}
			}
		})
	}
}

// gateRemoved tells a control plane whose namespace controller has no
// OrderedNamespaceDeletion gate (1.37+).
func gateRemoved() bool {
	v, err := cluster.Kube.Discovery().ServerVersion()
	return err == nil && compat.For(v.GitVersion).Has(compat.OrderingGateRemoved)
}

// purge --force, with the namespace controller stopped, does to a namespace what
// the controller does to its twin: the same objects deleted, the same
// ones left, the same conditions.
func TestPurgeDoesWhatTheControllerDoes(t *testing.T) {
	twin := plugintest.UniqueName(t)
	waitFor(t, twin, lostNodePod(t, twin))
	controllerNs := settled(t, twin)

	plugintest.Quiet(t, cp, "namespace-controller") // purge plays its part
	ns := plugintest.UniqueName(t) + "-p"
	lostNodePod(t, ns)
	time.Sleep(2 * time.Second) // past the pod's 1 s grace, as for the twin
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", ns, "--force", "--yes", "--timeout=12s", "--ordered-deletion="+orderingFlag,
		"--backup-dir", t.TempDir(), "-o", "json")
	var rep printer.PurgeDocument
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 5 {
		t.Fatalf("purge --force: exit %d (want 5: the pod never goes), %v\n%s", r.Code, err, r.Stderr)
	}
	if got, want := contents(t, ns), contents(t, twin); !slices.Equal(got, want) {
		t.Errorf("purge left %v, the controller left %v (ordered=%v)", got, want, ordered)
	}
	for _, c := range rep.Conditions {
		want := "(not set)"
		for _, oc := range controllerNs.Status.Conditions {
			if string(oc.Type) == c.Type {
				want = fmt.Sprintf("%s/%s/%s", oc.Status, oc.Reason, strings.ReplaceAll(oc.Message, twin, ns))
			}
		}
		if got := fmt.Sprintf("%s/%s/%s", c.Status, c.Reason, c.Message); got != want {
			t.Errorf("%s:\n purge      %s\n controller %s", c.Type, got, want)
		}
	}
}

// waitFor waits until the controller has met what holds the namespace.
func waitFor(t *testing.T, ns string, u until) {
	t.Helper()
	_, err := cluster.WaitForConditionStatus(context.Background(), ns, 90*time.Second, u.condition, u.status)
	plugintest.Must(t, err)
}

// settled waits until the controller's conditions stop changing (two
// reads a requeue apart agree) and returns the namespace.
func settled(t *testing.T, ns string) *v1.Namespace {
	t.Helper()
	var last string
	var out *v1.Namespace
	err := wait.PollUntilContextTimeout(context.Background(), 9*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		now := fmt.Sprint(n.Status.Conditions)
		done := now == last
		last, out = now, n
		return done, nil
	})
	plugintest.Must(t, err)
	return out
}

// eventually retries check (which returns what disagrees, "" when nothing)
// while the controller may still be between passes.
func eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	var diff string
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(3 * time.Second) {
		if diff = check(); diff == "" {
			return
		}
	}
	t.Errorf("%s: never did:\n%s", what, diff)
}

func explain(t *testing.T, ns, ordering string) printer.DiagnosisDocument {
	t.Helper()
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "explain", ns, "--grace=0s", "-o", "json", "--ordered-deletion="+ordering)
	var rep printer.DiagnosisDocument
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("explain -o json: exit %d, %v\n%s", r.Code, err, r.Stderr)
	}
	return rep
}

func explainDisagreement(t *testing.T, ns, ordering string) string {
	var diff []string
	for _, c := range explain(t, ns, ordering).Conditions {
		if !c.Agree {
			diff = append(diff, fmt.Sprintf("%s: controller %+v, ns-doctor %+v", c.Type, c.Controller, c.Computed))
		}
	}
	return strings.Join(diff, "\n")
}

func planDisagreement(t *testing.T, ns string) string {
	r := plugin.Kubectl(t, cp.Kubeconfig, "ns-doctor", "purge", ns, "-o", "json", "--ordered-deletion="+orderingFlag)
	var rep printer.PurgeDocument
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 {
		t.Fatalf("purge plan: exit %d, %v\n%s", r.Code, err, r.Stderr)
	}
	live, err := cluster.Kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	plugintest.Must(t, err)
	var diff []string
	for _, c := range rep.Conditions {
		want := "(not set)"
		for _, oc := range live.Status.Conditions {
			if string(oc.Type) == c.Type {
				want = fmt.Sprintf("%s/%s/%s", oc.Status, oc.Reason, oc.Message)
			}
		}
		if got := fmt.Sprintf("%s/%s/%s", c.Status, c.Reason, c.Message); got != want {
			diff = append(diff, fmt.Sprintf("%s: purge %s, controller %s", c.Type, got, want))
		}
	}
	return strings.Join(diff, "\n")
}

// contents lists what is left in a namespace: resource/name, sorted.
func contents(t *testing.T, ns string) []string {
	t.Helper()
	mc, err := metadata.NewForConfig(cp.Config)
	plugintest.Must(t, err)
	var out []string
	for _, gvr := range []schema.GroupVersionResource{{Version: "v1", Resource: "pods"}, configMaps, {Group: "example.com", Version: "v1", Resource: "widgets"}} {
		list, err := mc.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		plugintest.Must(t, err)
		for _, item := range list.Items {
			out = append(out, gvr.Resource+"/"+item.Name)
		}
	}
	slices.Sort(out)
	return out
}

func releaseWidget(ns string) {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	_, err := cluster.Dynamic.Resource(gvr).Namespace(ns).Patch(context.Background(), "w1", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Println("releasing widget:", err)
	}
}

func releasePod(ns, name string) {
	_, _ = cluster.Kube.CoreV1().Pods(ns).Patch(context.Background(), name, "application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
}
