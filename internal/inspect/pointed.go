package inspect

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// A namespace's own metadata finalizer whose writer runs, yet stays: the
// object the finalizer's name points to (owners.Lookups) is read, a GET
// per type and name, a few at most, each once per inspector; whether it
// still selects the namespace is owners.SelectionOf's.

// pointedRead is one GET of a pointed object: the object, or none, or
// why it could not be read.
type pointedRead struct {
	obj       *unstructured.Unstructured
	unchecked *diagnose.Unchecked
}

// writerRuns tells a namespace finalizer whose field manager (a
// controller, not a tool that applies manifests) is known and whose
// owner runs: it is there, yet does not remove it.
func writerRuns(s diagnose.OwnerState) bool {
	in := s.Inferred
	if in == nil || s.State != diagnose.OwnerRunningReady || in.Object != nil {
		// An owner reference already names the namespace's owner object.
		return false
	}
	for _, m := range in.SetBy {
		if !m.Applier {
			return true
		}
	}
	return false
}

// pointedObject finds the object a namespace finalizer's name points to,
// and says whether it still selects the namespace; nil when the finalizer
// points into no cluster-scoped type its domain names.
func (i *Inspector) pointedObject(ctx context.Context, ns *v1.Namespace, finalizer string, ev *evidence) *owners.Pointed {
	lookups := owners.Lookups(finalizer, i.pointTypes())
	if len(lookups) == 0 {
		return nil
	}
	p := &owners.Pointed{Names: lookups[0].Names, State: owners.ObjectNotFound}
	namesKind := false
	for _, l := range lookups {
		p.Looked = append(p.Looked, l.Type.String())
		namesKind = namesKind || l.NamesKind
	}
	for _, l := range lookups {
		// The type's names, listed, say which object the finalizer's name
		// embeds, however it is embedded; a type too large for a page is
		// read by the names the finalizer's suffixes give.
		names := l.Names
		if list := i.pointedNames(ctx, l.Type); list.unchecked != nil {
			ev.uncheckedOnce(*list.unchecked)
			p.State = owners.ObjectUnknown
			continue
		} else if list.complete {
			names = owners.Embedded(finalizer, list.names)
		}
		for _, name := range names {
			r := i.readPointed(ctx, l.Type, name)
			switch {
			case r.unchecked != nil:
				ev.uncheckedOnce(*r.unchecked)
				p.State = owners.ObjectUnknown
			case r.obj != nil:
				return found(p, l.Type, r.obj, ns)
			}
		}
	}
	if p.State == owners.ObjectNotFound && namesKind {
		p.State = owners.ObjectGone
	}
	return p
}

// found is the pointed object as found: there or being deleted, and
// whether its spec still selects the namespace.
func found(p *owners.Pointed, t owners.PointType, obj *unstructured.Unstructured, ns *v1.Namespace) *owners.Pointed {
	p.Object, p.State = t.String()+"/"+obj.GetName(), owners.ObjectPresent
	if obj.GetDeletionTimestamp() != nil {
		p.State = owners.ObjectDeleting
	}
	p.Selection, p.Field = owners.SelectionOf(obj.Object, ns.Name, ns.Labels)
	return p
}

// pointTypes are the cluster-scoped custom resource types served.
func (i *Inspector) pointTypes() []owners.PointType {
	i.mu.Lock()
	crds := i.crds
	i.mu.Unlock()
	var out []owners.PointType
	for _, c := range crds {
		if c.Cluster && c.Version != "" && !c.Deleting {
			out = append(out, owners.PointType{Group: c.Group, Version: c.Version, Resource: c.Plural, Kind: c.Kind, Singular: c.Singular, ShortNames: c.ShortNames})
		}
	}
	return out
}

// maxPointedList bounds the objects of a type listed to find the one a
// namespace finalizer's name embeds: one page.
const maxPointedList = 500

// pointedList is a type's object names as listed: complete when the type
// holds no more than a page.
type pointedList struct {
	names     []string
	complete  bool
	unchecked *diagnose.Unchecked
}

// pointedNames lists the names of a cluster-scoped type's objects
// (metadata only, one page), once per inspector.
func (i *Inspector) pointedNames(ctx context.Context, t owners.PointType) pointedList {
	return i.inference.pointedLists.get(t.String(), func() pointedList {
		gvr := schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}
		list, err := i.clients.Metadata.Resource(gvr).List(ctx, metav1.ListOptions{Limit: maxPointedList})
		if err != nil {
			return pointedList{unchecked: &diagnose.Unchecked{Subject: diagnose.UncheckedPointedObject, Name: t.String(), Error: err.Error()}}
		}
		out := pointedList{complete: list.Continue == ""}
		for _, item := range list.Items {
			out.names = append(out.names, item.Name)
		}
		return out
	})
}

// readPointed GETs one object of a type by name, once per inspector.
func (i *Inspector) readPointed(ctx context.Context, t owners.PointType, name string) pointedRead {
	key := t.String() + "/" + name
	return i.inference.pointed.get(key, func() pointedRead {
		gvr := schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}
		obj, err := i.clients.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return pointedRead{}
		case err != nil:
			return pointedRead{unchecked: &diagnose.Unchecked{Subject: diagnose.UncheckedPointedObject, Name: key, Error: err.Error()}}
		}
		return pointedRead{obj: obj}
	})
}
