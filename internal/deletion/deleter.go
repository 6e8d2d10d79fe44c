package deletion

import (
	"context"
	"fmt"
	"reflect"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
)

// This file mirrors namespaced_resources_deleter.go (v1.36): function names
// and order follow upstream so the two read side by side. What upstream
// does with its metadata client goes through Operations, so the same pass
// can delete for real, send server dry-run requests, or only plan from a
// snapshot of the namespace (explain and purge's client dry-run).

// Operations are the requests a pass sends for namespace content.
type Operations interface {
	DeleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) error
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, error)
	Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) error
}

// PodLister lists pods with their spec, for the grace-period estimate.
type PodLister interface {
	ListPods(ctx context.Context, namespace string) ([]v1.Pod, error)
}

const (
	operationDeleteCollection = "deletecollection"
	operationList             = "list"

	// finalizerEstimateSeconds is how long upstream waits for content
	// with finalizers before it looks again.
	finalizerEstimateSeconds = int64(15)
)

var podsGVR = schema.GroupVersionResource{Group: "", Version: "v1", Resource: "pods"}

// ContentDeleter is upstream's namespacedResourcesDeleter, minus the
// namespace GET/UpdateStatus/Finalize steps its callers own.
type ContentDeleter struct {
	Ops  Operations
	Pods PodLister
	// Resources and DiscoveryErr are the result of
	// ServerPreferredNamespacedResources, done once and shared.
	Resources    []*metav1.APIResourceList
	DiscoveryErr error
	// OrderedDeletion is the OrderedNamespaceDeletion feature gate (on by
	// default in v1.36).
	OrderedDeletion bool
	Now             func() time.Time

	opCache map[operationKey]bool
}

type operationKey struct {
	operation string
	gvr       schema.GroupVersionResource
}

// Result is what one pass found: upstream's estimate and error, the
// conditions it would write, and the content totals behind them.
type Result struct {
	Estimate   int64
	Err        error
	Conditions []v1.NamespaceCondition
	Totals     ContentTotals
	// PodsBlocked is true when pods remain and, as upstream does, the pass
	// returned before touching other resources.
	PodsBlocked bool
}

// initOpCache mirrors upstream: resources lacking list or deletecollection
// are remembered as unsupported.
func (d *ContentDeleter) initOpCache() {
	d.opCache = map[operationKey]bool{}
	for _, rl := range d.Resources {
		gv, err := schema.ParseGroupVersion(rl.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range rl.APIResources {
			gvr := gv.WithResource(r.Name)
			verbs := map[string]bool{}
			for _, v := range r.Verbs {
				verbs[v] = true
			}
			for _, op := range []string{operationList, operationDeleteCollection} {
				if !verbs[op] {
					d.opCache[operationKey{op, gvr}] = true
				}
			}
		}
	}
}

func (d *ContentDeleter) isSupported(op string, gvr schema.GroupVersionResource) bool {
	return !d.opCache[operationKey{op, gvr}]
}

// DeleteAllContent is upstream's deleteAllContent for a namespace being
// deleted; the caller writes the conditions if it wants them written.
func (d *ContentDeleter) DeleteAllContent(ctx context.Context, ns *v1.Namespace) Result {
	if d.opCache == nil {
		d.initOpCache()
	}
	namespace := ns.Name
	namespaceDeletedAt := *ns.DeletionTimestamp
	var errs []error
	conditionUpdater := NewConditionUpdater(metav1.NewTime(d.now()))
	estimate := int64(0)

	resources, err := d.Resources, d.DiscoveryErr
	if err != nil {
		errs = append(errs, err)
		conditionUpdater.ProcessDiscoverResourcesErr(err)
	}
	deletableResources := discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete"}}, resources)
	groupVersionResources, err := discovery.GroupVersionResources(deletableResources)
	if err != nil {
		errs = append(errs, err)
		conditionUpdater.ProcessGroupVersionErr(err)
	}

	totals := NewContentTotals()
	if _, hasPods := groupVersionResources[podsGVR]; hasPods && d.OrderedDeletion {
		meta, err := d.deleteAllContentForGroupVersionResource(ctx, podsGVR, namespace, namespaceDeletedAt)
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to delete pods for namespace: %s, err: %w", namespace, err))
			conditionUpdater.ProcessDeleteContentErr(err)
		}
		estimate = max(estimate, meta.finalizerEstimateSeconds)
		totals.add(podsGVR, meta)
		// Pods go first: while any remain, nothing else is touched, and the
		// conditions are written without content totals.
		if totals.GVRToNumRemaining[podsGVR] > 0 {
			return Result{Estimate: estimate, Err: utilerrors.NewAggregate(errs), Conditions: conditionUpdater.Conditions(), Totals: totals, PodsBlocked: true}
		}
	}

	for gvr := range groupVersionResources {
		if d.OrderedDeletion && gvr == podsGVR {
			continue
		}
		meta, err := d.deleteAllContentForGroupVersionResource(ctx, gvr, namespace, namespaceDeletedAt)
		if err != nil {
			errs = append(errs, err)
			conditionUpdater.ProcessDeleteContentErr(err)
		}
		estimate = max(estimate, meta.finalizerEstimateSeconds)
		totals.add(gvr, meta)
	}
	conditionUpdater.ProcessContentTotals(totals)
	return Result{Estimate: estimate, Err: utilerrors.NewAggregate(errs), Conditions: conditionUpdater.Conditions(), Totals: totals}
}

func (t ContentTotals) add(gvr schema.GroupVersionResource, meta gvrDeletionMetadata) {
	if meta.numRemaining == 0 {
		return
	}
	t.GVRToNumRemaining[gvr] = meta.numRemaining
	for finalizer, n := range meta.finalizersToNumRemaining {
		if n > 0 {
			t.FinalizersToNumRemaining[finalizer] += n
		}
	}
}

type gvrDeletionMetadata struct {
	finalizerEstimateSeconds int64
	numRemaining             int
	finalizersToNumRemaining map[string]int
}

func (d *ContentDeleter) deleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (bool, error) {
	if !d.isSupported(operationDeleteCollection, gvr) {
		return false, nil
	}
	err := d.Ops.DeleteCollection(ctx, gvr, namespace)
	if err == nil {
		return true, nil
	}
	if errors.IsMethodNotSupported(err) || errors.IsNotFound(err) {
		return false, nil
	}
	return true, err
}

func (d *ContentDeleter) listCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, bool, error) {
	if !d.isSupported(operationList, gvr) {
		return nil, false, nil
	}
	list, err := d.Ops.List(ctx, gvr, namespace)
	if err == nil {
		return list, true, nil
	}
	if errors.IsMethodNotSupported(err) || errors.IsNotFound(err) {
		return nil, false, nil
	}
	return nil, true, err
}

func (d *ContentDeleter) deleteEachItem(ctx context.Context, gvr schema.GroupVersionResource, namespace string) error {
	list, listSupported, err := d.listCollection(ctx, gvr, namespace)
	if err != nil || !listSupported {
		return err
	}
	for _, item := range list.Items {
		if err := d.Ops.Delete(ctx, gvr, namespace, item.GetName()); err != nil && !errors.IsNotFound(err) && !errors.IsMethodNotSupported(err) {
			return err
		}
	}
	return nil
}

func (d *ContentDeleter) deleteAllContentForGroupVersionResource(ctx context.Context, gvr schema.GroupVersionResource, namespace string, namespaceDeletedAt metav1.Time) (gvrDeletionMetadata, error) {
	estimate, err := d.estimateGracefulTermination(ctx, gvr, namespace, namespaceDeletedAt)
	if err != nil {
		return gvrDeletionMetadata{}, err
	}
	deleteCollectionSupported, err := d.deleteCollection(ctx, gvr, namespace)
	if err != nil {
		return gvrDeletionMetadata{finalizerEstimateSeconds: estimate}, err
	}
	if !deleteCollectionSupported {
		if err := d.deleteEachItem(ctx, gvr, namespace); err != nil {
			return gvrDeletionMetadata{finalizerEstimateSeconds: estimate}, err
		}
	}
	list, listSupported, err := d.listCollection(ctx, gvr, namespace)
	if err != nil {
		return gvrDeletionMetadata{finalizerEstimateSeconds: estimate}, err
	}
	if !listSupported {
		return gvrDeletionMetadata{finalizerEstimateSeconds: estimate}, nil
	}
	if len(list.Items) == 0 {
		return gvrDeletionMetadata{}, nil
	}
	finalizersToNumRemaining := map[string]int{}
	for _, item := range list.Items {
		for _, finalizer := range item.GetFinalizers() {
			finalizersToNumRemaining[finalizer]++
		}
	}
	if estimate != 0 {
		return gvrDeletionMetadata{finalizerEstimateSeconds: estimate, numRemaining: len(list.Items), finalizersToNumRemaining: finalizersToNumRemaining}, nil
	}
	if len(finalizersToNumRemaining) > 0 {
		return gvrDeletionMetadata{finalizerEstimateSeconds: finalizerEstimateSeconds, numRemaining: len(list.Items), finalizersToNumRemaining: finalizersToNumRemaining}, nil
	}
	return gvrDeletionMetadata{finalizerEstimateSeconds: estimate, numRemaining: len(list.Items)},
		fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", namespace, gvr)
}

func (d *ContentDeleter) estimateGracefulTermination(ctx context.Context, gvr schema.GroupVersionResource, namespace string, namespaceDeletedAt metav1.Time) (int64, error) {
	estimate := int64(0)
	if gvr.GroupResource() == podsGVR.GroupResource() {
		var err error
		if estimate, err = d.estimateGracefulTerminationForPods(ctx, namespace); err != nil {
			return 0, err
		}
	}
	if d.now().Sub(namespaceDeletedAt.Time) >= time.Duration(estimate)*time.Second {
		estimate = 0
	}
	return estimate, nil
}

// EstimatePodGracePeriod is the longest termination grace period of the
// pods that have not finished, as upstream estimates it.
func EstimatePodGracePeriod(pods []v1.Pod) int64 {
	estimate := int64(0)
	for i := range pods {
		pod := &pods[i]
		if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g > estimate {
			estimate = *g
		}
	}
	return estimate
}

func (d *ContentDeleter) estimateGracefulTerminationForPods(ctx context.Context, namespace string) (int64, error) {
	if isNil(d.Pods) {
		return 0, fmt.Errorf("unexpected: podsGetter is nil. Cannot estimate grace period seconds for pods")
	}
	pods, err := d.Pods.ListPods(ctx, namespace)
	if err != nil {
		return 0, err
	}
	return EstimatePodGracePeriod(pods), nil
}

func (d *ContentDeleter) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// isNil is upstream's nil check, also for a nil pointer in the interface.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
