package purge

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/ns-doctor/ns-doctor/internal/access"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// --delete-apiservice deletes APIServices that are not available: while
// one is, discovery fails, and the namespace controller finalizes no
// namespace at all. Only an aggregated one (served by a Service, not by
// kube-apiserver itself) that exists and is not Available; each is saved
// to the backup's cluster/ folder first, re-appliable.
var deleteAPIServiceEscalation = Escalation{
	Flag: diagnose.FlagDeleteAPIService, Value: "NAME", Example: "v1beta1.metrics.k8s.io",
	Help: "Escalation: delete these APIServices (comma-separated), each only if it is aggregated and not Available, saved first: discovery then works again",
	Leak: "the API group goes from the cluster until the saved APIService is re-applied; what its backend stored stays in the backend's own storage",
	check: func(names []string) error {
		for _, name := range names {
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				return fmt.Errorf("invalid %s %q: %s", diagnose.FlagDeleteAPIService, name, errs[0])
			}
		}
		return nil
	},
	consent: func(names []string) []string {
		return []string{fmt.Sprintf("and delete APIService(s) %s, which are not available", strings.Join(names, ", "))}
	},
	answers: func(names []string, a diagnose.Action) bool {
		return a.Flag == diagnose.FlagDeleteAPIService && slices.Contains(names, a.Value)
	},
	complete: func(obs diagnose.Observation) []Value {
		var out []Value
		for _, s := range obs.APIServices {
			if reason, down := unavailable(&s); down && s.Spec.Service != nil {
				out = append(out, Value{s.Name, "not available: " + reason})
			}
		}
		return out
	},
	start: func(names []string) action { return &apiServiceDeleter{names: names} },
	changes: map[ChangeKind]func(Change, string) string{ChangeDeletedAPIService: func(c Change, _ string) string {
		return fmt.Sprintf("deleted APIService %s (not available), saved first", c.Name)
	}},
}

// ChangeDeletedAPIService: --delete-apiservice.
const ChangeDeletedAPIService ChangeKind = "DeletedAPIService"

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// apiServiceDeleter deletes the named APIServices before the first pass.
type apiServiceDeleter struct {
	names []string
	found []*unstructured.Unstructured
}

// resolve reads each APIService again as the run starts.
func (d *apiServiceDeleter) resolve(ctx context.Context, a actor, _ scope) error {
	return d.precheck(ctx, a)
}

// precheck reads each APIService: one that does not exist, is served by
// kube-apiserver itself, or is Available is bad input.
func (d *apiServiceDeleter) precheck(ctx context.Context, a actor) error {
	d.found = nil
	for _, name := range d.names {
		obj, err := a.read(ctx, apiServicesGVR, "", name)
		switch {
		case apierrors.IsNotFound(err):
			return &UsageError{fmt.Sprintf("%s=%s: no APIService of that name (kubectl get apiservices)", diagnose.FlagDeleteAPIService, name)}
		case err != nil:
			return fmt.Errorf("reading apiservice %s: %w", name, err)
		}
		var svc apiregv1.APIService
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &svc); err != nil {
			return fmt.Errorf("reading apiservice %s: %w", name, err)
		}
		if svc.Spec.Service == nil {
			return &UsageError{fmt.Sprintf("%s=%s: that APIService is served by kube-apiserver itself (local): deleting it removes a built-in API; drop it", diagnose.FlagDeleteAPIService, name)}
		}
		if _, down := unavailable(&svc); !down {
			return &UsageError{fmt.Sprintf("%s=%s: that APIService is Available, so it does not keep namespaces from going; drop it", diagnose.FlagDeleteAPIService, name)}
		}
		d.found = append(d.found, obj)
	}
	return nil
}

func (d *apiServiceDeleter) needs(scope) []access.Permission {
	var out []access.Permission
	for _, name := range d.names {
		out = append(out, access.Permission{Verb: "get", Group: apiServicesGVR.Group, Resource: apiServicesGVR.Resource, Name: name},
			access.Permission{Verb: "delete", Group: apiServicesGVR.Group, Resource: apiServicesGVR.Resource, Name: name})
	}
	return out
}

// before deletes each APIService, saved first, its UID as a precondition
// (one re-created since is not touched). The next pass discovers afresh;
// a plan drops the group-version from what it plays over.
func (d *apiServiceDeleter) before(ctx context.Context, a actor, _ scope) (func(), error) {
	for _, obj := range d.found {
		gv := servedGroupVersion(obj)
		sent, err := a.send(ctx, Write{Verb: "delete", Resource: apiServicesGVR, Name: obj.GetName(), UID: obj.GetUID(), Save: obj, Reshapes: true,
			Play:   func(p *planState) { p.disc = withoutGroupVersion(p.disc, gv) },
			Change: &Change{Kind: ChangeDeletedAPIService, Resource: "apiservices", Name: obj.GetName()}})
		step := Step{Verb: "delete", Resource: "apiservices.apiregistration.k8s.io", Name: obj.GetName(), Objects: 1, Status: pick(sent, StepSent, StepPlanned)}
		if err != nil {
			step.Status, step.Error = StepFailed, err.Error()
			step.Refusal = a.fail(ctx, apiServicesGVR, Failure{Verb: "delete", Resource: "apiservices", Name: obj.GetName()}, err)
		}
		a.step(step)
		if err != nil && sent.ForReal {
			return func() {}, fmt.Errorf("deleting apiservice %s: %w", obj.GetName(), err)
		}
	}
	return func() {}, nil
}

// unavailable tells whether an APIService is not Available, and why.
func unavailable(svc *apiregv1.APIService) (string, bool) {
	for _, c := range svc.Status.Conditions {
		if c.Type == apiregv1.Available {
			return c.Reason, c.Status != apiregv1.ConditionTrue
		}
	}
	return "no Available condition", true
}

// servedGroupVersion is the group-version an APIService serves.
func servedGroupVersion(obj *unstructured.Unstructured) schema.GroupVersion {
	group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
	version, _, _ := unstructured.NestedString(obj.Object, "spec", "version")
	return schema.GroupVersion{Group: group, Version: version}
}

// withoutGroupVersion is disc once gv is no longer served: it neither
// lists it nor fails on it.
func withoutGroupVersion(disc *kube.Discovery, gv schema.GroupVersion) *kube.Discovery {
	if disc == nil {
		return nil
	}
	out := &kube.Discovery{Resources: disc.Resources, Failed: maps.Clone(disc.Failed)}
	delete(out.Failed, gv)
	if len(out.Failed) > 0 {
		out.Err = &discovery.ErrGroupDiscoveryFailed{Groups: out.Failed}
	}
	return out
}
