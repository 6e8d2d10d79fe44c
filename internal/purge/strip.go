package purge

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// conflictRetries bounds how often a strip is recomputed after someone
// else changed the object.
const conflictRetries = 3

// stripRemaining removes the asked-for finalizers from what a pass left,
// saving each object first. It returns how many objects it changed.
func (r *run) stripRemaining(ctx context.Context, content *deletion.ContentResult) int {
	changed := 0
	for _, gvr := range stripCandidates(content) {
		list, err := kube.ListMetadata(ctx, r.Clients.SweepMetadata(), gvr, r.Opts.Namespace)
		if err != nil && content.Totals.GVRToNumRemaining[gvr] == 0 {
			continue // its deletion failed already, and the pass says why
		}
		if err != nil {
			r.report.Errors = appendNew(r.report.Errors, fmt.Sprintf("listing %s to strip finalizers: %v", deletion.ResourceName(gvr), err))
			continue
		}
		for _, item := range list.Items {
			if len(r.Opts.Escalations.match(item.Finalizers)) == 0 {
				continue
			}
			if back := r.putBack(gvr, item.Name, item.Finalizers); len(back) > 0 {
				r.report.Strips = appendStrip(r.report.Strips, r.leftAlone(gvr, item.Name, back))
				continue
			}
			s := r.stripOne(ctx, gvr, item.Name)
			r.report.Strips = append(r.report.Strips, s)
			if s.Status == StripRemoved {
				changed++
			}
		}
	}
	return changed
}

// stripOne saves the object, patches its finalizers guarded by its
// resourceVersion, retries after a concurrent change, and remembers what it
// removed: a finalizer put back later is reported, not fought.
func (r *run) stripOne(ctx context.Context, gvr schemaGVR, name string) Strip {
	s := Strip{Resource: deletion.ResourceName(gvr), Name: name}
	for range conflictRetries {
		obj, err := r.Clients.Dynamic.Resource(gvr).Namespace(r.Opts.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s.Status = StripGone
			return s
		}
		if err != nil {
			return r.stripFailed(s, err)
		}
		strip := r.Opts.Escalations.match(obj.GetFinalizers())
		if len(strip) == 0 {
			s.Status = StripNothingLeft
			return s
		}
		s.Finalizers = strip
		if err := r.bk.Save(gvr, obj); err != nil {
			return r.stripFailed(s, err)
		}
		err = r.patchFinalizers(ctx, gvr, name, obj.GetResourceVersion(), without(obj.GetFinalizers(), strip), false)
		if apierrors.IsConflict(err) {
			r.report.Warnings = append(r.report.Warnings, fmt.Sprintf("%s/%s changed while purge worked on it; re-read and retried", s.Resource, name))
			continue
		}
		if err != nil {
			return r.stripFailed(s, err)
		}
		r.change("removed finalizers %v from %s/%s", strip, s.Resource, name)
		s.Status = StripRemoved
		r.rememberStripped(gvr, name, strip)
		return s
	}
	return r.stripFailed(s, fmt.Errorf("the object kept changing (%d conflicts); left alone", conflictRetries))
}

func (r *run) stripFailed(s Strip, err error) Strip {
	s.Status, s.Error = StripFailed, err.Error()
	r.report.Errors = appendNew(r.report.Errors, fmt.Sprintf("removing finalizers from %s/%s: %v", s.Resource, s.Name, err))
	return s
}

// putBack returns the finalizers purge already removed from the object
// that are there again: a live controller re-added them.
func (r *run) putBack(gvr schemaGVR, name string, finalizers []string) []string {
	var out []string
	for _, gone := range r.stripped[deletion.ResourceName(gvr)+"/"+name] {
		if slices.Contains(finalizers, gone) {
			out = append(out, gone)
		}
	}
	return out
}

func (r *run) rememberStripped(gvr schemaGVR, name string, removed []string) {
	key := deletion.ResourceName(gvr) + "/" + name
	r.stripped[key] = append(r.stripped[key], removed...)
}

// leftAlone reports an object whose finalizer came back: removing it again
// would fight the controller that owns it.
func (r *run) leftAlone(gvr schemaGVR, name string, back []string) Strip {
	res := deletion.ResourceName(gvr)
	r.report.Warnings = appendNew(r.report.Warnings, fmt.Sprintf("%s/%s: finalizer %s was put back by a live controller after purge removed it; purge does not fight it: stop that controller or let it finish",
		res, name, strings.Join(back, ", ")))
	return Strip{Resource: res, Name: name, Finalizers: back, Status: StripLeftAlone}
}
