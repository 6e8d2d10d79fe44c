package inspect

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
)

// An object held by its finalizers may itself hold an owner back: an
// owner deleted in the foreground keeps its foregroundDeletion finalizer
// until every dependent that blocks its deletion (blockOwnerDeletion) is
// gone. Owners in the namespace are in its snapshot; cluster-scoped ones
// are read here, by the held objects' owner references: a few, each once
// per inspector (the reads a namespace's own owner reference shares).

// maxForegroundOwners bounds the cluster-scoped owners read for one
// namespace.
const maxForegroundOwners = 5

// foregroundOwners are the cluster-scoped owners being deleted in the
// foreground that held objects of the namespace block.
func (i *Inspector) foregroundOwners(ctx context.Context, snap *deletion.Snapshot, ev *evidence) []diagnose.WaitingOwner {
	var out []diagnose.WaitingOwner
	read := map[string]bool{}
	for gvr, list := range snap.Listed() {
		for _, item := range list.Items {
			if len(item.Finalizers) == 0 {
				continue
			}
			for _, ref := range item.OwnerReferences {
				key := ref.APIVersion + "/" + ref.Kind + "/" + ref.Name + "/" + string(ref.UID)
				if ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion || !read[key] && len(read) == maxForegroundOwners {
					continue
				}
				read[key] = true
				r := i.clusterOwner(ctx, ref, key)
				if r.unchecked != nil {
					ev.uncheckedOnce(*r.unchecked)
				}
				if r.foreground {
					out = append(out, diagnose.WaitingOwner{Owner: r.resource + "/" + ref.Name, Dependent: deletion.ResourceName(gvr) + "/" + item.Name, ClusterScoped: true})
				}
			}
		}
	}
	return out
}

// clusterOwner reads an owner reference's object when its kind is
// cluster-scoped (a namespaced owner is in the snapshot), once per
// inspector.
func (i *Inspector) clusterOwner(ctx context.Context, ref metav1.OwnerReference, key string) objectRead {
	return i.inference.objects.get(key, func() objectRead { return i.readOwnerObject(ctx, ref) })
}
