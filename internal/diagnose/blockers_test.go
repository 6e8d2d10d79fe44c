package diagnose_test

import (
	"github.com/ns-doctor/ns-doctor/internal/installers"

	"errors"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	. "github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

var (
	now        = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgets    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	metricsGV  = schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	allVerbs   = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
)

// observation is a namespace "demo" deleted 10 minutes ago whose
// controller has looked at it, with pods, configmaps and widgets served.
func observation() Observation {
	deleted := metav1.NewTime(now.Add(-10 * time.Minute))
	ns := &v1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", UID: "u", DeletionTimestamp: &deleted, Labels: map[string]string{"kubernetes.io/metadata.name": "demo"}},
		Spec:       v1.NamespaceSpec{Finalizers: []v1.FinalizerName{"kubernetes"}},
		Status: v1.NamespaceStatus{Phase: v1.NamespaceTerminating, Conditions: []v1.NamespaceCondition{
			{Type: v1.NamespaceDeletionDiscoveryFailure, Status: v1.ConditionFalse, Reason: "ResourcesDiscovered", Message: "All resources successfully discovered"},
		}},
	}
	return Observation{
		Namespace: ns, Now: now, Ordering: compat.Ordering{Ordered: true},
		Resources: []*metav1.APIResourceList{
			{GroupVersion: "v1", APIResources: []metav1.APIResource{
				{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: allVerbs},
				{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: allVerbs},
			}},
			{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: allVerbs}}},
		},
		Snapshot: &deletion.Snapshot{
			Lists:    map[schema.GroupVersionResource]*metav1.PartialObjectMetadataList{},
			ListErrs: map[schema.GroupVersionResource]error{},
		},
		Services: map[string]ServiceState{},
	}
}

func terminatingItem(name string, ago time.Duration, finalizers ...string) metav1.PartialObjectMetadata {
	at := metav1.NewTime(now.Add(-ago))
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), DeletionTimestamp: &at, Finalizers: finalizers}}
}

func with(obs Observation, gvr schema.GroupVersionResource, items ...metav1.PartialObjectMetadata) Observation {
	obs.Snapshot.Lists[gvr] = &metav1.PartialObjectMetadataList{Items: items}
	return obs
}

func apiService(name, group, version, svcNamespace, svcName, reason string) apiregv1.APIService {
	return apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apiregv1.APIServiceSpec{Group: group, Version: version, Service: &apiregv1.ServiceReference{Namespace: svcNamespace, Name: svcName}},
		Status:     apiregv1.APIServiceStatus{Conditions: []apiregv1.APIServiceCondition{{Type: apiregv1.Available, Status: apiregv1.ConditionFalse, Reason: reason, Message: "down"}}},
	}
}

func failClosed(cfg, svcNamespace, svcName string, gvr schema.GroupVersionResource, ops ...admissionregv1.OperationType) Webhook {
	return Webhook{
		Configuration: cfg, Name: "deny." + cfg, Type: "Validating", FailurePolicy: "Fail", TimeoutSeconds: 10,
		Service: &ServiceRef{Namespace: svcNamespace, Name: svcName, Port: 443, Path: "/validate"},
		Rules: []admissionregv1.RuleWithOperations{{Operations: ops,
			Rule: admissionregv1.Rule{APIGroups: []string{gvr.Group}, APIVersions: []string{gvr.Version}, Resources: []string{gvr.Resource}}}},
	}
}

// discoveryFailed: metrics.k8s.io/v1beta1 fails discovery.
func discoveryFailed(obs Observation) Observation {
	obs.FailedGroups = map[schema.GroupVersion]error{metricsGV: errors.New("stale GroupVersion discovery: metrics.k8s.io/v1beta1")}
	obs.DiscoveryErr = &discovery.ErrGroupDiscoveryFailed{Groups: obs.FailedGroups}
	return obs
}

// blockerCase is an observation built by hand, and the blocker it must
// give: its kind, and what its summary, evidence and next step say.
type blockerCase struct {
	name                    string
	obs                     func() Observation
	kind                    BlockerKind
	summary, evidence, next string
	state                   State
}

// blockerCases are every blocker kind, from observations built by hand.
func blockerCases() []blockerCase {
	return []blockerCase{
		{
			name: "aggregated API down",
			obs: func() Observation {
				obs := discoveryFailed(observation())
				obs.APIServices = []apiregv1.APIService{apiService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "kube-system", "metrics-server", "ServiceNotFound")}
				obs.Services["kube-system/metrics-server"] = ServiceState{}
				return obs
			},
			kind: BlockerAPIServiceUnavailable, summary: "will not finalize any namespace",
			evidence: "service kube-system/metrics-server: not found",
			next:     "restore the service kube-system/metrics-server behind apiservice/v1beta1.metrics.k8s.io, or if that API is gone for good: kubectl ns-doctor purge demo --delete-apiservice=v1beta1.metrics.k8s.io", state: StateStuck,
		},
		{
			name: "aggregated API whose running backend fails discovery",
			obs: func() Observation {
				obs := discoveryFailed(observation())
				obs.APIServices = []apiregv1.APIService{apiService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "kube-system", "metrics-server", "FailedDiscoveryCheck")}
				obs.Services["kube-system/metrics-server"] = ServiceState{Exists: true, ReadyEndpoints: 1}
				return obs
			},
			kind: BlockerAPIServiceUnavailable, summary: "its backend, service kube-system/metrics-server, has ready endpoints, yet kube-apiserver's own check of it fails (FailedDiscoveryCheck), so what fails lies between them",
			evidence: "service kube-system/metrics-server: 1 ready endpoints", next: "check the path from kube-apiserver to service kube-system/metrics-server, whose endpoints are ready: a network policy or firewall refusing kube-apiserver, an egress proxy, a certificate either side does not trust (kubectl get apiservice v1beta1.metrics.k8s.io -o yaml says kube-apiserver's error); if that API is gone for good: kubectl ns-doctor purge demo --delete-apiservice=v1beta1.metrics.k8s.io", state: StateStuck,
		},
		{
			// Not its own check that failed: the backend's answers are.
			name: "aggregated API whose running backend fails otherwise",
			obs: func() Observation {
				obs := discoveryFailed(observation())
				obs.APIServices = []apiregv1.APIService{apiService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "kube-system", "metrics-server", "Passed")}
				obs.APIServices[0].Status.Conditions[0].Status = apiregv1.ConditionTrue
				obs.Services["kube-system/metrics-server"] = ServiceState{Exists: true, ReadyEndpoints: 1}
				return obs
			},
			kind: BlockerAPIServiceUnavailable, summary: "will not finalize any namespace",
			evidence: "service kube-system/metrics-server", next: "check the backend of apiservice/v1beta1.metrics.k8s.io (service kube-system/metrics-server, its pods and logs); if that API is gone for good: kubectl ns-doctor purge demo --delete-apiservice=v1beta1.metrics.k8s.io", state: StateStuck,
		},
		{
			name: "aggregated API whose service's namespace is being deleted",
			obs: func() Observation {
				obs := discoveryFailed(observation())
				obs.APIServices = []apiregv1.APIService{apiService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "monitoring", "metrics-server", "ServiceNotFound")}
				obs.Services["monitoring/metrics-server"] = ServiceState{NamespaceTerminating: true}
				return obs
			},
			kind: BlockerAPIServiceUnavailable, summary: "will not finalize any namespace",
			evidence: "service monitoring/metrics-server: not found; its namespace is being deleted, and accepts no new content: it cannot be restored there",
			next:     "its service's namespace is being deleted and accepts no new content, so the service cannot come back there: kubectl ns-doctor purge demo --delete-apiservice=v1beta1.metrics.k8s.io; or, keeping no copy: kubectl delete apiservice v1beta1.metrics.k8s.io", state: StateStuck,
		},
		{
			// Its Service is there: restoring it is no step. What it
			// selects is not ready, and that is what to make ready.
			name: "aggregated API whose service is there but selects a workload not ready",
			obs: func() Observation {
				obs := discoveryFailed(observation())
				obs.APIServices = []apiregv1.APIService{apiService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "kube-system", "metrics-server", "MissingEndpoints")}
				obs.Services["kube-system/metrics-server"] = ServiceState{Exists: true, Behind: &ServiceBackend{Selector: "app=metrics", Pods: 1,
					Workloads: []WorkloadState{{WorkloadRef: WorkloadRef{Kind: "Deployment", Namespace: "kube-system", Name: "metrics"}, Ready: 0, Want: 1}},
					NotReady:  []PodNotReady{{Name: "metrics-7f9-x2", Phase: "Pending", Why: "not scheduled: Unschedulable: 0/3 nodes are available"}}}}
				return obs
			},
			kind: BlockerAPIServiceUnavailable, summary: "will not finalize any namespace",
			evidence: "service kube-system/metrics-server: 0 ready endpoints; its selector app=metrics selects deployment kube-system/metrics (0/1 ready) and 1 pod(s); pod metrics-7f9-x2 Pending: not scheduled: Unschedulable: 0/3 nodes are available",
			next:     "its service is there, but deployment/metrics in kube-system behind it is not ready: make it ready (kubectl describe -n kube-system deployment/metrics; its pods' events say why), the backend of apiservice/v1beta1.metrics.k8s.io; or if that API is gone for good: kubectl ns-doctor purge demo --delete-apiservice=v1beta1.metrics.k8s.io", state: StateStuck,
		},
		{
			name: "aggregated API whose service is there but selects no workload",
			obs: func() Observation {
				obs := discoveryFailed(observation())
				obs.APIServices = []apiregv1.APIService{apiService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "kube-system", "metrics-server", "MissingEndpoints")}
				obs.Services["kube-system/metrics-server"] = ServiceState{Exists: true, Behind: &ServiceBackend{Selector: "app=metrics"}}
				return obs
			},
			kind: BlockerAPIServiceUnavailable, summary: "will not finalize any namespace",
			evidence: "its selector app=metrics selects no workload and 0 pod(s)",
			next:     "its service is there, but no pod it selects is ready: bring back what ran behind it (kubectl get pods -n kube-system; kubectl describe -n kube-system service/metrics-server)", state: StateStuck,
		},
		{
			name: "fail-closed webhook whose service is there but selects a workload not ready",
			obs: func() Observation {
				obs := with(observation(), configMaps, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
				obs.Webhooks = []Webhook{failClosed("guard", "webhook-system", "guard", configMaps, admissionregv1.Delete)}
				obs.Services["webhook-system/guard"] = ServiceState{Exists: true, Behind: &ServiceBackend{Selector: "app=guard", Pods: 1,
					Workloads: []WorkloadState{{WorkloadRef: WorkloadRef{Kind: "StatefulSet", Namespace: "webhook-system", Name: "guard"}, Ready: 0, Want: 2}},
					NotReady:  []PodNotReady{{Name: "guard-0", Phase: "Running", Why: "container guard waiting: CrashLoopBackOff: back-off 5m0s"}}}}
				return obs
			},
			kind: BlockerWebhook, summary: `webhook "deny.guard" fails closed and its service webhook-system/guard is down`,
			evidence: "statefulset webhook-system/guard (0/2 ready) and 1 pod(s); pod guard-0 Running: container guard waiting: CrashLoopBackOff",
			next:     "its service is there, but statefulset/guard in webhook-system behind it is not ready: make it ready", state: StateStuck,
		},
		{
			name: "aggregated API served from the namespace itself",
			obs: func() Observation {
				obs := discoveryFailed(observation())
				obs.APIServices = []apiregv1.APIService{apiService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "demo", "metrics", "MissingEndpoints")}
				obs.Services["demo/metrics"] = ServiceState{Exists: true}
				return obs
			},
			kind: BlockerSelfHostedAPIService, summary: "served from this very namespace",
			evidence: "Available=False reason=MissingEndpoints", next: "kubectl ns-doctor purge demo --delete-apiservice=v1beta1.metrics.k8s.io", state: StateStuck,
		},
		{
			name: "finalizer of a gone operator",
			obs: func() Observation {
				return with(observation(), widgets, terminatingItem("w1", 5*time.Minute, "example.com/cleanup"))
			},
			kind: BlockerFinalizers, summary: "1 widgets.example.com wait for finalizer(s) example.com/cleanup",
			evidence: "example.com/cleanup on 1 of 1 widgets.example.com", next: "kubectl ns-doctor purge demo --remove-finalizers=example.com/cleanup", state: StateStuck,
		},
		{
			name: "well-known finalizer names its owner",
			obs: func() Observation {
				return with(observation(), configMaps, terminatingItem("c", 5*time.Minute, "kubernetes.io/pvc-protection"))
			},
			kind: BlockerFinalizers, summary: "pvc-protection controller", evidence: "e.g. c", next: "--remove-finalizers=kubernetes.io/pvc-protection", state: StateStuck,
		},
		{
			name: "CRD being deleted",
			obs: func() Observation {
				obs := with(observation(), widgets, terminatingItem("w1", 5*time.Minute, "example.com/cleanup"))
				obs.CRDs = []CRD{{Name: "widgets.example.com", Group: "example.com", Plural: "widgets", Deleting: true}}
				return obs
			},
			kind: BlockerCRDDeleting, summary: "CRD widgets.example.com is itself being deleted",
			evidence: "customresourcedefinition/widgets.example.com has a deletionTimestamp", next: "--remove-finalizers=example.com/cleanup", state: StateStuck,
		},
		{
			name: "conversion webhook down",
			obs: func() Observation {
				obs := observation()
				obs.Snapshot.ListErrs[widgets] = apierrors.NewInternalError(errors.New(`conversion webhook for example.com/v1, Kind=Widget failed: service "conv" not found`))
				obs.CRDs = []CRD{{Name: "widgets.example.com", Group: "example.com", Plural: "widgets", ConversionService: &ServiceRef{Namespace: "conv-system", Name: "conv"}}}
				obs.Services["conv-system/conv"] = ServiceState{}
				return obs
			},
			kind: BlockerConversionWebhook, summary: "the conversion webhook of CRD widgets.example.com is down",
			evidence: "conversion service conv-system/conv: not found", next: `"strategy":"None"`, state: StateStuck,
		},
		{
			name: "conversion webhook down, its namespace being deleted",
			obs: func() Observation {
				obs := observation()
				obs.Snapshot.ListErrs[widgets] = apierrors.NewInternalError(errors.New(`conversion webhook for example.com/v1, Kind=Widget failed: service "conv" not found`))
				obs.CRDs = []CRD{{Name: "widgets.example.com", Group: "example.com", Plural: "widgets", ConversionService: &ServiceRef{Namespace: "conv-system", Name: "conv"}}}
				obs.Services["conv-system/conv"] = ServiceState{NamespaceTerminating: true}
				return obs
			},
			kind: BlockerConversionWebhook, summary: "the conversion webhook of CRD widgets.example.com is down",
			evidence: "it cannot be restored there", next: `its conversion service's namespace is being deleted and accepts no new content, so the service cannot come back there; set spec.conversion.strategy=None: kubectl patch crd widgets.example.com`, state: StateStuck,
		},
		{
			name: "fail-closed webhook whose service's namespace is being deleted",
			obs: func() Observation {
				obs := with(observation(), configMaps, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
				obs.Webhooks = []Webhook{failClosed("guard", "webhook-system", "guard", configMaps, admissionregv1.Delete)}
				obs.Services["webhook-system/guard"] = ServiceState{Exists: true, NamespaceTerminating: true}
				return obs
			},
			kind: BlockerWebhook, summary: `webhook "deny.guard" fails closed and its service webhook-system/guard is down`,
			evidence: "service webhook-system/guard: 0 ready endpoints; its namespace is being deleted",
			next:     "so the service cannot come back there; for this namespace only, for the run: kubectl ns-doctor purge demo --bypass-webhook=guard; for good: kubectl delete validatingwebhookconfiguration guard", state: StateStuck,
		},
		{
			name: "fail-closed webhook rejects the deletion",
			obs: func() Observation {
				obs := with(observation(), configMaps, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
				obs.Webhooks = []Webhook{failClosed("guard", "webhook-system", "guard", configMaps, admissionregv1.Delete)}
				obs.Services["webhook-system/guard"] = ServiceState{}
				return obs
			},
			kind: BlockerWebhook, summary: `webhook "deny.guard" fails closed and its service webhook-system/guard is down`,
			evidence: "validatingwebhookconfiguration/guard webhook deny.guard: failurePolicy=Fail", next: "--bypass-webhook=guard", state: StateStuck,
		},
		{
			name: "fail-closed webhook its operator's lifecycle manager left behind",
			obs: func() Observation {
				obs := with(observation(), configMaps, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
				wh := failClosed("guard", "webhook-system", "guard", configMaps, admissionregv1.Delete)
				wh.Installer = &installers.Installer{Manager: "Helm", Kind: "release", Namespace: "webhook-system", Name: "guard",
					State: installers.Gone, Record: "no record", WorkloadsRead: true}
				obs.Webhooks = []Webhook{wh}
				obs.Services["webhook-system/guard"] = ServiceState{}
				return obs
			},
			kind: BlockerWebhook, summary: "was left behind: Helm release webhook-system/guard uninstalled the operator that served it",
			evidence: "installed by Helm release webhook-system/guard: uninstalled, no record of it left (no record); no deployment, statefulset or daemonset of it in webhook-system",
			next:     "nothing will serve it again (its operator was uninstalled), and it refuses what it catches in every namespace it selects: kubectl delete validatingwebhookconfiguration guard  # save it first: kubectl get validatingwebhookconfiguration guard -o yaml > guard.yaml; or for this namespace only, for the run: kubectl ns-doctor purge demo --bypass-webhook=guard", state: StateStuck,
		},
		{
			name: "fail-closed webhook whose release is installed",
			obs: func() Observation {
				obs := with(observation(), configMaps, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
				wh := failClosed("guard", "webhook-system", "guard", configMaps, admissionregv1.Delete)
				wh.Installer = &installers.Installer{Manager: "Helm", Kind: "release", Namespace: "webhook-system", Name: "guard",
					State: installers.Installed, Record: "secret sh.helm.release.v1.guard.v2: deployed", WorkloadsRead: true}
				obs.Webhooks = []Webhook{wh}
				obs.Services["webhook-system/guard"] = ServiceState{}
				return obs
			},
			kind: BlockerWebhook, summary: `webhook "deny.guard" fails closed and its service webhook-system/guard is down`,
			evidence: "installed by Helm release webhook-system/guard: installed (secret sh.helm.release.v1.guard.v2: deployed)",
			next:     "restore service webhook-system/guard", state: StateStuck,
		},
		{
			name: "webhook served from the namespace itself",
			obs: func() Observation {
				obs := with(observation(), configMaps, terminatingItem("c", time.Minute, "example.com/x"))
				obs.Webhooks = []Webhook{failClosed("guard", "demo", "guard", configMaps, admissionregv1.Update)}
				obs.Services["demo/guard"] = ServiceState{Exists: true}
				return obs
			},
			kind: BlockerSelfHostedWebhook, summary: "served from this very namespace", evidence: "service demo/guard: 0 ready endpoints",
			next: "--bypass-webhook=guard", state: StateStuck,
		},
		{
			name: "pod past its grace period",
			obs: func() Observation {
				obs := with(observation(), deletion.PodsGVR, terminatingItem("p", 3*time.Minute))
				obs.Snapshot.Pods = []v1.Pod{{ObjectMeta: obs.Snapshot.Lists[deletion.PodsGVR].Items[0].ObjectMeta, Spec: v1.PodSpec{NodeName: "gone", TerminationGracePeriodSeconds: ptr.To(int64(30))}}}
				return obs
			},
			kind: BlockerPods, summary: "1 pod(s) outlived their grace period", evidence: "pod/p: grace period ended 3m0s ago", next: "kubectl ns-doctor purge demo --force-delete-pods", state: StateStuck,
		},
		{
			name: "namespace finalizer of another system",
			obs: func() Observation {
				obs := observation()
				obs.Namespace.Spec.Finalizers = append(obs.Namespace.Spec.Finalizers, "example.com/ns-hold")
				return obs
			},
			kind: BlockerNamespaceFinalizer, summary: `spec.finalizers holds "example.com/ns-hold"`, evidence: "spec.finalizers: kubernetes, example.com/ns-hold",
			next: "kubectl ns-doctor purge demo --remove-namespace-finalizers", state: StateStuck,
		},
		{
			name: "namespace's own metadata.finalizers",
			obs: func() Observation {
				obs := observation()
				obs.Namespace.Finalizers = []string{"example.com/meta"}
				return obs
			},
			kind: BlockerNamespaceFinalizer, summary: "metadata.finalizers of the namespace itself", evidence: "metadata.finalizers: example.com/meta",
			next: `kubectl patch namespace demo --type=merge`, state: StateStuck,
		},
		{
			name: "no controller ever looked",
			obs: func() Observation {
				obs := observation()
				obs.Namespace.Status.Conditions = nil
				return obs
			},
			kind: BlockerControllerNotRunning, summary: "no namespace controller has looked at this namespace", evidence: "status.conditions is empty",
			next: "kubectl ns-doctor purge demo", state: StateStuck,
		},
		{
			name: "controller not keeping up",
			obs: func() Observation {
				return with(observation(), configMaps, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "plain"}})
			},
			kind: BlockerControllerNotRunning, summary: "still there", evidence: "configmaps/plain is not even marked for deletion",
			next: "kube-controller-manager runs the namespace controller", state: StateStuck,
		},
		{
			name: "list forbidden",
			obs: func() Observation {
				obs := observation()
				obs.Snapshot.ListErrs[configMaps] = apierrors.NewForbidden(configMaps.GroupResource(), "", errors.New(`User "viewer" cannot list resource "configmaps"`))
				return obs
			},
			kind: BlockerForbidden, summary: "you may not list configmaps here", evidence: `cannot list resource "configmaps"`,
			next: "kubectl auth can-i list configmaps -n demo", state: StateTerminating,
		},
		{
			name: "aggregated API fails the list",
			obs: func() Observation {
				obs := observation()
				obs.Snapshot.ListErrs[widgets] = apierrors.NewServiceUnavailable("gadget backend down")
				obs.APIServices = []apiregv1.APIService{apiService("v1.example.com", "example.com", "v1", "default", "widgets", "Passed")}
				obs.Services["default/widgets"] = ServiceState{Exists: true, ExternalName: "localhost"}
				return obs
			},
			kind: BlockerListFailed, summary: "its aggregated API (apiservice/v1.example.com) fails the request",
			evidence: "service default/widgets: ExternalName localhost", next: "kubectl delete apiservice v1.example.com", state: StateStuck,
		},
	}
}

// Every blocker kind, from an observation built by hand: its summary,
// evidence and next step name what a user needs.
func TestBlockers(t *testing.T) {
	for _, tc := range blockerCases() {
		t.Run(tc.name, func(t *testing.T) {
			obs := tc.obs()
			r := Diagnose(obs)
			if r.Verdict.State != tc.state {
				t.Errorf("verdict %+v, want %s", r.Verdict, tc.state)
			}
			for _, b := range r.Blockers {
				w := printer.WordsOf(b)
				if b.Kind == tc.kind && strings.Contains(w.Summary, tc.summary) && strings.Contains(strings.Join(w.Evidence, "\n"), tc.evidence) && strings.Contains(w.NextStep, tc.next) {
					return
				}
			}
			t.Errorf("no %s blocker with summary %q, evidence %q, next %q; got:\n%s", tc.kind, tc.summary, tc.evidence, tc.next, dump(r.Blockers))
		})
	}
}

func dump(blockers []Blocker) string {
	var out []string
	for _, b := range blockers {
		w := printer.WordsOf(b)
		out = append(out, string(b.Kind)+": "+w.Summary+"\n  evidence: "+strings.Join(w.Evidence, " | ")+"\n  next: "+w.NextStep)
	}
	return strings.Join(out, "\n")
}

// What is in progress is not stuck: content within the grace period, an
// Active namespace, resources answering 404 (the controller skips them).
func TestNotStuck(t *testing.T) {
	obs := with(observation(), widgets, terminatingItem("w1", 5*time.Second, "example.com/cleanup"))
	obs.Grace = time.Minute
	if r := Diagnose(obs); r.Verdict.State != StateTerminating || len(r.Blockers) != 0 {
		t.Errorf("within grace: %+v %s", r.Verdict, dump(r.Blockers))
	}
	obs = observation()
	obs.Snapshot.ListErrs[widgets] = apierrors.NewNotFound(widgets.GroupResource(), "")
	if r := Diagnose(obs); r.Verdict.State != StateTerminating || len(r.Blockers) != 0 {
		t.Errorf("404 list: %+v %s", r.Verdict, dump(r.Blockers))
	}
	obs = with(observation(), configMaps, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "c", Finalizers: []string{"example.com/x"}}})
	obs.Namespace.DeletionTimestamp = nil
	r := Diagnose(obs)
	if r.Verdict.State != StateActive || len(r.Blockers) != 0 || !strings.Contains(printer.VerdictSummary(r), "--if-deleted") {
		t.Errorf("active: %+v %s", r.Verdict, dump(r.Blockers))
	}
	obs.IfDeleted = true
	r = Diagnose(obs)
	if r.Verdict.State != StateActive || len(r.Blockers) != 1 || r.Blockers[0].Kind != BlockerFinalizers || !strings.Contains(printer.VerdictSummary(r), "held by 1 blocker(s)") {
		t.Errorf("--if-deleted: %+v %s", r.Verdict, dump(r.Blockers))
	}
}

// The conditions ns-doctor computes are the controller's, pass for pass:
// with pods remaining, ordered deletion touches nothing else and reports
// no remaining content; unordered, it reports every type.
func TestConditionsFollowTheOrdering(t *testing.T) {
	pod := terminatingItem("p", time.Minute, "example.com/pod-hold")
	for _, ordered := range []bool{true, false} {
		obs := with(with(observation(), deletion.PodsGVR, pod), widgets, terminatingItem("w1", time.Minute, "example.com/cleanup"))
		obs.Snapshot.Pods = []v1.Pod{{ObjectMeta: pod.ObjectMeta}}
		obs.Ordering.Ordered = ordered
		r := Diagnose(obs)
		remaining := r.Conditions[3].Computed
		want := "Some resources are remaining: pods. has 1 resource instances, widgets.example.com has 1 resource instances"
		if ordered {
			want = "All content successfully removed"
		}
		if remaining == nil || remaining.Message != want {
			t.Errorf("ordered=%v: ContentRemaining %+v, want %q", ordered, remaining, want)
		}
		if r.Pods == nil || r.Pods.HoldingOtherContent != ordered {
			t.Errorf("ordered=%v: pods %+v", ordered, r.Pods)
		}
	}
}

// Conditions written by a controller with the other deletion order are
// recognised as such, so explain can name --ordered-deletion.
func TestOtherOrderingRecognised(t *testing.T) {
	pod := terminatingItem("p", time.Minute, "example.com/pod-hold")
	build := func(ordered bool) Observation {
		obs := with(with(observation(), deletion.PodsGVR, pod), widgets, terminatingItem("w1", time.Minute, "example.com/cleanup"))
		obs.Snapshot.Pods = []v1.Pod{{ObjectMeta: pod.ObjectMeta}}
		obs.Ordering.Ordered = ordered
		return obs
	}
	unordered := PredictPass(build(false)).Conditions
	for _, ordered := range []bool{true, false} {
		obs := build(ordered)
		obs.Namespace.Status.Conditions = unordered
		r := Diagnose(obs)
		if r.Ordering.OtherMatches != ordered {
			t.Errorf("assumed ordered=%v against an unordered controller: otherOrderingMatches=%v", ordered, r.Ordering.OtherMatches)
		}
		agree := true
		for _, c := range r.Conditions {
			agree = agree && c.Agree
		}
		if agree == ordered {
			t.Errorf("assumed ordered=%v: conditions agree=%v", ordered, agree)
		}
	}
}

// On 1.37+ no controller runs the other order: conditions that would match
// it are never blamed on the gate. Where the controller's last pass
// stopped at pods and claims no content remains while some does, the
// early return (upstream issue 138208) is named instead; where the
// controller counted, nothing is.
func TestEarlyReturnNamedNotTheGate(t *testing.T) {
	pod := terminatingItem("p", time.Minute, "example.com/pod-hold")
	withPod := func() Observation {
		obs := with(with(observation(), deletion.PodsGVR, pod), widgets, terminatingItem("w1", time.Minute, "example.com/cleanup"))
		obs.Snapshot.Pods = []v1.Pod{{ObjectMeta: pod.ObjectMeta}}
		return obs
	}
	withoutPod := func() Observation {
		return with(observation(), widgets, terminatingItem("w1", time.Minute, "example.com/cleanup"))
	}
	for _, version := range []string{"v1.36.3", "v1.37.2"} {
		// The controller's last pass saw the pod; it is gone since.
		early := withPod()
		early.Ordering, _ = compat.OrderingFor("auto", version)
		written := PredictPass(early).Conditions
		obs := withoutPod()
		obs.Ordering = early.Ordering
		obs.Namespace.Status.Conditions = written
		r := Diagnose(obs)
		if !r.Ordering.PodsFirstEarlyReturn || r.Ordering.OtherMatches {
			t.Errorf("%s: early return %v, other order %v; want the early return named, not the gate", version, r.Ordering.PodsFirstEarlyReturn, r.Ordering.OtherMatches)
		}
		// The controller counted what remains: nothing to explain.
		counted := withoutPod()
		counted.Ordering = early.Ordering
		counted.Namespace.Status.Conditions = PredictPass(withoutPod()).Conditions
		if r := Diagnose(counted); r.Ordering.PodsFirstEarlyReturn {
			t.Errorf("%s: early return named for conditions that agree", version)
		}
	}
	// An unordered controller's conditions on 1.37: never the gate.
	obs := withPod()
	obs.Ordering, _ = compat.OrderingFor("auto", "v1.37.2")
	unordered := withPod()
	unordered.Ordering.Ordered = false
	obs.Namespace.Status.Conditions = PredictPass(unordered).Conditions
	if r := Diagnose(obs); r.Ordering.OtherMatches {
		t.Error("1.37: conditions blamed on a gate that no longer exists")
	}
}

// Refusals by admission loaded from kube-apiserver's disk (names ending
// in .static.k8s.io, 1.37+) offer no bypass and no delete: they have no API
// object. The same names on a server that does not load them, and a
// policy created through the API, keep their steps.
func TestStaticAdmissionOffersNoBypass(t *testing.T) {
	msg := `Failed to delete all resource types, 3 remaining: admission webhook "keep.static.k8s.io" denied the request: kept, ` +
		`configmaps "a" is forbidden: ValidatingAdmissionPolicy 'hold.static.k8s.io' with binding 'hold-binding.static.k8s.io' denied request: held, ` +
		`Internal error occurred: failed calling webhook "down.static.k8s.io": failed to call webhook: Post "https://127.0.0.1:9/?timeout=10s": dial tcp 127.0.0.1:9: connect: connection refused`
	for _, tc := range []struct {
		version string
		static  bool
	}{{"v1.37.2", true}, {"v1.36.3", false}} {
		obs := observation()
		obs.Ordering, _ = compat.OrderingFor("auto", tc.version)
		obs.Namespace.Status.Conditions = append(obs.Namespace.Status.Conditions, v1.NamespaceCondition{
			Type: v1.NamespaceDeletionContentFailure, Status: v1.ConditionTrue, Reason: "ContentDeletionFailed", Message: msg})
		var bs []Blocker
		failing := 0
		for _, b := range Diagnose(obs).Blockers {
			switch {
			case b.Kind == BlockerWebhookDenies:
				bs = append(bs, b)
			case b.Kind == BlockerWebhook && b.Subject == "down.static.k8s.io" && len(b.Actions) == 0:
				failing++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[tc.static]; failing != want {
			t.Errorf("%s: %d blockers for the static webhook that cannot be called, want %d", tc.version, failing, want)
		}
		if len(bs) != 2 {
			t.Fatalf("%s: %d blockers: %+v", tc.version, len(bs), bs)
		}
		for _, b := range bs {
			f := b.Facts.(*DenialFacts)
			if f.Static != tc.static {
				t.Errorf("%s: %s static=%v", tc.version, f.Webhook, f.Static)
			}
			if tc.static && len(b.Actions) != 0 {
				t.Errorf("%s: a static %s is offered %+v", tc.version, f.Webhook, b.Actions)
			}
		}
		policy := bs[0].Facts.(*DenialFacts)
		if !policy.Policy || policy.Binding != "hold-binding.static.k8s.io" || policy.Message != "held" {
			t.Errorf("%s: policy denial %+v", tc.version, policy)
		}
		if !tc.static && (len(bs[0].Actions) != 1 || bs[0].Actions[0].Target != "validatingadmissionpolicybinding/hold-binding.static.k8s.io") {
			t.Errorf("%s: the policy's step %+v", tc.version, bs[0].Actions)
		}
	}
}
