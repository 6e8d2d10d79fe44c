// Package owners infers who removes a finalizer from what the cluster
// itself says, for the finalizers ns-doctor's catalogue does not know (and
// to check the catalogue's owner against the cluster): the field manager
// that set it (managedFields), who RBAC lets remove it (update or patch on
// the holder's resource), and the workloads that run as that identity. It
// is pure: inspect reads, owners reasons, diagnose and printer say it.
package owners

import (
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Confidence says how far an inferred owner can be trusted.
type Confidence string

// Confidences.
const (
	// Certain: two sources agree: the field manager that set the
	// finalizer is a workload (or its ServiceAccount) that RBAC lets
	// remove it.
	Certain Confidence = "Certain"
	// Likely: one source alone points at it: the only identity RBAC lets
	// remove it (besides wildcards and built-in roles), or the one of
	// them that also writes the finalizer's own API, or a workload named
	// as the field manager whose rights could not be read.
	Likely Confidence = "Likely"
	// None: nothing points at one owner; Inference says what was looked
	// at.
	None Confidence = "None"
)

// Workload is a Deployment, StatefulSet or DaemonSet, as far as an owner
// goes: where it runs, as whom, and whether it is ready.
type Workload struct {
	Kind           string `json:"kind"`
	Namespace      string `json:"namespace"`
	Name           string `json:"name"`
	ServiceAccount string `json:"serviceAccount"`
	Ready          int32  `json:"ready"`
	Want           int32  `json:"want"`
	// Deleting: it has a deletionTimestamp.
	Deleting bool `json:"deleting,omitempty"`
	// Containers are its containers' names, Binaries the base names of
	// their executables (command[0]): a controller's field manager is
	// often one or the other.
	Containers []string `json:"-"`
	Binaries   []string `json:"-"`
	// Labels are the values of the labels that name what it runs
	// (app.kubernetes.io/name, instance, component, app, k8s-app).
	Labels []string `json:"-"`
	// Selector chooses its pods (their logs).
	Selector *metav1.LabelSelector `json:"-"`
}

// namedBy: the field manager names the workload, one of its containers,
// one of their binaries, or one of the labels that name what it runs.
func (w Workload) namedBy(manager string) bool {
	named := func(n string) bool { return nameMatches(manager, n) }
	return named(w.Name) || slices.ContainsFunc(w.Containers, named) || slices.ContainsFunc(w.Binaries, named) || slices.ContainsFunc(w.Labels, named)
}

// NameLabels are the labels whose values name what a workload runs.
var NameLabels = []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component", "app", "k8s-app"}

// SetterNowhere tells, from every workload of the cluster (all, read
// whole), that no workload is the controller that set a finalizer: none
// of the controller field managers names one (by its name, its
// containers' names or binaries, its name labels). A setter that runs
// anywhere, under any workload's name, is not nowhere.
func SetterNowhere(managers []Manager, all []Workload) bool {
	found := false
	for _, m := range managers {
		if m.Applier {
			continue
		}
		found = true
		for _, w := range all {
			if w.namedBy(m.Name) {
				return false
			}
		}
	}
	return found
}

// String is kind namespace/name, as kubectl says it.
func (w Workload) String() string {
	return strings.ToLower(w.Kind) + " " + w.Namespace + "/" + w.Name
}

// States of a namespace that is not Active.
const (
	NamespaceTerminating = "Terminating"
	NamespaceGone        = "Gone"
)

// Request is what inference reasons from, for one finalizer.
type Request struct {
	Finalizer string
	// Namespace is the namespace being diagnosed: an owner living there
	// is deleted with it.
	Namespace string
	// Managers are the field managers that set the finalizer on its
	// holders (or on the namespace).
	Managers []Manager
	// Grants are who RBAC lets update or patch its holders; APIGrants
	// who may write the finalizer's own API group (its domain's CRDs);
	// FinalizerGrants who may update the holders' finalizers subresource
	// (what a controller that sets owner references with
	// blockOwnerDeletion needs, and what operator scaffolding grants).
	Grants, APIGrants, FinalizerGrants []Grant
	// Groups are the API groups of the held resources: their names, like
	// the finalizer's domain, say whose they are.
	Groups []string
	// Workloads are those read in the candidates' namespaces and those
	// named as the field managers.
	Workloads []Workload
	// Namespaces are the states of the candidates' namespaces that are
	// not Active (NamespaceTerminating, NamespaceGone).
	Namespaces map[string]string
	// RBACRead, WorkloadsRead: whether they could be read at all.
	RBACRead, WorkloadsRead bool
}

// Inference is who removes a finalizer, as far as the cluster tells, with
// what it rests on.
type Inference struct {
	Confidence Confidence `json:"confidence"`
	// SetBy are the field managers that set it, latest first (a few).
	SetBy []Manager `json:"setBy,omitempty"`
	// Identity is the ServiceAccount (or the group of a namespace's
	// ServiceAccounts) RBAC lets remove it, and Grant how.
	Identity *Subject `json:"identity,omitempty"`
	Grant    *Grant   `json:"grant,omitempty"`
	// Workload runs as that identity (or is named as the field manager).
	Workload *Workload `json:"workload,omitempty"`
	// Unmatched: a controller set the finalizer, and neither the identity
	// nor any of its workloads (their names, their containers' names)
	// matches that field manager: Workload runs as the identity, but
	// nothing says it is the one that removes the finalizer, so its
	// readiness says nothing of the remover.
	Unmatched bool `json:"unmatched,omitempty"`
	// SetterNowhere: with Unmatched, every workload of the cluster was
	// read and none is the field manager that set it (by name, labels or
	// binary): the setter does not run, so nothing removes it.
	SetterNowhere bool `json:"setterNowhere,omitempty"`
	// Seen is how many workloads that reading found.
	Seen int `json:"workloadsSeen,omitempty"`
	// InNamespace: the owner lives in the namespace being deleted, so it
	// was deleted, or is being deleted, with it.
	InNamespace bool `json:"inNamespace,omitempty"`
	// OwnerNamespace is the state of the owner's own namespace, when it is
	// not Active (and not the one being deleted).
	OwnerNamespace string `json:"ownerNamespace,omitempty"`
	// Candidates are the identities RBAC lets remove it (specific grants
	// only), the first few, the best ranked first; CandidateCount how many
	// in all.
	Candidates     []Subject `json:"candidates,omitempty"`
	CandidateCount int       `json:"candidateCount,omitempty"`
	// OneOf are the candidates ranked first together when no field manager
	// tells them apart and none ranks alone (a few at most): the owner is
	// likely one of them, and ns-doctor does not guess which.
	OneOf []Subject `json:"oneOf,omitempty"`
	// FinalizersGrant, WritesAPI and Affinity say why the identity was
	// ranked first beside its grant's scope: it may also update the
	// holders' finalizers subresource; it writes the finalizer's own API;
	// these of its names and labels (its role's, its binding's, its
	// account's, its namespace's, its workloads') carry the finalizer's
	// domain or the held resource's group.
	FinalizersGrant bool     `json:"finalizersGrant,omitempty"`
	WritesAPI       bool     `json:"writesAPI,omitempty"`
	Affinity        []string `json:"affinity,omitempty"`
	// Object is the object that put a namespace finalizer there (the
	// namespace's owner reference), when there is one.
	Object *Object `json:"object,omitempty"`
	// Pointed is, for a namespace's own metadata finalizer whose writer
	// runs, the object the finalizer's name points to: whether it is still
	// there, and still selects the namespace.
	Pointed *Pointed `json:"pointedTo,omitempty"`
	// RBACRead and WorkloadsRead say whether those could be read: when
	// not, the inference rests on less.
	RBACRead      bool `json:"rbacRead"`
	WorkloadsRead bool `json:"workloadsRead"`
}

// Object is a cluster-scoped object a namespace names as its owner.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	// State is Present, Deleting, Gone or Unknown (it could not be read).
	State string `json:"state"`
}

// Object states.
const (
	ObjectPresent  = "Present"
	ObjectDeleting = "Deleting"
	ObjectGone     = "Gone"
	ObjectUnknown  = "Unknown"
)

// Running tells whether the inferred owner's workload has a ready replica,
// and is the one that set the finalizer when a controller did.
func (in Inference) Running() bool {
	return in.Workload != nil && in.Workload.Ready > 0 && !in.InNamespace && !in.Unmatched
}

// maxCandidates bounds the identities an inference names, maxOneOf those
// it says the owner is likely one of, and maxNamespaces the namespaces
// whose workloads are read for them.
const (
	maxCandidates = 5
	maxOneOf      = 3
	maxNamespaces = 8
	maxManagers   = 3
)

// candidate is an identity RBAC lets remove the finalizer.
type candidate struct {
	identity  Subject
	grant     Grant
	workloads []Workload
	// manager is the field manager it matches, api whether it also
	// writes the finalizer's API group, finalizers whether it may update
	// the holders' finalizers subresource, affinity its names that carry
	// the finalizer's domain or the held group.
	manager         *Manager
	api, finalizers bool
	affinity        []string
	namespaceAll    bool
}

// rank is a candidate's evidence, most telling first: the field manager
// that set the finalizer names it; its grant names the held resource
// itself rather than its group; it may update the finalizers
// subresource; it writes the finalizer's own API; its names carry the
// finalizer's domain. Candidates compare on the first that differs.
func (c candidate) rank() [5]int {
	return [5]int{boolInt(c.manager != nil), c.grant.Scope.rank(), boolInt(c.finalizers), boolInt(c.api), boolInt(len(c.affinity) > 0)}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// candidatesOf are the identities of the specific grants that can be
// workloads: ServiceAccounts, and the groups of a namespace's
// ServiceAccounts; once each, in the grants' order, each with its most
// specific grant.
func candidatesOf(grants []Grant) []candidate {
	var out []candidate
	at := map[Subject]int{}
	for _, g := range grants {
		if !g.Specific() {
			continue
		}
		if k, seen := at[g.Subject]; seen {
			if g.Scope.rank() > out[k].grant.Scope.rank() {
				out[k].grant = g
			}
			continue
		}
		_, group := NamespaceOfGroup(g.Subject)
		if g.Subject.Kind != rbacv1.ServiceAccountKind && !group {
			continue
		}
		at[g.Subject] = len(out)
		out = append(out, candidate{identity: g.Subject, grant: g, namespaceAll: group})
	}
	return out
}

func (c candidate) namespace() string {
	if ns, ok := NamespaceOfGroup(c.identity); ok {
		return ns
	}
	return c.identity.Namespace
}

// Namespaces are the namespaces whose workloads an inference needs: the
// candidates' (a bounded few).
func Namespaces(grants []Grant) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range candidatesOf(grants) {
		if ns := c.namespace(); !seen[ns] && len(out) < maxNamespaces {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out
}

// ManagerNames are the controllers' field managers worth looking for as
// workloads: appliers left out, a bounded few.
func ManagerNames(managers []Manager) []string {
	var out []string
	for _, m := range managers {
		if !m.Applier && !slices.Contains(out, m.Name) && len(out) < maxManagers {
			out = append(out, m.Name)
		}
	}
	return out
}

// Infer decides who removes the finalizer, and how sure that is.
func Infer(req Request) Inference {
	in := Inference{Confidence: None, RBACRead: req.RBACRead, WorkloadsRead: req.WorkloadsRead}
	in.SetBy, _ = firstN(req.Managers, maxManagers)
	controllers := slices.DeleteFunc(slices.Clone(req.Managers), func(m Manager) bool { return m.Applier })
	cands := evaluated(req, controllers)
	in.CandidateCount = len(cands)
	for _, c := range cands {
		if len(in.Candidates) < maxCandidates {
			in.Candidates = append(in.Candidates, c.identity)
		}
	}
	best, sure, tied := choose(cands)
	if best != nil {
		in.Confidence = Likely
		if sure {
			in.Confidence = Certain
		}
		in.Identity, in.Grant = &best.identity, &best.grant
		in.FinalizersGrant, in.WritesAPI, in.Affinity = best.finalizers, best.api, best.affinity
		in.Workload = bestWorkload(best.workloads, best.manager)
		// A controller set it, and it is not this identity's: what runs
		// as the identity is no evidence that the setter runs.
		in.Unmatched = len(controllers) > 0 && best.manager == nil && in.Workload != nil
		in.InNamespace = best.namespace() == req.Namespace || (in.Workload != nil && in.Workload.Namespace == req.Namespace)
	} else if w := namedWorkload(controllers, req.Workloads); w != nil {
		// RBAC names nobody (or could not be read), but a workload is
		// named as the controller that set it.
		in.Confidence, in.Workload = Likely, w
		in.InNamespace = w.Namespace == req.Namespace
	} else if len(tied) > 1 && len(tied) <= maxOneOf {
		// Nothing tells the few ranked first apart: the owner is likely
		// one of them, and naming one would be a guess.
		in.OneOf = identities(tied)
	}
	if !in.InNamespace {
		switch {
		case in.Identity != nil:
			in.OwnerNamespace = req.Namespaces[in.Identity.Namespace]
			if ns, ok := NamespaceOfGroup(*in.Identity); ok {
				in.OwnerNamespace = req.Namespaces[ns]
			}
		case in.Workload != nil:
			in.OwnerNamespace = req.Namespaces[in.Workload.Namespace]
		}
	}
	return in
}

// evaluated are the candidates of the grants, each with its workloads and
// its evidence, ranked best first.
func evaluated(req Request, controllers []Manager) []candidate {
	cands := candidatesOf(req.Grants)
	api, finalizers := specificSubjects(req.APIGrants), specificSubjects(req.FinalizerGrants)
	tokens := affinityTokens(req.Finalizer, req.Groups)
	for k := range cands {
		c := &cands[k]
		for _, w := range req.Workloads {
			if w.Namespace == c.namespace() && (c.namespaceAll || w.ServiceAccount == c.identity.Name) {
				c.workloads = append(c.workloads, w)
			}
		}
		c.manager = matchingManager(controllers, *c)
		c.api, c.finalizers = api[c.identity], finalizers[c.identity]
		c.affinity = carriesDomain(tokens, *c)
	}
	ranked(cands)
	return cands
}

func identities(cands []candidate) []Subject {
	out := make([]Subject, 0, len(cands))
	for _, c := range cands {
		out = append(out, c.identity)
	}
	return out
}

// specificSubjects are the subjects of the specific grants.
func specificSubjects(grants []Grant) map[Subject]bool {
	out := map[Subject]bool{}
	for _, g := range grants {
		if g.Specific() {
			out[g.Subject] = true
		}
	}
	return out
}

// ranked sorts candidates best first; equal ones keep the grants' order.
func ranked(cands []candidate) {
	slices.SortStableFunc(cands, func(a, b candidate) int {
		ra, rb := a.rank(), b.rank()
		return slices.Compare(rb[:], ra[:])
	})
}

// choose is the best of the ranked candidates, whether it is certain (the
// field manager that set the finalizer names it), and the candidates
// ranked first together. One ranked first alone (or the only candidate)
// is the owner: certain when the field manager names it, else likely.
// Several ranked first together are no owner: nothing tells them apart,
// and ns-doctor does not guess.
func choose(cands []candidate) (best *candidate, sure bool, tied []candidate) {
	if len(cands) == 0 {
		return nil, false, nil
	}
	top := cands[0].rank()
	k := 1
	for k < len(cands) && cands[k].rank() == top {
		k++
	}
	if k > 1 {
		return nil, false, cands[:k]
	}
	return &cands[0], cands[0].manager != nil, cands[:1]
}

// matchingManager is the controller field manager that names a
// candidate: its ServiceAccount, one of its workloads, their containers
// or binaries.
func matchingManager(managers []Manager, c candidate) *Manager {
	for k := range managers {
		m := &managers[k]
		if !c.namespaceAll && nameMatches(m.Name, c.identity.Name) {
			return m
		}
		for _, w := range c.workloads {
			if w.namedBy(m.Name) {
				return m
			}
		}
	}
	return nil
}

// nameMatches: a field manager names a workload, container or account
// when it is its name, or a dash-separated part at its start or end
// ("manager" names "acme-controller-manager", kubebuilder's layout).
func nameMatches(manager, name string) bool {
	m, n := strings.ToLower(manager), strings.ToLower(name)
	return m != "" && (m == n || strings.HasPrefix(n, m+"-") || strings.HasSuffix(n, "-"+m))
}

// bestWorkload is the workload to name: the one the field manager names,
// else the first ready, else the first.
func bestWorkload(ws []Workload, m *Manager) *Workload {
	if len(ws) == 0 {
		return nil
	}
	if m != nil {
		for k := range ws {
			if ws[k].namedBy(m.Name) {
				return &ws[k]
			}
		}
	}
	for k := range ws {
		if ws[k].Ready > 0 {
			return &ws[k]
		}
	}
	return &ws[0]
}

// namedWorkload is the one workload named exactly as a controller field
// manager, if exactly one is.
func namedWorkload(managers []Manager, ws []Workload) *Workload {
	var found []Workload
	for _, m := range managers {
		for _, w := range ws {
			if strings.EqualFold(m.Name, w.Name) {
				found = append(found, w)
			}
		}
	}
	if len(found) != 1 {
		return nil
	}
	return &found[0]
}

// genericTokens are parts of a finalizer's domain that name nobody.
var genericTokens = map[string]bool{
	"io": true, "com": true, "org": true, "net": true, "dev": true, "sh": true, "co": true, "k8s": true, "kubernetes": true,
	"cloud": true, "example": true, "finalizer": true, "finalizers": true, "cleanup": true, "protection": true, "operator": true,
	"operators": true, "controller": true, "controllers": true, "system": true, "apps": true, "app": true, "github": true,
	"api": true, "apis": true, "resources": true, "resource": true, "delete": true, "deletion": true,
	// The domains reserved for tests and documentation (RFC 2606, 6761).
	"test": true, "invalid": true, "local": true, "localhost": true,
}

// domainTokens are the telling parts of a finalizer's domain (what comes
// before its "/"): acme.example.com/cleanup gives acme.
func domainTokens(finalizer string) []string {
	domain, _, _ := strings.Cut(finalizer, "/")
	var out []string
	for _, t := range strings.FieldsFunc(strings.ToLower(domain), splitter) {
		if len(t) >= 3 && !genericTokens[t] && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func splitter(r rune) bool { return r == '.' || r == '-' || r == '_' }

// affinityTokens are the telling parts of the finalizer's domain and of
// the held resources' API groups (gadgets.acme.test gives gadgets and
// acme): the names an installation of their owner goes by.
func affinityTokens(finalizer string, groups []string) []string {
	out := domainTokens(finalizer)
	for _, g := range groups {
		for _, t := range domainTokens(g + "/") {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// carriesDomain are the names of the candidate that carry a token of the
// finalizer's domain or the held group: its namespace, account and
// workloads, and its grant's role and binding (their names, and the
// product their labels or Helm release name).
func carriesDomain(tokens []string, c candidate) []string {
	names := append([]string{c.namespace(), c.identity.Name}, c.grant.Marks...)
	for _, w := range c.workloads {
		names = append(names, w.Name)
	}
	var out []string
	for _, n := range names {
		parts := strings.FieldsFunc(strings.ToLower(n), splitter)
		for _, t := range tokens {
			if slices.Contains(parts, t) && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// DomainGroups are the API groups among groups that the finalizer's
// domain names: the same, or one the other ends with
// (finalizers.s3.services.k8s.aws/Bucket names s3.services.k8s.aws).
func DomainGroups(finalizer string, groups []string) []string {
	domain, _, found := strings.Cut(finalizer, "/")
	if !found || !strings.Contains(domain, ".") {
		return nil
	}
	var out []string
	for _, g := range groups {
		if g != "" && (g == domain || strings.HasSuffix(domain, "."+g) || strings.HasSuffix(g, "."+domain)) && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out
}

func firstN[T any](s []T, n int) ([]T, int) {
	if len(s) > n {
		return s[:n:n], len(s) - n
	}
	return s, 0
}
