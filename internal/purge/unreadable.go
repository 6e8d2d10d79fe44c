package purge

import (
	"context"
	"path"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ns-doctor/ns-doctor/internal/apierror"
	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// maxUnreadableProofs bounds the dry-run unsafe DELETEs of one type: the
// server names at most 100 objects, and a few prove the case.
const maxUnreadableProofs = 10

// prover proves, in a server dry run's first pass, that what a failed
// list named unreadable is so.
type prover struct {
	clients *kube.Clients
	ns      string
	opts    *Options
	l       *ledger
}

// prove puts each object a failed list named as unreadable
// (KEP-3926's StorageReadError) to the unsafe DELETE as a dry run, in a
// server dry run on 1.37+: the server accepts it only for an object it
// cannot decode, so the answer proves the diagnosis before anyone deletes
// with finalizers and admission skipped. 1.36 and older refuse the dry run
// (422) and are never sent it.
func (r prover) prove(ctx context.Context, c *deletion.ContentResult) {
	if c == nil || r.opts.DryRun != DryRunServer || !r.opts.OrderedDeletion.Server.Has(compat.UnsafeDeleteDryRun) {
		return
	}
	for _, gvr := range c.Failed {
		e := apierror.Classify(c.FailedErrs[gvr])
		if e.Kind != apierror.StoreReadError || e.Reason != metav1.StatusReasonStoreReadError {
			continue
		}
		for _, key := range e.Keys[:min(len(e.Keys), maxUnreadableProofs)] {
			name := path.Base(key)
			err := r.clients.Metadata.Resource(gvr).Namespace(r.ns).Delete(ctx, name, metav1.DeleteOptions{
				DryRun: []string{metav1.DryRunAll}, IgnoreStoreReadErrorWithClusterBreakingPotential: ptr.To(true),
			})
			r.record(deletion.ResourceName(gvr), name, objectPath(gvr, r.ns, name), err)
		}
	}
}

// record says what the dry run answered: accepted (unreadable,
// proven), 409 (decodable: the object reads fine now), or a refusal.
func (r prover) record(resource, name, request string, err error) {
	switch {
	case err == nil:
		r.l.warn(Warning{Kind: WarnUnreadableProven, Resource: resource, Name: name, Request: request})
	case apierrors.IsConflict(err):
		r.l.warn(Warning{Kind: WarnUnreadableDecodable, Resource: resource, Name: name, Request: request})
	case apierrors.IsNotFound(err):
		// Gone since the list: nothing left to prove.
	default:
		r.l.fail(Failure{Verb: "unsafe-delete", Resource: resource, Name: name, Error: err.Error()})
	}
}

// objectPath is where an object is served, for the unsafe DELETE's step.
func objectPath(gvr schemaGVR, namespace, name string) string {
	base := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		base = "/api/" + gvr.Version
	}
	return base + "/namespaces/" + namespace + "/" + gvr.Resource + "/" + name
}
