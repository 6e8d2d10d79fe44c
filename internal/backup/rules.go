package backup

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Verdict is what a restore does with one saved object.
type Verdict string

// The verdicts.
const (
	// Restore: applied (server-side) into the namespace, as the row edits it.
	Restore Verdict = "Restore"
	// LeaveOut: not applied; the row says who makes it again, or why not.
	LeaveOut Verdict = "LeaveOut"
)

// Rule is one row of the restore table: which saved objects it decides,
// what it does with them and why. The first row that matches an object
// decides it; the table is the one place the save (what goes to objects/,
// what to record/, what is edited there) and the restore read.
type Rule struct {
	// Name names the row in the plan, the report and the tests.
	Name string
	// Resources are the types the row is for; none: every type.
	Resources []schema.GroupResource
	// Which says, in words, which of those objects match (none: all).
	Which string
	// Verdict is what the row does with an object it matches.
	Verdict Verdict
	// Why is the reason the plan gives for each object the row decides;
	// %s, when present, is the object's controller owner ("Kind name").
	Why string
	// match narrows the row to some objects of its types (nil: all).
	match func(o *unstructured.Unstructured, in Context) bool
	// edit changes the object to apply and says what it changed. Edits
	// that need no Context also shape the saved copy (Context{}), so the
	// folder is what `kubectl apply --server-side -f objects/` accepts.
	edit func(o *unstructured.Unstructured, in Context) []string
}

// Context is what a row may know beyond the object itself: which owners
// the restore brings back, and what of the cluster it restores into
// bears on a row. The save passes the zero Context.
type Context struct {
	// Restored are the uids of the saved objects the restore applies
	// (possible owners); nil at save time, when no owner is known.
	Restored map[string]bool
	// Clone: the restore goes into another namespace than the saved one,
	// From, Into.
	Clone      bool
	From, Into string
	// Volumes are what the cluster says of the volumes the saved claims
	// name, by volume name: a claim cannot bind one that is gone or that
	// another claim holds.
	Volumes map[string]VolumeFact
}

// VolumeFact is what the cluster says of one volume a saved claim names:
// why a claim cannot have it, in words ("is gone", "is bound to
// shop/data"), or "" when it can.
type VolumeFact struct {
	Unusable string
}

func (in Context) atSave() bool { return in.Restored == nil }

var (
	grPods         = schema.GroupResource{Resource: "pods"}
	grServices     = schema.GroupResource{Resource: "services"}
	grSecrets      = schema.GroupResource{Resource: "secrets"}
	grConfigMaps   = schema.GroupResource{Resource: "configmaps"}
	grClaims       = schema.GroupResource{Resource: "persistentvolumeclaims"}
	grAccounts     = schema.GroupResource{Resource: "serviceaccounts"}
	grJobs         = schema.GroupResource{Group: "batch", Resource: "jobs"}
	grReplicaSets  = schema.GroupResource{Group: "apps", Resource: "replicasets"}
	grRevisions    = schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}
	grEvents       = schema.GroupResource{Resource: "events"}
	grEventsK8s    = schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
	grEndpoints    = schema.GroupResource{Resource: "endpoints"}
	grEndpointSets = schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}
	grRoleBindings = schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}
)

// remadeBy are the built-in controllers that make an object again from
// their own spec, by the object's type: the saved copy would be a second,
// unowned one (a ReplicaSet's pod, a Deployment's ReplicaSet, a
// CronJob's Job). Claims and Secrets are never here: what holds data
// comes back.
var remadeBy = map[schema.GroupResource][]string{
	grPods:        {"apps/ReplicaSet", "apps/StatefulSet", "apps/DaemonSet", "batch/Job"},
	grReplicaSets: {"apps/Deployment"},
	grJobs:        {"batch/CronJob"},
	grRevisions:   {"apps/StatefulSet", "apps/DaemonSet"},
}

// holdsState are the types whose objects carry data or credentials: with
// their owner not in the backup they still come back, unowned.
var holdsState = []schema.GroupResource{grClaims, grSecrets, grConfigMaps}

// The API server's labels on a Job that does not choose its own selector
// (batch/v1 Job, spec.manualSelector unset): it sets them from the Job's
// uid and refuses them, with another uid, on a new Job.
var jobServerLabels = []string{"batch.kubernetes.io/controller-uid", "controller-uid", "batch.kubernetes.io/job-name", "job-name"}

// Rules is the restore table, in the order its rows are tried.
func Rules() []Rule { return slices.Clone(table()) }

// table is the restore table, made once: a purge decides every object it
// saves of a type some row names (every ConfigMap), and building the
// table for each allocated more than saving it did. Read only.
var table = sync.OnceValue(func() []Rule {
	return []Rule{{
		Name: "events", Resources: []schema.GroupResource{grEvents, grEventsK8s}, Verdict: LeaveOut,
		Why: "an Event records what happened to the old objects; their writers record new ones",
	}, {
		Name: "endpoints", Resources: []schema.GroupResource{grEndpoints, grEndpointSets}, Verdict: LeaveOut,
		Why: "the endpoints controllers make them from each Service and its ready pods",
	}, {
		Name: "root-ca", Resources: []schema.GroupResource{grConfigMaps}, Verdict: LeaveOut, Which: "`kube-root-ca.crt`",
		Why:   "the root CA publisher makes it in every namespace",
		match: named("kube-root-ca.crt"),
	}, {
		Name: "default-serviceaccount", Resources: []schema.GroupResource{grAccounts}, Verdict: LeaveOut,
		Which: "`default`, adding nothing to the one the controller makes",
		Why:   "the ServiceAccount controller makes it in every namespace; restore waits for it before anything that runs as it",
		match: func(o *unstructured.Unstructured, _ Context) bool {
			return o.GetName() == "default" && !addsToDefault(o)
		},
	}, {
		Name: "default-serviceaccount-additions", Resources: []schema.GroupResource{grAccounts}, Verdict: Restore,
		Which: "`default`, with image pull secrets, labels or annotations of its own",
		Why:   "applied onto the one the ServiceAccount controller makes, once it is there: its image pull secrets, labels and annotations come back",
		match: named("default"),
		edit:  withoutTokenSecrets,
	}, {
		Name: "token-secret-made-by-the-token-controller", Resources: []schema.GroupResource{grSecrets}, Verdict: LeaveOut,
		Which: "type `kubernetes.io/service-account-token`, named `ACCOUNT-token-XXXXX`",
		Why:   "the token controller made it for its ServiceAccount (clusters before 1.24); the restored ServiceAccount gets what its cluster gives",
		match: func(o *unstructured.Unstructured, _ Context) bool { return isTokenSecret(o) && autoToken(o) },
	}, {
		Name: "token-secret", Resources: []schema.GroupResource{grSecrets}, Verdict: Restore,
		Which: "type `kubernetes.io/service-account-token`, asked for by a user",
		Why:   "the token controller fills it in again for the restored ServiceAccount",
		match: func(o *unstructured.Unstructured, _ Context) bool { return isTokenSecret(o) },
		edit:  withoutToken,
	}, {
		Name: "remade-by-its-controller", Verdict: LeaveOut,
		Which: "a ReplicaSet's, StatefulSet's, DaemonSet's or Job's pod, a Deployment's ReplicaSet, a CronJob's Job, a StatefulSet's or DaemonSet's ControllerRevision",
		Why:   "its controller, %s, makes it again from its own spec",
		match: func(o *unstructured.Unstructured, _ Context) bool { return remade(o) },
	}, {
		Name: "owner-not-restored", Verdict: LeaveOut,
		Which: "with a controller the restore does not bring back (claims, Secrets and ConfigMaps excepted: they hold data)",
		Why:   "its controller, %s, is not in the backup: making it is that owner's work",
		match: func(o *unstructured.Unstructured, in Context) bool {
			c := controllerOf(o)
			return !in.atSave() && c != nil && !in.Restored[string(c.UID)] && !slices.Contains(holdsState, groupResourceOf(o))
		},
	}, {
		Name: "service", Resources: []schema.GroupResource{grServices}, Verdict: Restore,
		Why:  "a new Service gets cluster IPs of its own; a headless one (clusterIP None) stays headless; node ports are kept, or changed when taken (said)",
		edit: serviceEdit,
	}, {
		Name: "job", Resources: []schema.GroupResource{grJobs}, Verdict: Restore,
		Why:  "the API server sets a Job's uid labels on its selector and template and refuses the old ones; it runs again (its status is not restored)",
		edit: jobEdit,
	}, {
		Name: "pod", Resources: []schema.GroupResource{grPods}, Verdict: Restore,
		Why:  "a bare pod: the scheduler places it (spec.nodeName dropped), admission gives it its ServiceAccount token and priority anew",
		edit: podEdit,
	}, {
		Name: "claim", Resources: []schema.GroupResource{grClaims}, Verdict: Restore,
		Why:  "bound again to its volume (spec.volumeName) when the volume is there and free, the binder's marks dropped",
		edit: claimEdit,
	}, {
		Name: "rolebinding", Resources: []schema.GroupResource{grRoleBindings}, Verdict: Restore,
		Why:  "applied as saved; in a clone, a subject of the saved namespace is the clone's (as the binding meant its own namespace's account)",
		edit: roleBindingEdit,
	}, {
		Name: "as-saved", Verdict: Restore,
		Why: "applied as saved",
	}}
})

// Decide finds the row that decides o (of type gr) and applies its edit
// to a copy; the copy also loses its owner references to owners not
// restored (at save time: all of them, their uids would not exist).
func Decide(gr schema.GroupResource, o *unstructured.Unstructured, in Context) Decision {
	for _, r := range table() {
		if len(r.Resources) > 0 && !slices.Contains(r.Resources, gr) {
			continue
		}
		if r.match != nil && !r.match(o, in) {
			continue
		}
		d := Decision{Rule: r.Name, Verdict: r.Verdict, Why: r.Why}
		if strings.Contains(d.Why, "%s") {
			d.Why = fmt.Sprintf(d.Why, ownerWords(controllerOf(o)))
		}
		if r.Verdict == LeaveOut {
			return d
		}
		d.Object = o.DeepCopy()
		d.Notes = append(d.Notes, keepRestoredOwners(d.Object, in)...)
		if r.edit != nil {
			d.Notes = append(d.Notes, r.edit(d.Object, in)...)
		}
		return d
	}
	panic("the restore table has no last row") // as-saved matches everything
}

// Decision is what the table says of one object.
type Decision struct {
	Rule    string
	Verdict Verdict
	Why     string
	// Notes say what an edit changed on this object.
	Notes []string
	// Object is what to apply (Restore only).
	Object *unstructured.Unstructured
}

func named(name string) func(*unstructured.Unstructured, Context) bool {
	return func(o *unstructured.Unstructured, _ Context) bool { return o.GetName() == name }
}

func groupResourceOf(o *unstructured.Unstructured) schema.GroupResource {
	gv, _ := schema.ParseGroupVersion(o.GetAPIVersion())
	switch o.GetKind() {
	case "PersistentVolumeClaim":
		return grClaims
	case "Secret":
		return grSecrets
	case "ConfigMap":
		return grConfigMaps
	}
	return schema.GroupResource{Group: gv.Group, Resource: strings.ToLower(o.GetKind())}
}

func controllerOf(o *unstructured.Unstructured) *metav1.OwnerReference {
	for _, r := range o.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			return &r
		}
	}
	return nil
}

func ownerWords(r *metav1.OwnerReference) string {
	if r == nil {
		return "its owner"
	}
	return r.Kind + " " + r.Name
}

// remade tells whether o's controller is a built-in one that makes it
// again (remadeBy).
func remade(o *unstructured.Unstructured) bool {
	c := controllerOf(o)
	if c == nil {
		return false
	}
	gv, _ := schema.ParseGroupVersion(c.APIVersion)
	ownerGV, _ := schema.ParseGroupVersion(o.GetAPIVersion())
	gr := schema.GroupResource{Group: ownerGV.Group, Resource: pluralOf(o.GetKind())}
	return slices.Contains(remadeBy[gr], gv.Group+"/"+c.Kind)
}

// pluralOf is the resource of the built-in kinds remadeBy lists.
func pluralOf(kind string) string {
	return strings.ToLower(kind) + "s"
}

// keepRestoredOwners keeps the owner references whose owner the restore
// brings back (their uids are mapped when applied) and drops the others:
// an owner that does not exist would have the garbage collector delete
// the restored object.
func keepRestoredOwners(o *unstructured.Unstructured, in Context) []string {
	refs := o.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	var kept []metav1.OwnerReference
	var notes []string
	for _, r := range refs {
		if in.Restored[string(r.UID)] {
			kept = append(kept, r)
			continue
		}
		if !in.atSave() {
			notes = append(notes, fmt.Sprintf("owner reference to %s dropped: not in the backup", ownerWords(&r)))
		}
	}
	o.SetOwnerReferences(kept)
	return notes
}

// addsToDefault tells whether a saved `default` ServiceAccount carries
// what the controller's own does not: then it is applied onto it.
func addsToDefault(o *unstructured.Unstructured) bool {
	pull, _, _ := unstructured.NestedSlice(o.Object, "imagePullSecrets")
	_, automount, _ := unstructured.NestedBool(o.Object, "automountServiceAccountToken")
	return len(pull) > 0 || automount || len(o.GetLabels()) > 0 || len(o.GetAnnotations()) > 0
}

// withoutTokenSecrets drops a ServiceAccount's `secrets`: the token
// Secrets they name are the old account's.
func withoutTokenSecrets(o *unstructured.Unstructured, _ Context) []string {
	if _, ok := o.Object["secrets"]; !ok {
		return nil
	}
	delete(o.Object, "secrets")
	return []string{"its token Secrets (secrets) dropped: the old account's"}
}

const tokenSecretType = "kubernetes.io/service-account-token"

func isTokenSecret(o *unstructured.Unstructured) bool {
	t, _, _ := unstructured.NestedString(o.Object, "type")
	return t == tokenSecretType
}

// autoToken tells a token Secret the token controller made (named
// <account>-token-<5 characters>) from one a user asked for.
func autoToken(o *unstructured.Unstructured) bool {
	account := o.GetAnnotations()["kubernetes.io/service-account.name"]
	suffix, ok := strings.CutPrefix(o.GetName(), account+"-token-")
	return account != "" && ok && len(suffix) == 5
}

// withoutToken leaves the token controller to fill a token Secret anew:
// the old account's uid and the data it wrote go.
func withoutToken(o *unstructured.Unstructured, _ Context) []string {
	unstructured.RemoveNestedField(o.Object, "metadata", "annotations", "kubernetes.io/service-account.uid")
	for _, k := range []string{"token", "ca.crt", "namespace"} {
		unstructured.RemoveNestedField(o.Object, "data", k)
	}
	return []string{"token, ca.crt and namespace dropped: the token controller writes them for the new account"}
}

func serviceEdit(o *unstructured.Unstructured, _ Context) []string {
	ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP")
	if ip == "None" {
		// A headless Service: clusterIPs must agree with clusterIP.
		_ = unstructured.SetNestedStringSlice(o.Object, []string{"None"}, "spec", "clusterIPs")
		return nil
	}
	if ip == "" {
		return nil
	}
	unstructured.RemoveNestedField(o.Object, "spec", "clusterIP")
	unstructured.RemoveNestedField(o.Object, "spec", "clusterIPs")
	return []string{"cluster IP " + ip + " dropped: the new Service gets its own"}
}

func jobEdit(o *unstructured.Unstructured, _ Context) []string {
	if manual, _, _ := unstructured.NestedBool(o.Object, "spec", "manualSelector"); manual {
		return nil
	}
	var dropped []string
	for _, path := range [][]string{{"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
		labels, found, _ := unstructured.NestedStringMap(o.Object, path...)
		if !found {
			continue
		}
		for _, l := range jobServerLabels {
			if _, ok := labels[l]; ok {
				delete(labels, l)
				dropped = append(dropped, l)
			}
		}
		if len(labels) == 0 {
			unstructured.RemoveNestedField(o.Object, path...)
		} else {
			_ = unstructured.SetNestedStringMap(o.Object, labels, path...)
		}
	}
	if sel, _, _ := unstructured.NestedMap(o.Object, "spec", "selector"); len(sel) == 0 {
		unstructured.RemoveNestedField(o.Object, "spec", "selector")
	}
	if len(dropped) == 0 {
		return nil
	}
	return []string{"the API server's selector labels dropped: it sets them from the new Job's uid"}
}

func podEdit(o *unstructured.Unstructured, _ Context) []string {
	var notes []string
	if node, _, _ := unstructured.NestedString(o.Object, "spec", "nodeName"); node != "" {
		unstructured.RemoveNestedField(o.Object, "spec", "nodeName")
		notes = append(notes, "spec.nodeName "+node+" dropped: the scheduler places it")
	}
	// Admission sets these from the priority class and refuses a value
	// that differs from what it computes now.
	if class, _, _ := unstructured.NestedString(o.Object, "spec", "priorityClassName"); class != "" {
		unstructured.RemoveNestedField(o.Object, "spec", "priority")
		unstructured.RemoveNestedField(o.Object, "spec", "preemptionPolicy")
	}
	if dropAPIAccessVolume(o) {
		notes = append(notes, "the ServiceAccount token volume dropped: admission mounts a new one")
	}
	return notes
}

// dropAPIAccessVolume removes the projected volume ServiceAccount
// admission added (kube-api-access-*) and its mounts, so admission adds
// one for the new pod.
func dropAPIAccessVolume(o *unstructured.Unstructured) bool {
	volumes, _, _ := unstructured.NestedSlice(o.Object, "spec", "volumes")
	var gone []string
	volumes = slices.DeleteFunc(volumes, func(v any) bool {
		name, _, _ := unstructured.NestedString(asMap(v), "name")
		if strings.HasPrefix(name, "kube-api-access-") {
			gone = append(gone, name)
			return true
		}
		return false
	})
	if len(gone) == 0 {
		return false
	}
	_ = unstructured.SetNestedSlice(o.Object, volumes, "spec", "volumes")
	for _, field := range []string{"containers", "initContainers", "ephemeralContainers"} {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", field)
		for _, c := range containers {
			cm := asMap(c)
			mounts, _, _ := unstructured.NestedSlice(cm, "volumeMounts")
			mounts = slices.DeleteFunc(mounts, func(m any) bool {
				name, _, _ := unstructured.NestedString(asMap(m), "name")
				return slices.Contains(gone, name)
			})
			if len(mounts) == 0 {
				delete(cm, "volumeMounts")
			} else {
				cm["volumeMounts"] = mounts
			}
		}
		if len(containers) > 0 {
			_ = unstructured.SetNestedSlice(o.Object, containers, "spec", field)
		}
	}
	return true
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// binderMarks are the PV binder's annotations on a bound claim: it sets
// them again when the claim binds.
var binderMarks = []string{"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller"}

func claimEdit(o *unstructured.Unstructured, in Context) []string {
	for _, a := range binderMarks {
		unstructured.RemoveNestedField(o.Object, "metadata", "annotations", a)
	}
	if len(o.GetAnnotations()) == 0 {
		unstructured.RemoveNestedField(o.Object, "metadata", "annotations")
	}
	volume, _, _ := unstructured.NestedString(o.Object, "spec", "volumeName")
	fact := in.Volumes[volume]
	if volume == "" || fact.Unusable == "" {
		return nil
	}
	unstructured.RemoveNestedField(o.Object, "spec", "volumeName")
	return []string{fmt.Sprintf("its volume %s %s: the claim gets a new, empty volume from its storage class", volume, fact.Unusable)}
}

// roleBindingEdit points, in a clone, the subjects that name the saved
// namespace at the clone: the clone's accounts get the clone's rights,
// and the saved namespace's accounts get nothing new.
func roleBindingEdit(o *unstructured.Unstructured, in Context) []string {
	if !in.Clone {
		return nil
	}
	subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
	moved := 0
	for _, s := range subjects {
		m := asMap(s)
		if m["namespace"] == in.From {
			m["namespace"] = in.Into
			moved++
		}
	}
	if moved == 0 {
		return nil
	}
	_ = unstructured.SetNestedSlice(o.Object, subjects, "subjects")
	return []string{fmt.Sprintf("%d subject(s) of namespace %s now of %s", moved, in.From, in.Into)}
}
