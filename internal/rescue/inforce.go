package rescue

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/ns-doctor/ns-doctor/internal/kube"
)

// InForce says whether the API server was seen refusing the namespace
// controller once the hold was applied. A stored policy and binding are
// not yet an enforced one: kube-apiserver loads them from its informers a
// moment later, and until then the controller's deletes go through.
type InForce struct {
	// Proven: a server dry run of a DELETE sent as the namespace
	// controller was refused by the hold (nothing is persisted).
	Proven bool `json:"proven"`
	// Object is what the dry run asked to delete, as "resource/name".
	Object string `json:"object,omitempty"`
	// AfterMs is how long, in milliseconds from the start of the run, it
	// took (or until rescue gave up).
	AfterMs int64 `json:"afterMs"`
	// Why it could not be proven.
	Why string `json:"why,omitempty"`
}

// ProofUser is who the dry run is sent as: the namespace controller's own
// service account, which the API server's bootstrap policy lets delete
// anything whether or not kube-controller-manager runs as it.
const ProofUser = "system:serviceaccount:kube-system:namespace-controller"

// proofTypes are where a dry run finds an object to ask about: kinds
// nearly every namespace has, read one page of a few each.
var proofTypes = []schema.GroupVersionResource{
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "serviceaccounts"},
	{Version: "v1", Resource: "secrets"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "persistentvolumeclaims"},
}

// proveTimeout bounds how long rescue waits to see the hold enforced
// before it goes on to save (the report then says it is unproven).
const proveTimeout = 10 * time.Second

// proveHold polls a dry-run DELETE as the namespace controller until the
// hold refuses it. It never fails the rescue: what it cannot prove, it
// says why.
func proveHold(ctx context.Context, c *kube.Clients, namespace string, start time.Time) InForce {
	return prove(ctx, c, namespace, start, true)
}

// proveReleased polls the same dry run until the hold no longer refuses
// it: kube-apiserver drops a removed binding a moment after it is gone,
// and a deletion driven before that would be refused again.
func proveReleased(ctx context.Context, c *kube.Clients, namespace string, start time.Time) InForce {
	return prove(ctx, c, namespace, start, false)
}

// prove polls a dry-run DELETE as the namespace controller until the
// hold's answer is refused (held) or is not (released).
func prove(ctx context.Context, c *kube.Clients, namespace string, start time.Time, refused bool) (out InForce) {
	defer func() { out.AfterMs = time.Since(start).Milliseconds() }()
	gvr, name, ok := anObject(ctx, c, namespace)
	if !ok {
		out.Why = "nothing left in the namespace to ask a dry run about"
		return out
	}
	out.Object = gvr.Resource + "/" + name
	asController, err := impersonating(c.Config, ProofUser)
	if err != nil {
		out.Why = err.Error()
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, proveTimeout)
	defer cancel()
	for {
		err := asController.Resource(gvr).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		byHold := err != nil && strings.Contains(err.Error(), HoldName(namespace))
		switch {
		case byHold == refused:
			out.Proven = true
			return out
		case apierrors.IsForbidden(err) && !byHold:
			// Refused before admission: the caller may not impersonate.
			out.Why = fmt.Sprintf("a dry run as %s was refused before the hold could answer (impersonation not allowed?): %v", ProofUser, err)
			return out
		case apierrors.IsNotFound(err):
			out.Why = fmt.Sprintf("%s went away before the dry run", out.Object)
			return out
		}
		select {
		case <-ctx.Done():
			out.Why = fmt.Sprintf("a dry-run DELETE as %s was still %s %s after the hold was changed", ProofUser, map[bool]string{true: "allowed", false: "refused"}[refused], proveTimeout)
			return out
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// anObject finds an object of namespace not already being deleted.
func anObject(ctx context.Context, c *kube.Clients, namespace string) (schema.GroupVersionResource, string, bool) {
	for _, gvr := range proofTypes {
		list, err := c.Metadata.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: 20})
		if err != nil {
			continue
		}
		for _, o := range list.Items {
			if o.DeletionTimestamp == nil {
				return gvr, o.Name, true
			}
		}
	}
	return schema.GroupVersionResource{}, "", false
}

// impersonating is a dynamic client acting as user (a service account: its
// groups are the ones the API server gives service accounts).
func impersonating(cfg *rest.Config, user string) (dynamic.Interface, error) {
	if cfg == nil {
		return nil, fmt.Errorf("no client configuration to impersonate %s with", user)
	}
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{UserName: user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	d, err := dynamic.NewForConfig(as)
	if err != nil {
		return nil, fmt.Errorf("a client as %s: %w", user, err)
	}
	return d, nil
}
