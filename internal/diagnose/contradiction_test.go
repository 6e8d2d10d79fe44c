package diagnose_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	. "github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/printer"
)

// A step the evidence rules out is not a step: no report offers one its
// own evidence contradicts. Every blocker of every case of TestBlockers,
// and every backend (an APIService's, a fail-closed webhook's, a
// conversion webhook's, an aggregated API's that fails lists) in every
// state a Service can be found in, in the diagnosed namespace or
// another: the evidence's words are checked against the steps offered.
func TestNoStepItsEvidenceRulesOut(t *testing.T) {
	var reports []Report
	for _, tc := range blockerCases() {
		reports = append(reports, Diagnose(tc.obs()))
	}
	for _, home := range []string{"demo", "elsewhere"} {
		for name, state := range serviceStates() {
			for kind, build := range backendScenarios(home) {
				obs := build()
				for key := range obs.Services {
					obs.Services[key] = state
				}
				r := Diagnose(obs)
				if len(r.Blocking()) == 0 {
					t.Errorf("%s, service in %s %s: no blocker", kind, home, name)
				}
				reports = append(reports, r)
			}
		}
	}
	checked := 0
	for _, r := range reports {
		for _, b := range r.Blockers {
			checked++
			for _, c := range contradictions(b) {
				t.Errorf("%s %s: %s\n%s", b.Kind, b.Subject, c, dump([]Blocker{b}))
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d blockers checked", checked)
	}
}

// The evidence's words that rule steps out: a Service that cannot be
// restored (its namespace is being deleted), one that is there (it
// answers, or is named by DNS), one that is not.
var (
	serviceLine   = regexp.MustCompile(`^service (\S+): (.*)$`)
	conversionRef = regexp.MustCompile(`^conversion service (\S+): (.*)$`)
	readyCount    = regexp.MustCompile(`^(\d+) ready endpoints`)
)

// contradictions are the steps of b that its own evidence rules out.
func contradictions(b Blocker) []string {
	w := printer.WordsOf(b)
	var out []string
	for _, line := range w.Evidence {
		m := serviceLine.FindStringSubmatch(line)
		if m == nil {
			m = conversionRef.FindStringSubmatch(line)
		}
		if m == nil {
			continue
		}
		svc, said := m[1], m[2]
		ns, _, _ := strings.Cut(svc, "/")
		missing := strings.HasPrefix(said, "not found")
		there := !missing && said != "could not be read"
		up := strings.HasPrefix(said, "ExternalName ")
		if n := readyCount.FindStringSubmatch(said); n != nil {
			count, _ := strconv.Atoi(n[1])
			up = count > 0
		}
		gone := strings.Contains(said, "it cannot be restored there")
		for _, a := range b.Actions {
			switch {
			case a.Kind == ActionRestoreService && a.Target == svc && gone:
				out = append(out, fmt.Sprintf("step %q, while the evidence says service %s cannot be restored there", printer.ActionWords(a), svc))
			case a.Kind == ActionRestoreService && a.Target == svc && there:
				out = append(out, fmt.Sprintf("step %q, while the evidence says service %s is there", printer.ActionWords(a), svc))
			case a.Kind == ActionMakeBackendReady && a.Value == ns && (gone || up):
				out = append(out, fmt.Sprintf("step %q, while the evidence says service %s: %s", printer.ActionWords(a), svc, said))
			case a.Kind == ActionMakeBackendReady && a.Value == ns && !there:
				out = append(out, fmt.Sprintf("step %q, while the evidence says service %s is not there", printer.ActionWords(a), svc))
			}
		}
		for _, restore := range []string{"restore service " + svc, "restore the service " + svc} {
			if (gone || there) && strings.Contains(w.NextStep, restore) {
				out = append(out, fmt.Sprintf("next step %q, while the evidence says service %s: %s", w.NextStep, svc, said))
			}
		}
	}
	return out
}

// serviceStates are the states a backend Service may be found in.
func serviceStates() map[string]ServiceState {
	behind := &ServiceBackend{Selector: "app=backend", Pods: 1,
		Workloads: []WorkloadState{{WorkloadRef: WorkloadRef{Kind: "Deployment", Namespace: "x", Name: "backend"}, Ready: 0, Want: 1}},
		NotReady:  []PodNotReady{{Name: "backend-1", Phase: "Pending", Why: "not scheduled yet"}}}
	return map[string]ServiceState{
		"missing":                              {},
		"missing, its namespace terminating":   {NamespaceTerminating: true},
		"without endpoints":                    {Exists: true},
		"without endpoints, terminating":       {Exists: true, NamespaceTerminating: true},
		"selecting a workload not ready":       {Exists: true, Behind: behind},
		"selecting a workload not ready, term": {Exists: true, Behind: behind, NamespaceTerminating: true},
		"ready":                                {Exists: true, ReadyEndpoints: 2},
		"ExternalName":                         {Exists: true, ExternalName: "backend.example.net"},
		"unreadable":                           {Unknown: true},
	}
}

// backendScenarios are the blockers that name a backend Service, each
// with its Service in namespace home.
func backendScenarios(home string) map[string]func() Observation {
	return map[string]func() Observation{
		"APIService": func() Observation {
			obs := discoveryFailed(observation())
			obs.APIServices = []apiregv1.APIService{apiService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", home, "metrics", "FailedDiscoveryCheck")}
			obs.Services[home+"/metrics"] = ServiceState{}
			return obs
		},
		"fail-closed webhook": func() Observation {
			obs := with(observation(), configMaps, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "c"}})
			obs.Webhooks = []Webhook{failClosed("guard", home, "guard", configMaps, admissionregv1.Delete)}
			obs.Services[home+"/guard"] = ServiceState{}
			return obs
		},
		"conversion webhook": func() Observation {
			obs := observation()
			obs.Snapshot.ListErrs[widgets] = apierrors.NewInternalError(errors.New(`conversion webhook for example.com/v1, Kind=Widget failed: service "conv" not found`))
			obs.CRDs = []CRD{{Name: "widgets.example.com", Group: "example.com", Plural: "widgets", ConversionService: &ServiceRef{Namespace: home, Name: "conv"}}}
			obs.Services[home+"/conv"] = ServiceState{}
			return obs
		},
		"aggregated API that fails the list": func() Observation {
			obs := with(observation(), configMaps, terminatingItem("c", time.Minute, "example.com/x"))
			obs.Snapshot.ListErrs[widgets] = apierrors.NewServiceUnavailable("gadget backend down")
			obs.APIServices = []apiregv1.APIService{apiService("v1.example.com", "example.com", "v1", home, "widgets", "Passed")}
			obs.Services[home+"/widgets"] = ServiceState{}
			return obs
		},
	}
}
