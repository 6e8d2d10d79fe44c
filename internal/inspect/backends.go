package inspect

import (
	"context"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/installers"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// webhooks lists admission webhooks, validating and mutating, in one shape.
// Reading them is best effort: without permission the report lacks only
// the webhook blockers.
func (i *Inspector) listWebhooks(ctx context.Context) []diagnose.Webhook {
	var out []diagnose.Webhook
	adm := i.clients.Kube.AdmissionregistrationV1()
	var validating *admissionregv1.ValidatingWebhookConfigurationList
	var validatingErr error
	listed := make(chan struct{})
	go func() {
		defer close(listed)
		validating, validatingErr = adm.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	}()
	// Mutating webhooks are called before validating ones.
	if list, err := adm.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err == nil {
		for _, cfg := range list.Items {
			for _, wh := range cfg.Webhooks {
				out = append(out, webhookOf(cfg.ObjectMeta, "Mutating", wh.Name, wh.FailurePolicy, wh.TimeoutSeconds, wh.ClientConfig, wh.Rules, wh.NamespaceSelector, wh.ObjectSelector))
			}
		}
	} else {
		i.uncheck(diagnose.UncheckedMutatingWebhooks, "", err)
	}
	<-listed
	if list, err := validating, validatingErr; err == nil {
		for _, cfg := range list.Items {
			for _, wh := range cfg.Webhooks {
				out = append(out, webhookOf(cfg.ObjectMeta, "Validating", wh.Name, wh.FailurePolicy, wh.TimeoutSeconds, wh.ClientConfig, wh.Rules, wh.NamespaceSelector, wh.ObjectSelector))
			}
		}
	} else {
		i.uncheck(diagnose.UncheckedValidatingWebhooks, "", err)
	}
	return out
}

func webhookOf(cfg metav1.ObjectMeta, typ, name string, policy *admissionregv1.FailurePolicyType, timeout *int32, cc admissionregv1.WebhookClientConfig,
	rules []admissionregv1.RuleWithOperations, nsSel, objSel *metav1.LabelSelector) diagnose.Webhook {
	// failurePolicy defaults to Fail in admissionregistration/v1.
	fp := string(admissionregv1.Fail)
	if policy != nil {
		fp = string(*policy)
	}
	wh := diagnose.Webhook{Configuration: cfg.Name, Name: name, Type: typ, FailurePolicy: fp, TimeoutSeconds: 10, Rules: rules, NamespaceSelector: nsSel, ObjectSelector: objSel,
		Installer: installers.Of(cfg.Labels, cfg.Annotations)}
	if timeout != nil {
		wh.TimeoutSeconds = *timeout
	}
	if s := cc.Service; s != nil {
		wh.Service = &diagnose.ServiceRef{Namespace: s.Namespace, Name: s.Name, Path: deref(s.Path), Port: 443}
		if s.Port != nil {
			wh.Service.Port = *s.Port
		}
	}
	return wh
}

// crds lists CustomResourceDefinitions (best effort).
func (i *Inspector) listCRDs(ctx context.Context) []diagnose.CRD {
	list, err := i.clients.Dynamic.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		i.uncheck(diagnose.UncheckedCRDs, "", err)
		return nil
	}
	var out []diagnose.CRD
	for _, item := range list.Items {
		crd := diagnose.CRD{Name: item.GetName(), Deleting: item.GetDeletionTimestamp() != nil}
		crd.Group, _, _ = unstructured.NestedString(item.Object, "spec", "group")
		crd.Plural, _, _ = unstructured.NestedString(item.Object, "spec", "names", "plural")
		crd.Kind, _, _ = unstructured.NestedString(item.Object, "spec", "names", "kind")
		crd.Singular, _, _ = unstructured.NestedString(item.Object, "spec", "names", "singular")
		crd.ShortNames, _, _ = unstructured.NestedStringSlice(item.Object, "spec", "names", "shortNames")
		scope, _, _ := unstructured.NestedString(item.Object, "spec", "scope")
		crd.Cluster, crd.Version = scope == "Cluster", storedVersion(item.Object)
		if strategy, _, _ := unstructured.NestedString(item.Object, "spec", "conversion", "strategy"); strategy == "Webhook" {
			svc, found, _ := unstructured.NestedMap(item.Object, "spec", "conversion", "webhook", "clientConfig", "service")
			if found {
				ns, _ := svc["namespace"].(string)
				name, _ := svc["name"].(string)
				crd.ConversionService = &diagnose.ServiceRef{Namespace: ns, Name: name}
			}
		}
		out = append(out, crd)
	}
	return out
}

// storedVersion is the version a CRD stores, if served: the one its
// objects are read in without conversion.
func storedVersion(crd map[string]any) string {
	versions, _, _ := unstructured.NestedSlice(crd, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if stored, _ := m["storage"].(bool); stored {
			if served, _ := m["served"].(bool); served {
				name, _ := m["name"].(string)
				return name
			}
		}
	}
	return ""
}

// serviceState reads a Service and counts its ready endpoints; for one
// that is down, whether its namespace is being deleted (it cannot come
// back there).
func (i *Inspector) serviceState(ctx context.Context, ref diagnose.ServiceRef) diagnose.ServiceState {
	s := i.readService(ctx, ref)
	if s.Down() {
		s.NamespaceTerminating = i.inference.namespaces.get(ref.Namespace, func() string { return i.namespaceState(ctx, ref.Namespace) }) == owners.NamespaceTerminating
	}
	return s
}

func (i *Inspector) readService(ctx context.Context, ref diagnose.ServiceRef) diagnose.ServiceState {
	svc, err := i.clients.Kube.CoreV1().Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return diagnose.ServiceState{}
	case err != nil:
		i.uncheck(diagnose.UncheckedService, ref.Key(), err)
		return diagnose.ServiceState{Unknown: true}
	}
	if svc.Spec.Type == v1.ServiceTypeExternalName {
		// The API server dials the name itself: no endpoints to count.
		return diagnose.ServiceState{Exists: true, ExternalName: svc.Spec.ExternalName}
	}
	state := diagnose.ServiceState{Exists: true}
	slices, err := i.clients.Kube.DiscoveryV1().EndpointSlices(ref.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + ref.Name,
	})
	if err != nil {
		i.uncheck(diagnose.UncheckedEndpointSlices, ref.Key(), err)
		state.Unknown = true
		return state
	}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				state.ReadyEndpoints += len(ep.Addresses)
			}
		}
	}
	if state.ReadyEndpoints == 0 {
		state.Behind = i.behind(ctx, svc)
	}
	return state
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// uncheck records what could not be read, so the report says which
// blockers could not be looked for instead of silently missing them.
func (i *Inspector) uncheck(what diagnose.UncheckedSubject, name string, err error) {
	i.uncheckedMu.Lock()
	defer i.uncheckedMu.Unlock()
	i.unchecked = append(i.unchecked, diagnose.Unchecked{Subject: what, Name: name, Error: err.Error()})
}
