package purge

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/backup"
	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// conflictRetries bounds how often a strip is recomputed after someone
// else changed the object.
const conflictRetries = 3

// stripRemaining removes the asked-for finalizers from what a pass left,
// saving each object first. It returns how many objects it changed.
func (p *Purger) stripRemaining(ctx context.Context, r *Report, bk *backup.Writer, result deletion.Result, ns string) int {
	changed := 0
	for gvr := range result.Totals.GVRToNumRemaining {
		list, err := kube.ListMetadata(ctx, p.Clients.Metadata, gvr, ns)
		if err != nil {
			r.Errors = appendNew(r.Errors, fmt.Sprintf("listing %s to strip finalizers: %v", resourceName(gvr), err))
			continue
		}
		for _, item := range list.Items {
			if len(matchFinalizers(item.Finalizers, p.Opts.RemoveFinalizers, p.Opts.RemoveAllFinalizers)) == 0 {
				continue
			}
			if back := p.putBack(gvr, item.Name, item.Finalizers); len(back) > 0 {
				r.Strips = appendStrip(r.Strips, p.leftAlone(r, gvr, item.Name, back))
				continue
			}
			s := p.stripOne(ctx, r, bk, gvr, ns, item.Name)
			r.Strips = append(r.Strips, s)
			if s.Result == "removed" {
				changed++
			}
		}
	}
	return changed
}

// stripOne saves the object, patches its finalizers guarded by its
// resourceVersion, retries after a concurrent change, and remembers what it
// removed: a finalizer put back later is reported, not fought.
func (p *Purger) stripOne(ctx context.Context, r *Report, bk *backup.Writer, gvr schemaGVR, ns, name string) Strip {
	s := Strip{Resource: resourceName(gvr), Name: name}
	for attempt := 0; attempt < conflictRetries; attempt++ {
		obj, err := p.Clients.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s.Result = "gone before its finalizers were removed"
			return s
		}
		if err != nil {
			return p.stripFailed(r, s, err)
		}
		strip := matchFinalizers(obj.GetFinalizers(), p.Opts.RemoveFinalizers, p.Opts.RemoveAllFinalizers)
		if len(strip) == 0 {
			s.Result = "no matching finalizer left"
			return s
		}
		s.Finalizers = strip
		if err := bk.Save(gvr, obj); err != nil {
			return p.stripFailed(r, s, err)
		}
		err = p.patchFinalizers(ctx, gvr, ns, name, obj.GetResourceVersion(), without(obj.GetFinalizers(), strip), false)
		if apierrors.IsConflict(err) {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s/%s changed while purge worked on it; re-read and retried", s.Resource, name))
			continue
		}
		if err != nil {
			return p.stripFailed(r, s, err)
		}
		r.change("removed finalizers %v from %s/%s", strip, s.Resource, name)
		s.Result = "removed"
		p.rememberStripped(gvr, name, strip)
		return s
	}
	return p.stripFailed(r, s, fmt.Errorf("the object kept changing (%d conflicts); left alone", conflictRetries))
}

func (p *Purger) stripFailed(r *Report, s Strip, err error) Strip {
	s.Result = "failed: " + err.Error()
	r.Errors = appendNew(r.Errors, fmt.Sprintf("removing finalizers from %s/%s: %v", s.Resource, s.Name, err))
	return s
}

// putBack returns the finalizers purge already removed from the object
// that are there again: a live controller re-added them.
func (p *Purger) putBack(gvr schemaGVR, name string, finalizers []string) []string {
	var out []string
	for _, gone := range p.stripped[resourceName(gvr)+"/"+name] {
		for _, f := range finalizers {
			if f == gone {
				out = append(out, f)
			}
		}
	}
	return out
}

func (p *Purger) rememberStripped(gvr schemaGVR, name string, removed []string) {
	if p.stripped == nil {
		p.stripped = map[string][]string{}
	}
	key := resourceName(gvr) + "/" + name
	p.stripped[key] = append(p.stripped[key], removed...)
}

// leftAlone reports an object whose finalizer came back: removing it again
// would fight the controller that owns it.
func (p *Purger) leftAlone(r *Report, gvr schemaGVR, name string, back []string) Strip {
	r.Warnings = appendNew(r.Warnings, fmt.Sprintf("%s/%s: finalizer %s was put back by a live controller after purge removed it; purge does not fight it: stop that controller or let it finish",
		resourceName(gvr), name, strings.Join(back, ", ")))
	return Strip{Resource: resourceName(gvr), Name: name, Finalizers: back, Result: "left alone: put back by a live controller"}
}

// appendStrip adds s unless the same result for the same object is already
// listed (every pass meets it again).
func appendStrip(list []Strip, s Strip) []Strip {
	for _, x := range list {
		if x.Resource == s.Resource && x.Name == s.Name && x.Result == s.Result {
			return list
		}
	}
	return append(list, s)
}
