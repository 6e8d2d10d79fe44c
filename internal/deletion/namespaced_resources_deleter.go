package deletion

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/workqueue"
)

// This file mirrors namespaced_resources_deleter.go (v1.36.3): function
// names and order follow upstream so the two read side by side. What
// upstream sends through its metadata client goes through Operations, and
// its namespace client is a NamespaceClient, so the same pass can act for
// real, send server dry-run requests, or plan over a snapshot (explain and
// purge's client dry run).

const (
	operationDeleteCollection = "deletecollection"
	operationList             = "list"

	// finalizerEstimateSeconds is how long upstream waits for content
	// with finalizers before it looks again.
	finalizerEstimateSeconds = int64(15)
)

// NamespacedResourcesDeleter is upstream's namespacedResourcesDeleter,
// with ns-doctor's escalations as explicit, off-by-default fields.
type NamespacedResourcesDeleter struct {
	// NsClient reads and finalizes the namespace.
	NsClient NamespaceClient
	// Ops sends the content requests (upstream: the metadata client).
	Ops Operations
	// Pods lists pods with their spec, for the grace-period estimate.
	Pods PodLister
	// DiscoverResourcesFn returns the preferred namespaced resources
	// (upstream: ServerPreferredNamespacedResources).
	DiscoverResourcesFn func() ([]*metav1.APIResourceList, error)
	// FinalizerToken is the spec.finalizers token this deleter removes.
	FinalizerToken v1.FinalizerName
	// OrderedDeletion is the OrderedNamespaceDeletion feature gate of the
	// cluster's own controller: on from 1.33, off before.
	OrderedDeletion bool
	// Workers bounds the resource types deleted at once; upstream walks
	// them one by one (0 or 1). The result does not depend on it.
	Workers int
	Now     func() time.Time

	// Escalations, never upstream behaviour.
	//
	// FinalizeDespiteDiscoveryFailure finalizes when the pass's only error
	// is a partial discovery failure.
	FinalizeDespiteDiscoveryFailure bool
	// RemoveNamespaceFinalizers drops every spec.finalizers token, not
	// only FinalizerToken (purge --remove-namespace-finalizers).
	RemoveNamespaceFinalizers bool

	// Deletable, when set, is what DeletableOf derived from the resources
	// DiscoverResourcesFn returns: explain's diagnoses of thousands of
	// namespaces over one discovery derive it once. Nil: each pass
	// derives it, as upstream.
	Deletable *Deletable

	opCache operationNotSupportedCache
}

// Deletable is what a pass derives from discovery before deleting: the
// resources supporting delete, as group-version-resources, and the error
// deriving them met (upstream's FilteredBy and GroupVersionResources).
type Deletable struct {
	resources []*metav1.APIResourceList
	gvrs      map[schema.GroupVersionResource]struct{}
	err       error
}

// DeletableOf derives a Deletable from resources; it is read only.
func DeletableOf(resources []*metav1.APIResourceList) *Deletable {
	deletableResources := discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete"}}, resources)
	gvrs, err := discovery.GroupVersionResources(deletableResources)
	return &Deletable{resources: resources, gvrs: gvrs, err: err}
}

// Only is d restricted to those of gvrs it holds.
func (d *Deletable) Only(gvrs ...schema.GroupVersionResource) *Deletable {
	out := &Deletable{resources: d.resources, gvrs: make(map[schema.GroupVersionResource]struct{}, len(gvrs)), err: d.err}
	for _, gvr := range gvrs {
		if _, ok := d.gvrs[gvr]; ok {
			out.gvrs[gvr] = struct{}{}
		}
	}
	return out
}

// deletable is d.Deletable when it was derived from resources, else
// derived now.
func (d *NamespacedResourcesDeleter) deletable(resources []*metav1.APIResourceList) (map[schema.GroupVersionResource]struct{}, error) {
	if dd := d.Deletable; dd != nil && len(dd.resources) == len(resources) && (len(resources) == 0 || &dd.resources[0] == &resources[0]) {
		return dd.gvrs, dd.err
	}
	dd := DeletableOf(resources)
	return dd.gvrs, dd.err
}

// Stage is where a call of Delete ended.
type Stage int

// Stages, in the order Delete reaches them.
const (
	StageGone             Stage = iota // the namespace does not exist
	StageNotDeleting                   // no deletionTimestamp: nothing to do
	StageAlreadyFinalized              // spec.finalizers is empty: metadata.finalizers or the API server hold it
	StageContentFailed                 // the content pass returned errors
	StageContentRemains                // content is still going away (ResourcesRemainingError)
	StageFinalized                     // nothing remained and the finalize call was sent
)

// Result is what one call of Delete saw and did; the error keeps
// upstream's contract.
type Result struct {
	Stage Stage
	// Namespace is the namespace as Delete read it (nil when gone) or, after
	// StageFinalized, as the finalize call returned it.
	Namespace *v1.Namespace
	// Content is the content pass's result, when one ran.
	Content *ContentResult
	// Dropped are the spec.finalizers tokens the finalize call removed.
	Dropped []v1.FinalizerName
}

// ContentResult is what deleteAllContent found: upstream's estimate and
// error, the conditions it writes, and the totals behind them.
type ContentResult struct {
	Estimate   int64
	Err        error
	Conditions []v1.NamespaceCondition
	Totals     ContentTotals
	// PodsBlocked is true when pods remain and, with ordered deletion, the
	// pass returned before touching other resources.
	PodsBlocked bool
	// Failed are the resources whose deletion returned an error (not
	// counted in Totals: upstream counts only what it could list after
	// deleting), sorted, and FailedErrs each one's error.
	Failed     []schema.GroupVersionResource
	FailedErrs map[schema.GroupVersionResource]error
}

// Delete deletes all resources in the given namespace.
// Before deleting resources:
//   - It ensures that deletion timestamp is set on the
//     namespace (does nothing if deletion timestamp is missing).
//   - Verifies that the namespace is in the "terminating" phase
//     (updates the namespace phase if it is not yet marked terminating)
//
// After deleting the resources:
// * It removes finalizer token from the given namespace.
//
// Returns an error if any of those steps fail.
// Returns ResourcesRemainingError if it deleted some resources but needs
// to wait for them to go away.
// Caller is expected to keep calling this until it succeeds.
func (d *NamespacedResourcesDeleter) Delete(ctx context.Context, nsName string) (Result, error) {
	// Multiple controllers may edit a namespace during termination
	// first get the latest state of the namespace before proceeding
	// if the namespace was deleted already, don't do anything
	namespace, err := d.NsClient.Get(ctx, nsName, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return Result{Stage: StageGone}, nil
		}
		return Result{Stage: StageGone}, err
	}
	res := Result{Namespace: namespace}
	if namespace.DeletionTimestamp == nil {
		res.Stage = StageNotDeleting
		return res, nil
	}
	// Upstream now writes status.phase (updateNamespaceStatusFunc); the
	// API server already set Terminating when it accepted the DELETE, and
	// ns-doctor writes no status (docs/purge.md).

	// return if it is already finalized.
	if finalized(namespace) {
		res.Stage = StageAlreadyFinalized
		return res, nil
	}

	// there may still be content for us to remove
	content := d.deleteAllContent(ctx, namespace)
	res.Content = &content
	if content.Err != nil && !d.finalizeDespite(content) {
		res.Stage = StageContentFailed
		return res, content.Err
	}
	if content.Estimate > 0 {
		res.Stage = StageContentRemains
		return res, &ResourcesRemainingError{Estimate: content.Estimate}
	}

	// we have removed content, so mark it finalized by us
	finalizedNs, err := d.retryOnConflictError(ctx, namespace, d.finalizeNamespace)
	res.Stage = StageFinalized
	res.Dropped = d.droppedTokens(namespace)
	if finalizedNs != nil {
		res.Namespace = finalizedNs
	}
	if err != nil {
		// in normal practice, this should not be possible, but if a deployment is running
		// two controllers to do namespace deletion that share a common finalizer token it's
		// possible that a not found could occur since the other controller would have finished the delete.
		if apierrors.IsNotFound(err) {
			return res, nil
		}
		return res, err
	}
	return res, nil
}

// finalizeDespite is the discovery escalation: upstream never finalizes
// after an error; with FinalizeDespiteDiscoveryFailure a pass whose only
// error is a partial discovery failure finalizes, orphaning whatever the
// undiscovered groups hold.
func (d *NamespacedResourcesDeleter) finalizeDespite(content ContentResult) bool {
	return d.FinalizeDespiteDiscoveryFailure && content.Estimate == 0 && OnlyDiscoveryFailed(content.Err)
}

// OnlyDiscoveryFailed tells whether every error of a pass is a partial
// discovery failure.
func OnlyDiscoveryFailed(err error) bool {
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		return false
	}
	for _, e := range agg.Errors() {
		var gd *discovery.ErrGroupDiscoveryFailed
		if !errors.As(e, &gd) {
			return false
		}
	}
	return true
}

// initOpCache mirrors upstream: resources whose discovery verbs lack list
// or deletecollection are remembered as unsupported. Upstream fills the
// cache once, when the controller starts; ns-doctor fills it on the first
// pass.
func (d *NamespacedResourcesDeleter) initOpCache(resources []*metav1.APIResourceList) {
	d.opCache = operationNotSupportedCache{m: map[operationKey]bool{}}
	for _, rl := range resources {
		gv, err := schema.ParseGroupVersion(rl.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range rl.APIResources {
			gvr := gv.WithResource(r.Name)
			for _, op := range []string{operationList, operationDeleteCollection} {
				if !slices.Contains(r.Verbs, op) {
					d.opCache.setNotSupported(operationKey{op, gvr})
				}
			}
		}
	}
}

// ResourcesRemainingError is used to inform the caller that all resources are not yet fully removed from the namespace.
type ResourcesRemainingError struct {
	Estimate int64
}

func (e *ResourcesRemainingError) Error() string {
	return fmt.Sprintf("some content remains in the namespace, estimate %d seconds before it is removed", e.Estimate)
}

// operationKey is an entry in a cache.
type operationKey struct {
	operation string
	gvr       schema.GroupVersionResource
}

// operationNotSupportedCache is a simple cache to remember if an operation is not supported for a resource.
// if the operationKey maps to true, it means the operation is not supported.
type operationNotSupportedCache struct {
	lock sync.RWMutex
	m    map[operationKey]bool
}

// isSupported returns true if the operation is supported
func (o *operationNotSupportedCache) isSupported(key operationKey) bool {
	o.lock.RLock()
	defer o.lock.RUnlock()
	return !o.m[key]
}

func (o *operationNotSupportedCache) setNotSupported(key operationKey) {
	o.lock.Lock()
	defer o.lock.Unlock()
	o.m[key] = true
}

// updateNamespaceFunc is a function that makes an update to a namespace
type updateNamespaceFunc func(ctx context.Context, kubeClient NamespaceClient, namespace *v1.Namespace) (*v1.Namespace, error)

// retryOnConflictError retries the specified fn if there was a conflict error
// it will return an error if the UID for an object changes across retry operations.
// TODO RetryOnConflict should be a generic concept in client code
func (d *NamespacedResourcesDeleter) retryOnConflictError(ctx context.Context, namespace *v1.Namespace, fn updateNamespaceFunc) (result *v1.Namespace, err error) {
	latestNamespace := namespace
	for {
		result, err = fn(ctx, d.NsClient, latestNamespace)
		if err == nil {
			return result, nil
		}
		if !apierrors.IsConflict(err) {
			return nil, err
		}
		prevNamespace := latestNamespace
		latestNamespace, err = d.NsClient.Get(ctx, latestNamespace.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if prevNamespace.UID != latestNamespace.UID {
			return nil, fmt.Errorf("namespace uid has changed across retries")
		}
	}
}

// finalized returns true if the namespace.Spec.Finalizers is an empty list
func finalized(namespace *v1.Namespace) bool {
	return len(namespace.Spec.Finalizers) == 0
}

// finalizeNamespace removes the specified finalizerToken and finalizes the namespace
func (d *NamespacedResourcesDeleter) finalizeNamespace(ctx context.Context, nsClient NamespaceClient, namespace *v1.Namespace) (*v1.Namespace, error) {
	namespaceFinalize := v1.Namespace{}
	namespaceFinalize.ObjectMeta = namespace.ObjectMeta
	namespaceFinalize.Spec = namespace.Spec
	namespaceFinalize.Spec.Finalizers = KeptFinalizers(namespace, d.dropSet(namespace))
	namespace, err := nsClient.Finalize(ctx, &namespaceFinalize, metav1.UpdateOptions{})
	if err != nil {
		// it was removed already, so life is good
		if apierrors.IsNotFound(err) {
			return namespace, nil
		}
	}
	return namespace, err
}

// dropSet is the tokens finalizeNamespace removes: upstream's own token,
// or with RemoveNamespaceFinalizers all of them.
func (d *NamespacedResourcesDeleter) dropSet(ns *v1.Namespace) map[v1.FinalizerName]bool {
	drop := map[v1.FinalizerName]bool{d.FinalizerToken: true}
	if d.RemoveNamespaceFinalizers {
		for _, f := range ns.Spec.Finalizers {
			drop[f] = true
		}
	}
	return drop
}

// droppedTokens are the tokens of ns that finalizing removes.
func (d *NamespacedResourcesDeleter) droppedTokens(ns *v1.Namespace) []v1.FinalizerName {
	drop := d.dropSet(ns)
	var out []v1.FinalizerName
	for _, f := range ns.Spec.Finalizers {
		if drop[f] {
			out = append(out, f)
		}
	}
	return out
}

// KeptFinalizers is spec.finalizers without the dropped tokens, sorted and
// deduplicated as upstream does.
func KeptFinalizers(ns *v1.Namespace, drop map[v1.FinalizerName]bool) []v1.FinalizerName {
	set := map[v1.FinalizerName]bool{}
	for _, f := range ns.Spec.Finalizers {
		if !drop[f] {
			set[f] = true
		}
	}
	out := make([]v1.FinalizerName, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// deleteCollection is a helper function that will delete the collection of resources
// it returns true if the operation was supported on the server.
// it returns an error if the operation was supported on the server but was unable to complete.
func (d *NamespacedResourcesDeleter) deleteCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (bool, error) {
	key := operationKey{operation: operationDeleteCollection, gvr: gvr}
	if !d.opCache.isSupported(key) {
		return false, nil
	}
	// namespace controller does not want the garbage collector to insert the orphan finalizer since it calls
	// resource deletions generically.  it will ensure all resources in the namespace are purged prior to releasing
	// namespace itself.
	err := d.Ops.DeleteCollection(ctx, gvr, namespace)
	if err == nil {
		return true, nil
	}
	// this is strange, but we need to special case for both MethodNotSupported and NotFound errors
	// TODO: https://github.com/kubernetes/kubernetes/issues/22413
	// we have a resource returned in the discovery API that supports no top-level verbs:
	//  /apis/extensions/v1beta1/namespaces/default/replicationcontrollers
	// when working with this resource type, we will get a literal not found error rather than expected method not supported
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		return false, nil
	}
	return true, err
}

// listCollection will list the items in the specified namespace
// it returns the following:
//
//	the list of items in the collection (if found)
//	a boolean if the operation is supported
//	an error if the operation is supported but could not be completed.
func (d *NamespacedResourcesDeleter) listCollection(ctx context.Context, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, bool, error) {
	key := operationKey{operation: operationList, gvr: gvr}
	if !d.opCache.isSupported(key) {
		return nil, false, nil
	}
	partialList, err := d.Ops.List(ctx, gvr, namespace)
	if err == nil {
		return partialList, true, nil
	}
	// this is strange, but we need to special case for both MethodNotSupported and NotFound errors
	// TODO: https://github.com/kubernetes/kubernetes/issues/22413
	// we have a resource returned in the discovery API that supports no top-level verbs:
	//  /apis/extensions/v1beta1/namespaces/default/replicationcontrollers
	// when working with this resource type, we will get a literal not found error rather than expected method not supported
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return nil, true, err
}

// deleteEachItem is a helper function that will list the collection of resources and delete each item 1 by 1.
func (d *NamespacedResourcesDeleter) deleteEachItem(ctx context.Context, gvr schema.GroupVersionResource, namespace string) error {
	unstructuredList, listSupported, err := d.listCollection(ctx, gvr, namespace)
	if err != nil {
		return err
	}
	if !listSupported {
		return nil
	}
	for _, item := range unstructuredList.Items {
		if err = d.Ops.Delete(ctx, gvr, namespace, item.GetName()); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			return err
		}
	}
	return nil
}

type gvrDeletionMetadata struct {
	// finalizerEstimateSeconds is an estimate of how much longer to wait.  zero means that no estimate has made and does not
	// mean that all content has been removed.
	finalizerEstimateSeconds int64
	// numRemaining is how many instances of the gvr remain
	numRemaining int
	// finalizersToNumRemaining maps finalizers to how many resources are stuck on them
	finalizersToNumRemaining map[string]int
}

// deleteAllContentForGroupVersionResource will use the dynamic client to delete each resource identified in gvr.
// It returns an estimate of the time remaining before the remaining resources are deleted.
// If estimate > 0, not all resources are guaranteed to be gone.
func (d *NamespacedResourcesDeleter) deleteAllContentForGroupVersionResource(
	ctx context.Context,
	gvr schema.GroupVersionResource, namespace string,
	namespaceDeletedAt metav1.Time) (gvrDeletionMetadata, error) {
	// estimate how long it will take for the resource to be deleted (needed for objects that support graceful delete)
	estimate, err := d.estimateGracefulTermination(ctx, gvr, namespace, namespaceDeletedAt)
	if err != nil {
		return gvrDeletionMetadata{}, err
	}

	// first try to delete the entire collection
	deleteCollectionSupported, err := d.deleteCollection(ctx, gvr, namespace)
	if err != nil {
		return gvrDeletionMetadata{finalizerEstimateSeconds: estimate}, err
	}

	// delete collection was not supported, so we list and delete each item...
	if !deleteCollectionSupported {
		err = d.deleteEachItem(ctx, gvr, namespace)
		if err != nil {
			return gvrDeletionMetadata{finalizerEstimateSeconds: estimate}, err
		}
	}

	// verify there are no more remaining items
	// it is not an error condition for there to be remaining items if local estimate is non-zero
	unstructuredList, listSupported, err := d.listCollection(ctx, gvr, namespace)
	if err != nil {
		return gvrDeletionMetadata{finalizerEstimateSeconds: estimate}, err
	}
	if !listSupported {
		return gvrDeletionMetadata{finalizerEstimateSeconds: estimate}, nil
	}

	// this is the errors that we will return
	if len(unstructuredList.Items) == 0 {
		return gvrDeletionMetadata{}, nil
	}

	finalizersToNumRemaining := map[string]int{}
	for _, item := range unstructuredList.Items {
		for _, finalizer := range item.GetFinalizers() {
			finalizersToNumRemaining[finalizer] = finalizersToNumRemaining[finalizer] + 1
		}
	}

	if estimate != int64(0) {
		return gvrDeletionMetadata{
			finalizerEstimateSeconds: estimate,
			numRemaining:             len(unstructuredList.Items),
			finalizersToNumRemaining: finalizersToNumRemaining,
		}, nil
	}

	// if any item has a finalizer, we treat that as a normal condition, and use a default estimation to allow for GC to complete.
	if len(finalizersToNumRemaining) > 0 {
		return gvrDeletionMetadata{
			finalizerEstimateSeconds: finalizerEstimateSeconds,
			numRemaining:             len(unstructuredList.Items),
			finalizersToNumRemaining: finalizersToNumRemaining,
		}, nil
	}

	// nothing reported a finalizer, so something was unexpected as it should have been deleted.
	return gvrDeletionMetadata{
		finalizerEstimateSeconds: estimate,
		numRemaining:             len(unstructuredList.Items),
	}, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", namespace, gvr)
}

// add is upstream's accumulation into allGVRDeletionMetadata.
func (t ContentTotals) add(gvr schema.GroupVersionResource, meta gvrDeletionMetadata) {
	if meta.numRemaining == 0 {
		return
	}
	t.GVRToNumRemaining[gvr] = meta.numRemaining
	for finalizer, numRemaining := range meta.finalizersToNumRemaining {
		if numRemaining == 0 {
			continue
		}
		t.FinalizersToNumRemaining[finalizer] += numRemaining
	}
}

// deleteAllContent will use the dynamic client to delete each resource identified in groupVersionResources.
// It returns an estimate of the time remaining before the remaining resources are deleted.
// If estimate > 0, not all resources are guaranteed to be gone.
// ns-doctor: it returns the conditions instead of writing them.
func (d *NamespacedResourcesDeleter) deleteAllContent(ctx context.Context, ns *v1.Namespace) ContentResult {
	namespace := ns.Name
	namespaceDeletedAt := *ns.DeletionTimestamp
	var errs []error
	conditionUpdater := NewConditionUpdater(metav1.NewTime(d.now()))
	estimate := int64(0)

	resources, err := d.DiscoverResourcesFn()
	if d.opCache.m == nil {
		d.initOpCache(resources)
	}
	if err != nil {
		// discovery errors are not fatal.  We often have some set of resources we can operate against even if we don't have a complete list
		errs = append(errs, err)
		conditionUpdater.ProcessDiscoverResourcesErr(err)
	}
	groupVersionResources, err := d.deletable(resources)
	if err != nil {
		// discovery errors are not fatal.  We often have some set of resources we can operate against even if we don't have a complete list
		errs = append(errs, err)
		conditionUpdater.ProcessGroupVersionErr(err)
	}

	numRemainingTotals := NewContentTotals()
	var failed []schema.GroupVersionResource
	failedErrs := map[schema.GroupVersionResource]error{}
	if _, hasPods := groupVersionResources[PodsGVR]; hasPods && d.OrderedDeletion {
		// Ensure all pods in the namespace are deleted first
		gvrDeletionMetadata, err := d.deleteAllContentForGroupVersionResource(ctx, PodsGVR, namespace, namespaceDeletedAt)
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to delete pods for namespace: %s, err: %w", namespace, err))
			conditionUpdater.ProcessDeleteContentErr(err)
			failed, failedErrs[PodsGVR] = append(failed, PodsGVR), err
		}
		estimate = max(estimate, gvrDeletionMetadata.finalizerEstimateSeconds)
		numRemainingTotals.add(PodsGVR, gvrDeletionMetadata)

		// Check if any pods remain before proceeding to delete other resources
		if numRemainingTotals.GVRToNumRemaining[PodsGVR] > 0 {
			return ContentResult{Estimate: estimate, Err: utilerrors.NewAggregate(errs), Conditions: conditionUpdater.Conditions(),
				Totals: numRemainingTotals, PodsBlocked: true, Failed: failed, FailedErrs: failedErrs}
		}
	}

	// Proceed with deleting other resources in the namespace
	var gvrs []schema.GroupVersionResource
	for gvr := range groupVersionResources {
		if d.OrderedDeletion && gvr == PodsGVR {
			continue
		}
		gvrs = append(gvrs, gvr)
	}
	for _, r := range d.deleteEach(ctx, gvrs, namespace, namespaceDeletedAt) {
		if r.err != nil {
			// If there is an error, hold on to it but proceed with all the remaining
			// groupVersionResources.
			errs = append(errs, r.err)
			conditionUpdater.ProcessDeleteContentErr(r.err)
			failed, failedErrs[r.gvr] = append(failed, r.gvr), r.err
		}
		estimate = max(estimate, r.meta.finalizerEstimateSeconds)
		numRemainingTotals.add(r.gvr, r.meta)
	}
	conditionUpdater.ProcessContentTotals(numRemainingTotals)

	// if len(errs)==0, NewAggregate returns nil.
	return ContentResult{Estimate: estimate, Err: utilerrors.NewAggregate(errs), Conditions: conditionUpdater.Conditions(), Totals: numRemainingTotals,
		Failed: failed, FailedErrs: failedErrs}
}

type gvrOutcome struct {
	gvr  schema.GroupVersionResource
	meta gvrDeletionMetadata
	err  error
}

// deleteEach runs deleteAllContentForGroupVersionResource for every gvr,
// Workers at a time, and returns the outcomes in a stable order (sorted by
// resource) whatever order they finished in: upstream walks a map, so no
// order is part of its contract, and the condition messages are sorted.
func (d *NamespacedResourcesDeleter) deleteEach(ctx context.Context, gvrs []schema.GroupVersionResource, namespace string, deletedAt metav1.Time) []gvrOutcome {
	sortByName(gvrs)
	out := make([]gvrOutcome, len(gvrs))
	one := func(i int) {
		meta, err := d.deleteAllContentForGroupVersionResource(ctx, gvrs[i], namespace, deletedAt)
		out[i] = gvrOutcome{gvr: gvrs[i], meta: meta, err: err}
	}
	if d.Workers <= 1 {
		// A diagnosis plays the pass over a snapshot, thousands of times
		// over as many namespaces: no goroutines for nothing to wait on.
		for i := range gvrs {
			one(i)
		}
		return out
	}
	// Every piece runs, whatever the context: a cancelled one fails its
	// requests, as upstream's would.
	workqueue.ParallelizeUntil(context.WithoutCancel(ctx), d.Workers, len(gvrs), one)
	return out
}

// estimateGracefulTermination will estimate the graceful termination required for the specific entity in the namespace
func (d *NamespacedResourcesDeleter) estimateGracefulTermination(ctx context.Context, gvr schema.GroupVersionResource, ns string, namespaceDeletedAt metav1.Time) (int64, error) {
	groupResource := gvr.GroupResource()
	estimate := int64(0)
	var err error
	switch groupResource {
	case PodsGVR.GroupResource():
		estimate, err = d.estimateGracefulTerminationForPods(ctx, ns)
	}
	if err != nil {
		return 0, err
	}
	// determine if the estimate is greater than the deletion timestamp
	duration := d.now().Sub(namespaceDeletedAt.Time)
	allowedEstimate := time.Duration(estimate) * time.Second
	if duration >= allowedEstimate {
		estimate = int64(0)
	}
	return estimate, nil
}

// estimateGracefulTerminationForPods determines the graceful termination period for pods in the namespace
func (d *NamespacedResourcesDeleter) estimateGracefulTerminationForPods(ctx context.Context, ns string) (int64, error) {
	podsGetter := d.Pods
	if podsGetter == nil || isNilPointer(podsGetter) {
		return 0, fmt.Errorf("unexpected: podsGetter is nil. Cannot estimate grace period seconds for pods")
	}
	items, err := podsGetter.ListPods(ctx, ns)
	if err != nil {
		return 0, err
	}
	return EstimatePodGracePeriod(items), nil
}

// EstimatePodGracePeriod is the longest termination grace period of the
// pods that have not finished, as upstream's estimate reads them.
func EstimatePodGracePeriod(pods []v1.Pod) int64 {
	estimate := int64(0)
	for i := range pods {
		pod := pods[i]
		// filter out terminal pods
		phase := pod.Status.Phase
		if v1.PodSucceeded == phase || v1.PodFailed == phase {
			continue
		}
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			grace := *pod.Spec.TerminationGracePeriodSeconds
			if grace > estimate {
				estimate = grace
			}
		}
	}
	return estimate
}

func (d *NamespacedResourcesDeleter) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// isNilPointer is upstream's reflect.ValueOf(podsGetter).IsNil().
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
