package purge

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"

	"github.com/ns-doctor/ns-doctor/internal/deletion"
)

// strip removes the asked-for finalizers (--remove-finalizers,
// --remove-all-finalizers) from what a pass left, each object saved first.
// It returns how many objects it changed (or would).
func (r *run) strip(ctx context.Context, content *deletion.ContentResult) int {
	changed := 0
	for _, gvr := range stripCandidates(content) { // none: nothing left to strip
		list, err := r.w.list(ctx, gvr, r.ns())
		if err != nil && content.Totals.GVRToNumRemaining[gvr] == 0 {
			continue // its deletion failed already, and the pass says why
		}
		if err != nil {
			r.fail(Failure{Verb: "list", Resource: deletion.ResourceName(gvr), Error: err.Error()})
			continue
		}
		for _, item := range list.Items {
			if len(r.Opts.match(item.Finalizers)) == 0 {
				continue
			}
			if back := r.putBack(gvr, item.Name, item.Finalizers); len(back) > 0 {
				r.leftAlone(gvr, item.Name, back)
				continue
			}
			s := r.stripOne(ctx, gvr, item.Name)
			r.report.Strips = appendStrip(r.report.Strips, s)
			if s.Status == StripRemoved || s.Status == StripPlanned {
				changed++
			}
		}
	}
	return changed
}

// stripOne reads the object, saves it, and patches its finalizers guarded
// by its resourceVersion; after a concurrent change it reads again and
// retries. What it removed is remembered: a finalizer put back later is
// reported, not fought.
func (r *run) stripOne(ctx context.Context, gvr schemaGVR, name string) Strip {
	s := Strip{Resource: deletion.ResourceName(gvr), Name: name}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := r.w.read(ctx, gvr, r.ns(), name)
		if apierrors.IsNotFound(err) {
			s.Status = StripGone
			return nil
		}
		if err != nil {
			return err
		}
		strip := r.Opts.match(obj.GetFinalizers())
		if len(strip) == 0 {
			s.Status = StripNothingLeft
			return nil
		}
		s.Finalizers = strip
		after := obj.DeepCopy()
		after.SetFinalizers(without(obj.GetFinalizers(), strip))
		patch, err := guardedPatch(obj, after)
		if err != nil {
			return err
		}
		_, err = r.w.send(ctx, Write{Verb: "patch", Resource: gvr, Namespace: r.ns(), Name: name, Patch: patch, Op: "UPDATE", Save: obj,
			Play: func(p *deletion.PlanOps, _ *deletion.PlanNamespaces) { p.RemoveFinalizers(gvr, name, strip) }})
		if apierrors.IsConflict(err) {
			r.warn(Warning{Kind: WarnConflict, Resource: s.Resource, Name: name})
		}
		return err
	})
	switch {
	case err != nil:
		s.Status, s.Error, s.Refusal = StripFailed, err.Error(), r.whoRefused(ctx, gvr, err)
		r.fail(Failure{Verb: "strip", Resource: s.Resource, Name: name, Error: err.Error(), Refusal: s.Refusal})
	case s.Status == "":
		s.Status = done(r, StripRemoved, StripPlanned)
		r.changed(Change{Kind: ChangeStrippedFinalizers, Resource: s.Resource, Name: name, Finalizers: s.Finalizers})
		r.rememberStripped(gvr, name, s.Finalizers)
	}
	return s
}

// appendStrip adds s unless the same result for the same object is already
// listed (later passes meet it again).
func appendStrip(list []Strip, s Strip) []Strip {
	for _, x := range list {
		if x.Resource == s.Resource && x.Name == s.Name && x.Status == s.Status {
			return list
		}
	}
	return append(list, s)
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
func (r *run) leftAlone(gvr schemaGVR, name string, back []string) {
	res := deletion.ResourceName(gvr)
	r.warn(Warning{Kind: WarnPutBack, Resource: res, Name: name, Finalizers: back})
	r.report.Strips = appendStrip(r.report.Strips, Strip{Resource: res, Name: name, Finalizers: back, Status: StripLeftAlone})
}
