package printer

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/compat"
	"github.com/ns-doctor/ns-doctor/internal/diagnose"
	"github.com/ns-doctor/ns-doctor/internal/finalizers"
	"github.com/ns-doctor/ns-doctor/internal/installers"
	"github.com/ns-doctor/ns-doctor/internal/owners"
)

// The words of a diagnosis: everything explain says in English is said
// here, from the typed report internal/diagnose returns.

// BlockerWords is a blocker said for people: a summary, the evidence, and
// the next step (a command line where one helps).
type BlockerWords struct {
	Summary  string
	Evidence []string
	NextStep string
}

// VerdictSummary is the one-line answer of a diagnosis.
func VerdictSummary(r diagnose.Report) string {
	name := r.Namespace.Name
	blocking := r.Blocking()
	switch r.Verdict.State {
	case diagnose.StateActive:
		if r.Verdict.IfDeleted {
			return fmt.Sprintf("namespace %s is Active; deleted now, it would be held by %d blocker(s)%s%s", name, len(blocking), kindList(blocking), protectionWords(name, r.Protection))
		}
		return fmt.Sprintf("namespace %s is Active: it is not being deleted (--if-deleted shows what would block it)", name)
	}
	note := ""
	if n := r.Unseen(); n > 0 {
		note = fmt.Sprintf("; %d resource type(s) could not be listed", n)
	}
	if r.Verdict.State == diagnose.StateTerminating && len(r.Progress) > 0 {
		words := make([]string, 0, len(r.Progress))
		for _, p := range r.Progress {
			words = append(words, ProgressWords(p))
		}
		return fmt.Sprintf("namespace %s is being deleted, slowly but not stuck: %s%s", name, strings.Join(words, "; "), note)
	}
	if r.Verdict.State == diagnose.StateTerminating {
		return fmt.Sprintf("namespace %s is being deleted and nothing blocks it yet%s", name, note)
	}
	return fmt.Sprintf("namespace %s is stuck in Terminating: %d blocker(s)%s%s%s", name, len(blocking), kindList(blocking), note, hopeless(blocking))
}

// hopeless says, after a stuck verdict, that waiting will not finish the
// deletion, when a blocker's facts say so.
func hopeless(blocking []diagnose.Blocker) string {
	for _, b := range blocking {
		if b.WaitingWillNotHelp() {
			return "; waiting will not finish it (" + strings.TrimSuffix(string(b.Kind)+": "+b.Subject, ": ") + ")"
		}
	}
	return ""
}

// protectionWords says, after an --if-deleted verdict, whether protect
// would refuse the deletion first: nothing when it could not be read.
func protectionWords(name string, p *diagnose.Protection) string {
	switch {
	case p == nil:
		return ""
	case p.Protected():
		return fmt.Sprintf("; but protected: a deletion is refused until it is annotated %s=%s (%s)", diagnose.ConfirmDeleteAnnotation, name, p.Policy)
	case p.Policy != "":
		return fmt.Sprintf("; protected, and its deletion confirmed (%s=%s)", diagnose.ConfirmDeleteAnnotation, name)
	}
	return fmt.Sprintf("; not protected against a mistaken deletion: 'kubectl ns-doctor protect %s'", name)
}

// ProgressWords says one thing still going within its time, with its
// timings.
func ProgressWords(p diagnose.Progress) string {
	left := (time.Duration(p.LeftSeconds) * time.Second).String()
	going := (time.Duration(p.GoingSeconds) * time.Second).String()
	switch p.Kind {
	case diagnose.ProgressPodsInGrace:
		return fmt.Sprintf("%d pod(s) within their grace period (the last one ends in %s)", p.Objects, left)
	case diagnose.ProgressFinalizersInGrace:
		return fmt.Sprintf("%d %s wait for %s, for %s (called stuck after --grace, in %s)", p.Objects, p.Resource, orFinalizers(clean(p.Subject)), going, left)
	case diagnose.ProgressFinalizersGoing:
		return fmt.Sprintf("%d %s wait for %s, and %d went in the last %s (about %s more at this rate)", p.Objects, p.Resource, orFinalizers(clean(p.Subject)), p.Went, going, left)
	case diagnose.ProgressControllerInGrace:
		return fmt.Sprintf("the namespace controller has not acted yet, %s after the deletion (called stuck in %s)", going, left)
	}
	return string(p.Kind)
}

// orFinalizers is a subject naming finalizers, or "their finalizers" when
// it names none.
func orFinalizers(subject string) string {
	if subject == "" {
		return "their finalizers"
	}
	return subject
}

// finalizerNames says "finalizer(s) a, b", or "their finalizers" when the
// list is empty.
func finalizerNames(names []string) string {
	if len(names) == 0 {
		return "their finalizers"
	}
	return "finalizer(s) " + strings.Join(names, ", ")
}

// kindList renders ": KindA, KindB" for the distinct kinds, in order.
func kindList(blockers []diagnose.Blocker) string {
	seen := map[diagnose.BlockerKind]bool{}
	var names []string
	for _, b := range blockers {
		if !seen[b.Kind] {
			seen[b.Kind] = true
			names = append(names, string(b.Kind))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return ": " + strings.Join(names, ", ")
}

// WordsOf says a blocker: each kind's facts and next steps in words.
func WordsOf(b diagnose.Blocker) BlockerWords {
	switch f := b.Facts.(type) {
	case *diagnose.APIServiceFacts:
		return apiServiceWords(b, f)
	case *diagnose.NamespaceFinalizerFacts:
		return namespaceFinalizerWords(b, f)
	case *diagnose.PodFacts:
		return podWords(b, f)
	case *diagnose.ListFacts:
		return listWords(b, f)
	case *diagnose.FinalizerFacts:
		return finalizerWords(b, f)
	case *diagnose.WebhookFacts:
		return webhookWords(b, f)
	case *diagnose.ControllerFacts:
		return controllerWords(b, f)
	case *diagnose.DenialFacts:
		return denialWords(b, f)
	case *diagnose.RescueHoldFacts:
		return rescueHoldWords(b, f)
	case *diagnose.UnexplainedFacts:
		return unexplainedWords(b, f)
	}
	return BlockerWords{Summary: string(b.Kind), NextStep: nextStep(b)}
}

func apiServiceWords(b diagnose.Blocker, f *diagnose.APIServiceFacts) BlockerWords {
	gv := f.Failure.GroupVersion
	w := BlockerWords{
		Summary:  fmt.Sprintf("API group %s cannot be discovered, so the namespace controller will not finalize any namespace", gv),
		Evidence: []string{"discovery: " + f.Failure.Error},
		NextStep: nextStep(b),
	}
	s := f.Failure.APIService
	if s == nil {
		return w
	}
	w.Evidence = append(w.Evidence, fmt.Sprintf("apiservice/%s Available=%s reason=%s: %s", s.Name, s.Available, s.Reason, s.Message))
	if s.Backend != nil {
		w.Evidence = append(w.Evidence, fmt.Sprintf("service %s: %s", s.Service, serviceWords(*s.Backend)))
	}
	w.Evidence = append(w.Evidence, readOnlyWords(gv, f.ReadOnly))
	if len(b.Actions) > 0 && b.Actions[0].Kind == diagnose.ActionCheckAPIServicePath {
		w.Summary = fmt.Sprintf("API group %s cannot be discovered: its backend, service %s, has ready endpoints, yet kube-apiserver's own check of it fails (%s), so what fails lies between them; the namespace controller will not finalize any namespace meanwhile",
			gv, s.Service, s.Reason)
	}
	if b.Kind == diagnose.BlockerSelfHostedAPIService {
		w.Summary = fmt.Sprintf("apiservice/%s is served from this very namespace: deleting it took its own API down, which blocks its deletion", s.Name)
	}
	return w
}

// readOnlyWords says whether deleting a broken APIService can lose
// anything.
func readOnlyWords(groupVersion string, readOnly bool) string {
	group := groupVersion
	if i := strings.LastIndex(groupVersion, "/"); i >= 0 {
		group = groupVersion[:i]
	}
	switch {
	case !readOnly:
		return "what this group holds in the namespace cannot be known while its API is down; deleting the APIService orphans any such content in storage"
	case group == "metrics.k8s.io":
		return "metrics.k8s.io (metrics-server) serves read-only pod and node metrics: no namespaced content to lose"
	}
	return group + " serves read-only metrics: no namespaced content to lose"
}

func namespaceFinalizerWords(b diagnose.Blocker, f *diagnose.NamespaceFinalizerFacts) BlockerWords {
	w := BlockerWords{
		Summary:  fmt.Sprintf("spec.finalizers holds %q, which only the system that added it removes", f.Token),
		Evidence: []string{"spec.finalizers: " + listed(f.Spec, ", ", "none")},
		NextStep: nextStep(b),
	}
	names := []string{f.Token}
	if f.Token == "" {
		w.Summary = "metadata.finalizers of the namespace itself is not empty"
		w.Evidence = []string{"metadata.finalizers: " + listed(f.Metadata, ", ", "none")}
		names = f.Metadata
	}
	gone := 0
	for _, name := range names {
		state, ok := f.Owners[name]
		if !ok {
			continue
		}
		w.Evidence = append(w.Evidence, fmt.Sprintf("%s: %s (%s); %s", name, ownerName(name, state), ownerWords(state), OwnerEvidence(state)))
		if state.State == diagnose.OwnerDeletedWithNamespace {
			gone++
		}
	}
	if f.Token == "" && len(f.Released) > 0 && len(f.Released) == len(names) {
		w.Summary += ", and its writer runs but will not remove it: " + releasedWhy(f)
		if len(b.Actions) > 1 && b.Actions[0].Kind == diagnose.ActionPurge {
			w.NextStep = "waiting will not help: " + ActionWords(b.Actions[0]) + "; or: " + ActionWords(b.Actions[1])
		}
	}
	if gone > 0 && gone == len(names) {
		w.Summary += ", and its owner " + likelyWord(f.Owners, names) + "lived in this namespace and was deleted with it: nothing will remove it"
		if len(b.Actions) > 0 && b.Actions[0].Kind == diagnose.ActionPatchNamespaceFinalizers {
			w.NextStep = ActionWords(b.Actions[0]) + "  # its owner went with the namespace; or: " + ActionWords(b.Actions[1])
		}
	}
	return w
}

// releasedWhy says why the writers of a namespace's released metadata
// finalizers will not remove them: the objects their names point to are
// gone, or no longer select the namespace.
func releasedWhy(f *diagnose.NamespaceFinalizerFacts) string {
	gone := 0
	for _, name := range f.Released {
		if in := f.Owners[name].Inferred; in != nil && in.Pointed != nil && in.Pointed.State == owners.ObjectGone {
			gone++
		}
	}
	switch gone {
	case len(f.Released):
		return "the object its name points to is gone"
	case 0:
		return "the object its name points to no longer selects this namespace"
	}
	return "the objects their names point to are gone, or no longer select this namespace"
}

// stallWords say why waiting for a running owner will not help, and the
// step that acts instead: restore what is missing, or strip.
func stallWords(b diagnose.Blocker, f *diagnose.FinalizerFacts, head string) (summary, step string) {
	var owner, logs diagnose.Action
	for _, a := range b.Actions {
		if a.Kind == diagnose.ActionOwnerLogs {
			owner, logs = a, a
		}
	}
	strip, _ := b.PurgeStep()
	s := f.Stall
	if s.Cause == diagnose.StallWaitsOnMissing {
		summary = fmt.Sprintf("%s; their owner (%s in %s) runs, but %s says what it waits for does not exist: waiting will not help", head, owner.Target, owner.Of, s.Said.Object)
		step = fmt.Sprintf("waiting will not help: %s, and its owner can finish; if it cannot come back: %s (stripping leaks what the owner was to clean up); its log: %s",
			ActionWords(b.Actions[0]), ActionWords(strip), ActionWords(logs))
		return summary, step
	}
	summary = fmt.Sprintf("%s; their owner (%s in %s) runs, but has not written %s since %s before it was marked for deletion: it is not acting on them, and waiting will not help",
		head, owner.Target, owner.Of, s.Object, s.Deleted.Sub(s.LastWrite).Round(time.Second))
	step = fmt.Sprintf("waiting will not help: %s (stripping leaks what the owner was to clean up); to learn first why it ignores them: %s", ActionWords(strip), ActionWords(logs))
	return summary, step
}

// whyStep puts first what the holder says is wrong: its owner waits on
// that, so fixing it is what releases the holder; the owner's steps and
// the strip follow it.
func whyStep(s diagnose.Saying) string {
	return fmt.Sprintf("%s says why it is not released (%s: %s): fix that, and its owner can finish; else: ", s.Object, s.Source, Cut(s.Message, 200))
}

// saidWords say what the holders last said, each message cut.
func saidWords(said []diagnose.Saying) []string {
	out := make([]string, 0, len(said))
	for _, s := range said {
		out = append(out, fmt.Sprintf("%s %s: %s", s.Object, s.Source, Cut(s.Message, 300)))
	}
	return out
}

func podWords(b diagnose.Blocker, f *diagnose.PodFacts) BlockerWords {
	summary := fmt.Sprintf("%d pod(s) outlived their grace period; the namespace cannot go while they remain (this controller deletes the rest meanwhile)", len(f.Stuck))
	if f.Ordered {
		summary = fmt.Sprintf("%d pod(s) outlived their grace period; pods are deleted first, so the controller deletes nothing else while they remain", len(f.Stuck))
	}
	var evidence, lost []string
	for _, p := range f.Stuck {
		evidence = append(evidence, fmt.Sprintf("pod/%s: grace period ended %s ago", p.Name, p.Overdue)+nodeWords(p))
		if p.Lost() && !slices.Contains(lost, p.Node) {
			lost = append(lost, p.Node)
		}
	}
	w := BlockerWords{Summary: summary, Evidence: firstLines(evidence, 5), NextStep: nextStep(b)}
	if len(lost) > 0 && len(b.Actions) == 2 {
		w.NextStep = fmt.Sprintf("node %s will never confirm their end: %s; or: %s", strings.Join(lost, ", "), ActionWords(b.Actions[0]), ActionWords(b.Actions[1]))
	}
	return w
}

// nodeWords says where a stuck pod runs, when its node was read.
func nodeWords(p diagnose.StuckPod) string {
	if p.NodeState == "" {
		return ""
	}
	since := ""
	if p.NodeSince != nil {
		since = " since " + p.NodeSince.UTC().Format(time.RFC3339)
	}
	switch p.NodeState {
	case diagnose.NodeUnscheduled:
		return "; it was never scheduled"
	case diagnose.NodeMissing:
		return fmt.Sprintf("; its node %s is gone%s", p.Node, since)
	case diagnose.NodeNotReady:
		return fmt.Sprintf("; its node %s is NotReady%s: its kubelet does not report", p.Node, since)
	case diagnose.NodeReady:
		return fmt.Sprintf("; its node %s is Ready: its kubelet has not confirmed the pod's end", p.Node)
	}
	return fmt.Sprintf("; its node %s could not be read", p.Node)
}

func listWords(b diagnose.Blocker, f *diagnose.ListFacts) BlockerWords {
	w := listWordsHere(b, f)
	if f.Elsewhere {
		// Told of a type the namespace's own lists showed empty: the
		// controller's words, and where the type fails.
		w.Summary = fmt.Sprintf("the namespace controller cannot delete %s here, though ns-doctor lists none in this namespace: the type fails across namespaces; %s", f.Resource, w.Summary)
		w.Evidence = append([]string{"the namespace controller's last pass: " + Cut(f.Controller, 300),
			fmt.Sprintf("a list of %s across namespaces: %s", f.Resource, Cut(f.Error, 300))}, w.Evidence[1:]...)
		if len(f.Unreadable) > 0 {
			w.Evidence = append(w.Evidence, fmt.Sprintf("what cannot be read is elsewhere: %s (namespace/name; kubectl ns-doctor explain on its namespace says more)", strings.Join(f.Unreadable, ", ")))
		}
	}
	return w
}

// unexplainedWords: the controller's failure that ns-doctor's own pass
// does not reproduce, in the controller's words, and what was looked at.
func unexplainedWords(b diagnose.Blocker, f *diagnose.UnexplainedFacts) BlockerWords {
	computed := "no value"
	if c := f.Computed; c != nil {
		computed = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, Cut(c.Message, 200))
	}
	w := BlockerWords{
		Summary: fmt.Sprintf("the namespace controller says its last pass failed (%s=%s %s), and ns-doctor's own pass over what it sees does not: the cause could not be explained, so the namespace is not said to be on its way",
			strings.TrimPrefix(f.Condition, "Namespace"), f.Controller.Status, f.Controller.Reason),
		Evidence: []string{"the namespace controller: " + Cut(f.Controller.Message, 400), "ns-doctor's own pass: " + computed},
		NextStep: nextStep(b),
	}
	if len(f.Probed) > 0 {
		w.Evidence = append(w.Evidence, "listed across namespaces, and answering: "+strings.Join(f.Probed, ", "))
	}
	if f.Controller.LastTransitionTime != nil {
		w.Evidence = append(w.Evidence, "failing since "+f.Controller.LastTransitionTime.UTC().Format(time.RFC3339)+" (the controller writes a condition when it changes)")
	}
	return w
}

// listWordsHere says a type whose list fails in the namespace.
func listWordsHere(b diagnose.Blocker, f *diagnose.ListFacts) BlockerWords {
	w := BlockerWords{Evidence: []string{f.Error}, NextStep: nextStep(b)}
	switch {
	case b.Kind == diagnose.BlockerForbidden:
		w.Summary = fmt.Sprintf("you may not list %s here, so what it holds is unknown", f.Resource)
	case b.Kind == diagnose.BlockerConversionWebhook:
		w.Summary = fmt.Sprintf("%s cannot be read: the conversion webhook of CRD %s is down", f.Resource, f.CRD.Name)
		w.Evidence = append(w.Evidence, fmt.Sprintf("conversion service %s: %s", f.CRD.ConversionService.Key(), serviceWords(*f.Conversion)))
	case f.Corrupt != nil:
		w.Summary = fmt.Sprintf("%s cannot be listed: the API server cannot read some of its objects from storage (their data cannot be decrypted or decoded), so the controller can neither count nor delete them", f.Resource)
		if len(f.Corrupt.Names) == 0 {
			w.Summary = fmt.Sprintf("%s cannot be listed: the API server fails to read it from its own storage, most likely objects whose data cannot be decrypted or decoded, so the controller can neither count nor delete them", f.Resource)
		}
		if c := f.Corrupt; len(c.Names) > 0 {
			more := ""
			if c.More > 0 {
				more = fmt.Sprintf(" and %d more", c.More)
			}
			named := "the server names them: its gate AllowUnsafeMalformedObjectDeletion is on"
			if c.Key != "" {
				named = "its storage key, in the server's error: " + c.Key + "; the first the list met, there may be more"
			}
			w.Evidence = append(w.Evidence, fmt.Sprintf("unreadable: %s%s (%s)", strings.Join(c.Names, ", "), more, named))
		}
		w.Evidence = append(w.Evidence, "an unsafe delete (KEP-3926) removes such an object from storage without its finalizers or admission: what it guarded is left behind; it needs the verb unsafe-delete-ignore-read-errors on "+f.Resource+" besides delete")
	case f.APIService != nil:
		a := f.APIService
		w.Summary = fmt.Sprintf("%s cannot be listed: its aggregated API (apiservice/%s) fails the request, so the controller cannot delete it", f.Resource, a.Name)
		w.Evidence = append(w.Evidence, fmt.Sprintf("apiservice/%s Available=%s: discovery answered, the list did not", a.Name, a.Available))
		if f.Backend != nil {
			w.Evidence = append(w.Evidence, fmt.Sprintf("service %s: %s", a.Service, serviceWords(*f.Backend)))
		}
	default:
		w.Summary = fmt.Sprintf("%s cannot be listed, so the controller cannot delete it", f.Resource)
	}
	return w
}

func finalizerWords(b diagnose.Blocker, f *diagnose.FinalizerFacts) BlockerWords {
	c := f.Content
	res := c.Name()
	names := sortedKeys(c.Finalizers)
	var evidence, removers []string
	for _, name := range names {
		evidence = append(evidence, fmt.Sprintf("%s on %d of %d %s", name, c.Finalizers[name], c.Count, res))
		e := finalizers.Lookup(name)
		if e == nil {
			state, read := f.Owners[name]
			remover := ownerName(name, state)
			if read && state.Inferred != nil {
				if state.Inferred.Confidence != owners.None {
					remover += " (" + ownerWords(state) + ", inferred: " + strings.ToLower(string(state.Inferred.Confidence)) + ")"
				}
				evidence = append(evidence, fmt.Sprintf("%s: %s", name, OwnerEvidence(state)))
			}
			removers = append(removers, remover)
			if slices.Contains(f.OwnersGone, name) {
				evidence = append(evidence, fmt.Sprintf("stripping %s leaks whatever its owner was to clean up: it is not in the catalogue, so what that is is unknown", name))
			}
			continue
		}
		remover := e.Owner
		if state, ok := f.Owners[name]; ok {
			mark := ""
			if state.Source() == diagnose.SourceInferred && state.Inferred != nil {
				mark = ", inferred: " + strings.ToLower(string(state.Inferred.Confidence))
			}
			remover += " (" + ownerWords(state) + mark + ")"
			evidence = append(evidence, fmt.Sprintf("%s: owner %s; %s", name, e.Owner, OwnerEvidence(state)))
		}
		removers = append(removers, remover)
		evidence = append(evidence, fmt.Sprintf("stripping %s leaks: %s", name, e.Leak))
	}
	if len(c.Examples) > 0 {
		evidence = append(evidence, "e.g. "+strings.Join(c.Examples, ", "))
	}
	var waits []string
	for _, fw := range f.Foreground {
		waits = append(waits, fmt.Sprintf("%s waits (foregroundDeletion) for its dependent %s", fw.Owner, fw.Dependent))
	}
	if f.ForegroundMore > 0 {
		waits = append(waits, fmt.Sprintf("... and %d more", f.ForegroundMore))
	}
	for _, wo := range f.Waiting {
		scope := ""
		if wo.ClusterScoped {
			scope = " (cluster-scoped, not deleted with the namespace)"
		}
		waits = append(waits, fmt.Sprintf("%s%s is being deleted in the foreground and waits on %s too (blockOwnerDeletion): releasing it lets %s go as well",
			wo.Owner, scope, wo.Dependent, wo.Owner))
	}
	evidence = append(evidence, waits...)
	w := BlockerWords{
		Summary:  fmt.Sprintf("%d %s wait for %s", c.Count, res, finalizerNames(names)),
		Evidence: evidence,
		NextStep: nextStep(b),
	}
	if len(removers) > 0 {
		w.Summary += "; removed by: " + strings.Join(removers, "; ")
	}
	w.Evidence = append(w.Evidence, goneRefWords(f.GoneRefs)...)
	if b.Kind == diagnose.BlockerOwnerDeleted {
		w.Summary = fmt.Sprintf("%d %s wait for %s, whose owner %slived in this namespace and was deleted with it: nothing will remove them",
			c.Count, res, finalizerNames(f.OwnersGone), likelyWord(f.Owners, f.OwnersGone))
	}
	if a := b.Actions; b.Kind == diagnose.BlockerFinalizers && len(a) > 0 && a[0].Kind == diagnose.ActionOwnerLogs {
		w.Summary = fmt.Sprintf("%d %s wait for %s; their owner (%s in %s) runs, but has released none of these objects%s: it does not finish",
			c.Count, res, finalizerNames(names), a[0].Target, a[0].Of, waitedWords(f.Waited))
	}
	if b.Kind == diagnose.BlockerFinalizers {
		w.Evidence = append(saidWords(f.Said), w.Evidence...)
		if why := f.Why(); why != nil {
			w.NextStep = whyStep(*why) + w.NextStep
		}
	}
	if b.Kind == diagnose.BlockerFinalizers && f.Stall != nil {
		w.Summary, w.NextStep = stallWords(b, f, fmt.Sprintf("%d %s wait for %s", c.Count, res, finalizerNames(names)))
		if s := f.Stall; s.Cause == diagnose.StallNoWriteSinceDeletion {
			w.Evidence = append([]string{fmt.Sprintf("%s: last written by field manager %q at %s, %s before it was marked for deletion (%s); nothing since",
				s.Object, s.Manager, s.LastWrite.UTC().Format(time.RFC3339), s.Deleted.Sub(s.LastWrite).Round(time.Second), s.Deleted.UTC().Format(time.RFC3339))}, w.Evidence...)
		}
	}
	if b.Kind == diagnose.BlockerOwnerCannotFinish && len(f.CannotFinish) > 0 {
		w.Summary = fmt.Sprintf("%d %s wait for %s, and their owner cannot finish: %s; waiting will not help",
			c.Count, res, finalizerNames(names), cannotFinishWhy(f.CannotFinish[0]))
		var said []string
		for _, cf := range f.CannotFinish {
			said = append(said, fmt.Sprintf("%s %s: %s", cf.Object, cf.Source, cf.Message))
		}
		w.Evidence = append(said, w.Evidence...)
	}
	if f.DeletingCRD != "" {
		which := "their finalizers"
		if len(names) > 0 {
			which += " (" + strings.Join(names, ", ") + ")"
		}
		w.Summary = fmt.Sprintf("CRD %s is itself being deleted and waits for these %d instances; %s need a controller that was likely uninstalled with the CRD",
			f.DeletingCRD, c.Count, which)
		w.Evidence = append(w.Evidence, fmt.Sprintf("customresourcedefinition/%s has a deletionTimestamp", f.DeletingCRD))
	}
	return w
}

// cannotFinishWhy says why an owner's cleanup is refused.
func cannotFinishWhy(cf diagnose.CannotFinish) string {
	if cf.Cause == diagnose.CauseForbidden {
		return fmt.Sprintf("%s may not %s %s", cf.User, cf.Verb, cf.Resource)
	}
	return "its cleanup must create something in the namespace, and a namespace being terminated refuses any new object"
}

// goneRefWords says which objects the holders name are gone: a
// terminating namespace cannot get them back.
func goneRefWords(refs []diagnose.GoneRef) []string {
	var out []string
	for _, r := range refs {
		out = append(out, fmt.Sprintf("%s %s names %s %s: deleted with the namespace, and it cannot be created again while the namespace terminates; if the owner needs it to clean up, it cannot finish",
			r.Holder, r.Field, strings.ToLower(string(r.Kind)), r.Name))
	}
	return out
}

func webhookWords(b diagnose.Blocker, f *diagnose.WebhookFacts) BlockerWords {
	wh := f.Webhook
	var caught []string
	for _, c := range f.Caught {
		if len(c.Operations) == 0 {
			caught = append(caught, c.Resource)
			continue
		}
		caught = append(caught, fmt.Sprintf("%s (%s)", c.Resource, strings.Join(c.Operations, ",")))
	}
	what := listed(caught, ", ", "what its rules match")
	w := BlockerWords{
		Summary: fmt.Sprintf("%s webhook %q fails closed and its service %s is down: it rejects deleting or un-finalizing %s",
			wh.Type, wh.Name, wh.Service.Key(), what),
		Evidence: []string{
			fmt.Sprintf("%swebhookconfiguration/%s webhook %s: failurePolicy=Fail", strings.ToLower(wh.Type), wh.Configuration, wh.Name),
			fmt.Sprintf("service %s: %s", wh.Service.Key(), serviceWords(f.Service)),
		},
		NextStep: nextStep(b),
	}
	if b.Kind == diagnose.BlockerSelfHostedWebhook {
		w.Summary = fmt.Sprintf("%s webhook %q is served from this very namespace, now being deleted, and rejects deleting %s", wh.Type, wh.Name, what)
	}
	if inst := wh.Installer; inst != nil && inst.State != "" {
		w.Evidence = append(w.Evidence, installerWords(*inst))
		if inst.Removed() && b.Kind == diagnose.BlockerWebhook {
			w.Summary = fmt.Sprintf("%s webhook %q fails closed and was left behind: %s uninstalled the operator that served it, so nothing will serve it again; it rejects deleting or un-finalizing %s",
				wh.Type, wh.Name, inst.String(), what)
		}
	}
	return w
}

// installerWords say what installed a webhook's configuration and what
// its manager's records and workloads say of that installation.
func installerWords(inst installers.Installer) string {
	s := fmt.Sprintf("installed by %s: %s (%s)", inst.String(), installerState(inst), inst.Record)
	switch {
	case !inst.WorkloadsRead:
		return s + "; its workloads could not be read"
	case len(inst.Workloads) == 0:
		return s + "; no deployment, statefulset or daemonset of it in " + inst.Namespace
	default:
		return s + "; still running: " + listed(inst.Workloads, ", ", "")
	}
}

func installerState(inst installers.Installer) string {
	switch inst.State {
	case installers.Uninstalled:
		return "uninstalled"
	case installers.Gone:
		return "uninstalled, no record of it left"
	case installers.Installed:
		return "installed"
	}
	return "its records could not be read"
}

func controllerWords(b diagnose.Blocker, f *diagnose.ControllerFacts) BlockerWords {
	w := BlockerWords{NextStep: nextStep(b)}
	if f.NoConditions {
		w.Summary = "no namespace controller has looked at this namespace: it has no deletion conditions"
		w.Evidence = []string{fmt.Sprintf("deleted %s ago, status.conditions is empty", f.Since)}
		return w
	}
	w.Summary = "content the namespace controller deletes at once is still there: the controller is not running or not keeping up"
	w.Evidence = []string{fmt.Sprintf("deleted %s ago", f.Since)}
	for _, d := range f.Deletable {
		w.Evidence = append(w.Evidence, d+" is not even marked for deletion")
	}
	if f.DeletableMore > 0 {
		w.Evidence = append(w.Evidence, fmt.Sprintf("... and %d more", f.DeletableMore))
	}
	return w
}

// actionsWords says the next steps in a sentence: the first, then each
// later one as an alternative (fallback is the general rule; each kind's
// sentence, below, says it as explain always has).
func actionsWords(actions []diagnose.Action) string {
	var parts []string
	for _, a := range actions {
		parts = append(parts, ActionWords(a))
	}
	return strings.Join(parts, "; or: ")
}

// nextStep says a blocker's next steps as one sentence per kind; when the
// blocker has fewer steps than its kind's sentence names, the steps it has,
// said in turn (never a sentence with a step left empty).
func nextStep(b diagnose.Blocker) string {
	short := false
	at := func(i int) diagnose.Action {
		if i < len(b.Actions) {
			return b.Actions[i]
		}
		short = true
		return diagnose.Action{}
	}
	if s := kindStep(b, at); !short {
		return s
	}
	return actionsWords(b.Actions)
}

// kindStep is a blocker kind's sentence over its steps; at gives the i-th.
func kindStep(b diagnose.Blocker, at func(int) diagnose.Action) string {
	a := b.Actions
	if len(a) == 0 {
		return ""
	}
	first := at(0)
	switch {
	case b.Kind == diagnose.BlockerSelfHostedAPIService:
		return ActionWords(first) + "  # the backend is being deleted with the namespace anyway"
	case b.Kind == diagnose.BlockerAPIServiceUnavailable && first.Kind == diagnose.ActionPurge && len(a) > 1:
		return "its service's namespace is being deleted and accepts no new content, so the service cannot come back there: " + ActionWords(first) + "; or, keeping no copy: " + ActionWords(at(1))
	case b.Kind == diagnose.BlockerListFailed && first.Kind == diagnose.ActionDeleteAPIService:
		return "its service's namespace is being deleted and accepts no new content, so the service cannot come back there: " + ActionWords(first)
	case b.Kind == diagnose.BlockerConversionWebhook && first.Kind == diagnose.ActionPatchCRDConversion:
		return "its conversion service's namespace is being deleted and accepts no new content, so the service cannot come back there; set spec.conversion.strategy=None: " + ActionWords(first)
	case b.Kind == diagnose.BlockerWebhook && first.Kind == diagnose.ActionDeleteWebhookConfiguration:
		return "nothing will serve it again (its operator was uninstalled), and it refuses what it catches in every namespace it selects: " +
			ActionWords(first) + "  # save it first: kubectl get " + strings.Replace(first.Target, "/", " ", 1) + " -o yaml > " + path.Base(first.Target) + ".yaml" +
			"; or for this namespace only, for the run: " + ActionWords(at(1))
	case b.Kind == diagnose.BlockerWebhook && first.Kind == diagnose.ActionPurge:
		return "its service's namespace is being deleted and accepts no new content, so the service cannot come back there; for this namespace only, for the run: " +
			ActionWords(first) + "; for good: " + ActionWords(at(1))
	case first.Kind == diagnose.ActionGetAPIService:
		return ActionWords(first) + "  # the aggregated API behind " + first.Of
	case first.Kind == diagnose.ActionMakeBackendReady && strings.HasPrefix(first.Of, "apiservice/") && len(a) > 1:
		return fmt.Sprintf("%s; or if that API is gone for good: %s", ActionWords(first), ActionWords(at(1)))
	case first.Kind == diagnose.ActionRestoreService && strings.HasPrefix(first.Of, "apiservice/") && len(a) > 1:
		return fmt.Sprintf("restore the service %s behind %s, or if that API is gone for good: %s", first.Target, first.Of, ActionWords(at(1)))
	case first.Kind == diagnose.ActionCheckAPIServer, first.Kind == diagnose.ActionCheckAccess, first.Kind == diagnose.ActionGetResource,
		first.Kind == diagnose.ActionExplainOrphans:
		return ActionWords(first)
	case first.Kind == diagnose.ActionPatchNamespaceFinalizers:
		return ActionWords(first) + "  # once their owner is known to be gone"
	case b.Kind == diagnose.BlockerOwnerDeleted:
		return "nothing will remove them: " + ActionWords(first) + "; and " + ActionWords(at(1))
	case first.Kind == diagnose.ActionOwnerLogs && len(a) > 1:
		return ActionWords(first) + "; if it cannot be made to release them: " + actionsWords(a[1:])
	case b.Kind == diagnose.BlockerNamespaceFinalizer && first.Kind == diagnose.ActionPurge:
		return "its owner went with the namespace, and nothing else removes it: " + ActionWords(first)
	case b.Kind == diagnose.BlockerNamespaceFinalizer && first.Of != "":
		return fmt.Sprintf("check %s, which owns %q and is not ready; if it is gone for good: %s", first.Of, first.Target, ActionWords(at(1)))
	case b.Kind == diagnose.BlockerNamespaceFinalizer:
		return fmt.Sprintf("check the system that owns %q; if it is gone: %s", first.Target, ActionWords(at(1)))
	case b.Kind == diagnose.BlockerPods:
		return ActionWords(first) + "; if a node is gone for good: " + ActionWords(at(1)) + "  # the plan says each pod's node and whether it is Ready"
	case b.Kind == diagnose.BlockerConversionWebhook:
		return ActionWords(first) + "; if that operator is gone for good, set spec.conversion.strategy=None: " + ActionWords(at(1))
	case first.Kind == diagnose.ActionCheckAPIServicePath:
		return ActionWords(first) + "; if that API is gone for good: " + ActionWords(at(1))
	case first.Kind == diagnose.ActionCheckBackend:
		return ActionWords(first) + "; if that API is gone for good: " + ActionWords(at(1))
	case first.Kind == diagnose.ActionEnableUnsafeDelete && len(a) == 3:
		return "if the encryption key or config changed, restore it (kube-apiserver's --encryption-provider-config); else " + ActionWords(first) +
			"; then: " + ActionWords(at(1)) + "; or, with etcd's client certificates on a control-plane node: " + ActionWords(at(2))
	case first.Kind == diagnose.ActionEnableUnsafeDelete:
		return "if the encryption key or config changed, restore it (kube-apiserver's --encryption-provider-config); else " + ActionWords(first)
	case first.Kind == diagnose.ActionUnsafeDelete:
		return "if the encryption key or config changed, restore it; else, knowing what each guarded: " + strings.Join(actionWordsOf(a), "; ")
	case b.Kind == diagnose.BlockerOwnerCannotFinish:
		return "waiting will not help: " + cannotFinishSteps(a)
	case first.Kind == diagnose.ActionCheckOwner:
		return ActionWords(first) + "; if it is gone for good: " + ActionWords(at(1))
	case b.Kind == diagnose.BlockerSelfHostedWebhook:
		return ActionWords(first) + "  # for the run only; or, its backend going away with the namespace: " + ActionWords(at(1))
	case b.Kind == diagnose.BlockerWebhookDenies:
		return "ask the owner of its policy to allow it; or for this namespace only, for the run: " + ActionWords(first) + "; if the policy no longer matters: " + ActionWords(at(1))
	case b.Kind == diagnose.BlockerWebhook:
		return ActionWords(first) + "; or for this namespace only, for the run: " + ActionWords(at(1)) + "; if its webhook is gone for good: " + ActionWords(at(2))
	case b.Kind == diagnose.BlockerUnexplainedFailure:
		return ActionWords(first) + "; and: " + ActionWords(at(1))
	case first.Kind == diagnose.ActionGetResourceEverywhere:
		return ActionWords(first)
	case first.Kind == diagnose.ActionCheckController:
		return ActionWords(first) + "; or run the pass yourself: " + ActionWords(at(1))
	}
	return actionsWords(a)
}

func actionWordsOf(actions []diagnose.Action) []string {
	out := make([]string, 0, len(actions))
	for _, a := range actions {
		out = append(out, ActionWords(a))
	}
	return out
}

// cannotFinishSteps says an owner-cannot-finish blocker's steps in order.
func cannotFinishSteps(actions []diagnose.Action) string {
	var parts []string
	for i, a := range actions {
		w := ActionWords(a)
		switch {
		case i == 0:
		case a.Kind == diagnose.ActionCleanUpByHand:
			w = "or else " + w
		default:
			w = "then " + w
		}
		parts = append(parts, w)
	}
	return strings.Join(parts, "; ")
}

// ActionWords says one next step on its own: a command line where there is
// one.
func ActionWords(a diagnose.Action) string {
	switch a.Kind {
	case diagnose.ActionPurge:
		return PurgeCommand(a)
	case diagnose.ActionGetAPIService:
		return "kubectl get apiservice " + a.Target
	case diagnose.ActionRestoreService:
		return "restore service " + a.Target
	case diagnose.ActionRestoreMissing:
		return fmt.Sprintf("restore what %s says is missing (%s)", a.Target, Cut(a.Of, 200))
	case diagnose.ActionMakeBackendReady:
		if strings.HasPrefix(a.Target, "service/") {
			return fmt.Sprintf("its service is there, but no pod it selects is ready: bring back what ran behind it (kubectl get pods -n %s; kubectl describe -n %s %s), the backend of %s",
				a.Value, a.Value, a.Target, a.Of)
		}
		return fmt.Sprintf("its service is there, but %s in %s behind it is not ready: make it ready (kubectl describe -n %s %s; its pods' events say why), the backend of %s",
			a.Target, a.Value, a.Value, a.Target, a.Of)
	case diagnose.ActionDeleteAPIService:
		return "kubectl delete apiservice " + a.Target
	case diagnose.ActionCheckAPIServicePath:
		return fmt.Sprintf("check the path from kube-apiserver to service %s, whose endpoints are ready: a network policy or firewall refusing kube-apiserver, an egress proxy, a certificate either side does not trust (kubectl get apiservice %s -o yaml says kube-apiserver's error)", a.Of, a.Target)
	case diagnose.ActionServerDryRun:
		return fmt.Sprintf("kubectl ns-doctor purge %s --dry-run=server  # sends the namespace controller's requests as dry runs: each answer says what fails", a.Namespace)
	case diagnose.ActionControllerLogs:
		return fmt.Sprintf("read kube-controller-manager's log for namespace %s: the namespace controller logs each request that failed", a.Namespace)
	case diagnose.ActionGetResourceEverywhere:
		return fmt.Sprintf("kubectl get %s --all-namespaces  # it fails across namespaces: fix the API behind it (CRD, conversion webhook, aggregated API)", a.Target)
	case diagnose.ActionReleaseRescue:
		return fmt.Sprintf("kubectl ns-doctor rescue %s --release  # the deletion then finishes; its volumes stay retained", a.Namespace)
	case diagnose.ActionCheckAPIServer:
		return fmt.Sprintf("apiservice/%s is served by kube-apiserver itself: check its logs; kubectl get apiservice %s -o yaml", a.Target, a.Target)
	case diagnose.ActionCheckBackend:
		return fmt.Sprintf("check the backend of apiservice/%s (service %s, its pods and logs)", a.Target, a.Of)
	case diagnose.ActionPatchCRDConversion:
		return fmt.Sprintf(`kubectl patch crd %s --type=merge -p '{"spec":{"conversion":{"strategy":"None","webhook":null}}}'`, a.Target)
	case diagnose.ActionDeleteWebhookConfiguration:
		kind, name, _ := strings.Cut(a.Target, "/")
		return fmt.Sprintf("kubectl delete %s %s", kind, name)
	case diagnose.ActionPatchNamespaceFinalizers:
		return fmt.Sprintf(`kubectl patch namespace %s --type=merge -p '{"metadata":{"finalizers":null}}'`, a.Target)
	case diagnose.ActionCheckOwner:
		if a.Of != "" {
			return fmt.Sprintf("check %s, which removes them and is not ready", a.Of)
		}
		return "check that whoever removes them still runs"
	case diagnose.ActionOwnerLogs:
		return fmt.Sprintf("kubectl logs -n %s %s --all-containers --tail=200  # it runs, but does not release them: its log says why", a.Of, a.Target)
	case diagnose.ActionCheckNodes:
		return fmt.Sprintf("check the pods' nodes (kubectl get pods -n %s -o wide; kubectl get nodes)", a.Namespace)
	case diagnose.ActionCheckAccess:
		return fmt.Sprintf("kubectl auth can-i list %s -n %s  # ask for list access (docs/rbac.md)", a.Target, a.Namespace)
	case diagnose.ActionGetResource:
		return fmt.Sprintf("kubectl get %s -n %s  # fix the API behind it (CRD, conversion webhook, aggregated API)", a.Target, a.Namespace)
	case diagnose.ActionCheckController:
		return "check that kube-controller-manager runs the namespace controller"
	case diagnose.ActionCleanUpByHand:
		return fmt.Sprintf("clean up by hand what the owner of %s was to clean up (outside the cluster, often: what 'stripping it leaks' names)", a.Target)
	case diagnose.ActionUnsafeDelete:
		return fmt.Sprintf("kubectl delete --raw '%s?ignoreStoreReadErrorWithClusterBreakingPotential=true'", a.Target)
	case diagnose.ActionEnableUnsafeDelete:
		return fmt.Sprintf("turn on kube-apiserver's feature gate AllowUnsafeMalformedObjectDeletion (1.32+, alpha): a list of %s then names each object it cannot read, and explain gives the command that deletes it", a.Target)
	case diagnose.ActionEtcdDelete:
		return fmt.Sprintf("etcdctl del '%s'  # removes it from storage, skipping its finalizers and admission", a.Target)
	case diagnose.ActionGrantAccess:
		return fmt.Sprintf("let %s %s with a ClusterRole and ClusterRoleBinding (a RoleBinding cannot be created in a terminating namespace)", a.Target, a.Of)
	case diagnose.ActionExplainOrphans:
		return fmt.Sprintf("check they are wanted here; kubectl ns-doctor explain --orphans lists such leftovers of namespaces that are gone (namespace %s is not)", a.Namespace)
	}
	return string(a.Kind)
}

// PurgeCommand is the purge command line an action names.
func PurgeCommand(a diagnose.Action) string {
	cmd := "kubectl ns-doctor purge " + a.Namespace
	switch {
	case a.Flag == "":
	case a.Value == "":
		cmd += " " + a.Flag
	default:
		cmd += " " + a.Flag + "=" + a.Value
	}
	return cmd
}

// ownerWords says in a few words whether an owner runs.
func ownerWords(s diagnose.OwnerState) string {
	switch s.State {
	case diagnose.OwnerRunningReady:
		return "running"
	case diagnose.OwnerRunningCannotFinish:
		return "running, but cannot finish"
	case diagnose.OwnerNotReady:
		return "not ready"
	case diagnose.OwnerNotFound:
		return "not running: none of its usual workloads found"
	case diagnose.OwnerControlPlane:
		return "control plane"
	case diagnose.OwnerNotChecked:
		return "not checked"
	case diagnose.OwnerDeletedWithNamespace:
		return "deleted with this namespace"
	}
	return "could not be checked"
}

// OwnerEvidence names what was found of an owner, or looked for: in the
// catalogue's terms, then what the cluster itself says (inferred).
func OwnerEvidence(s diagnose.OwnerState) string {
	in := s.Inferred
	switch {
	case in == nil || s.NotChecked:
		return catalogueEvidence(s)
	case s.Owner == "" && in.Confidence == owners.None:
		return "unknown owner: not in ns-doctor's catalogue, and " + InferredWords(in)
	case s.Owner == "":
		return "not in ns-doctor's catalogue; " + InferredWords(in)
	case inferredDiffers(s):
		return catalogueEvidence(s) + "; the cluster shows another owner than the catalogue's: " + InferredWords(in)
	}
	return catalogueEvidence(s) + "; " + InferredWords(in)
}

// catalogueEvidence names what was found of the catalogue's owner: what
// its own check found (CatalogueState), even when an inference decided
// the state since.
func catalogueEvidence(s diagnose.OwnerState) string {
	workload := func(w diagnose.WorkloadRef) string {
		return fmt.Sprintf("%s %s/%s", strings.ToLower(w.Kind), w.Namespace, w.Name)
	}
	state := s.CatalogueState()
	switch {
	case s.NotChecked:
		return "not checked"
	case state == diagnose.OwnerUnknown && s.Found != nil:
		return fmt.Sprintf("%s could not be read: %s", workload(s.Found.WorkloadRef), s.Error)
	case state == diagnose.OwnerUnknown && s.Owner != "":
		return "its workloads could not be read"
	case state == diagnose.OwnerUnknown:
		return "unknown owner: not in ns-doctor's catalogue"
	case state == diagnose.OwnerControlPlane:
		return s.Owner + " (part of the control plane)"
	case state == diagnose.OwnerNotChecked:
		return "the catalogue names no workload to look for"
	case s.Found != nil && state == diagnose.OwnerDeletedWithNamespace:
		return fmt.Sprintf("%s: %d/%d ready, in this namespace: it goes with it", workload(s.Found.WorkloadRef), s.Found.Ready, s.Found.Want)
	case s.Found != nil:
		return fmt.Sprintf("%s: %d/%d ready", workload(s.Found.WorkloadRef), s.Found.Ready, s.Found.Want)
	case len(s.Looked) == 0:
		return "none of its usual workloads found"
	}
	var looked []string
	for _, w := range s.Looked {
		looked = append(looked, workload(w))
	}
	return "none of its usual workloads found: " + strings.Join(looked, ", ")
}

func serviceWords(s diagnose.ServiceState) string {
	terminating := ""
	if s.Unrestorable() {
		terminating = "; its namespace is being deleted, and accepts no new content: it cannot be restored there"
	}
	switch {
	case s.Unknown:
		return "could not be read"
	case !s.Exists:
		return "not found" + terminating
	case s.ExternalName != "":
		return "ExternalName " + s.ExternalName
	default:
		return fmt.Sprintf("%d ready endpoints", s.ReadyEndpoints) + behindWords(s.Behind) + terminating
	}
}

// behindWords say what a Service with no ready endpoint selects, and why
// it is not ready: a few pods, each reason cut.
func behindWords(b *diagnose.ServiceBackend) string {
	if b == nil {
		return ""
	}
	var parts []string
	for _, w := range b.Workloads {
		parts = append(parts, fmt.Sprintf("%s %s/%s (%d/%d ready)", strings.ToLower(w.Kind), w.Namespace, w.Name, w.Ready, w.Want))
	}
	what := listed(parts, ", ", "no workload")
	words := fmt.Sprintf("; its selector %s selects %s and %d pod(s)", b.Selector, what, b.Pods)
	for _, p := range b.NotReady {
		words += fmt.Sprintf("; pod %s %s", p.Name, p.Phase)
		if p.Why != "" {
			words += ": " + Cut(p.Why, 200)
		}
	}
	return words
}

// NoteWords says a note: its summary, evidence and next step.
func NoteWords(n diagnose.Note) BlockerWords {
	var evidence []string
	for _, o := range n.Examples {
		evidence = append(evidence, fmt.Sprintf("%s/%s created %s, the namespace %s", o.Resource, o.Name, o.Created.UTC().Format(time.RFC3339), n.Created.UTC().Format(time.RFC3339)))
	}
	return BlockerWords{
		Summary:  fmt.Sprintf("%d object(s) are older than the namespace: an earlier namespace of this name was force-deleted with content left in storage, which came back with this one", n.Older),
		Evidence: evidence,
		NextStep: actionsWords(n.Actions),
	}
}

// UncheckedWords says what could not be read, sorted.
func UncheckedWords(list []diagnose.Unchecked) []string {
	out := make([]string, 0, len(list))
	for _, u := range list {
		what := map[diagnose.UncheckedSubject]string{
			diagnose.UncheckedAPIServices:        "APIServices",
			diagnose.UncheckedMutatingWebhooks:   "mutating webhooks",
			diagnose.UncheckedValidatingWebhooks: "validating webhooks",
			diagnose.UncheckedCRDs:               "CustomResourceDefinitions",
			diagnose.UncheckedService:            "service " + u.Name,
			diagnose.UncheckedEndpointSlices:     "endpointslices of service " + u.Name,
			diagnose.UncheckedHolderStatus:       "status of " + u.Name,
			diagnose.UncheckedEvents:             "events",
			diagnose.UncheckedResource:           u.Name,
			diagnose.UncheckedOwnerLogs:          "logs of " + u.Name,
			diagnose.UncheckedRBAC:               u.Name + " (who may remove a finalizer)",
			diagnose.UncheckedWorkloads:          "workloads " + u.Name,
			diagnose.UncheckedOwnerObject:        "the namespace's owner " + u.Name,
			diagnose.UncheckedPointedObject:      "the object a namespace finalizer points to, " + u.Name,
			diagnose.UncheckedNode:               "node " + u.Name,
			diagnose.UncheckedPods:               "the nodes of pods " + u.Name,
		}[u.Subject]
		out = append(out, what+": "+u.Error)
	}
	sort.Strings(out)
	return out
}

// firstLines keeps the first n lines and says how many more there were.
func firstLines(lines []string, n int) []string {
	if len(lines) > n {
		return append(lines[:n:n], fmt.Sprintf("... and %d more", len(lines)-n))
	}
	return lines
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// managerWords says what a release or application that manages a holder
// means for deleting it.
func managerWords(tool diagnose.ManagerTool) string {
	switch tool {
	case diagnose.ManagerHelm:
		return "helm uninstall it (or it re-creates what is deleted on its next upgrade)"
	case diagnose.ManagerArgoCD:
		return "delete or stop syncing the application first (or it re-creates what is deleted)"
	}
	return "remove it first"
}

// staticEvidence says why a webhook or policy is taken as loaded from
// kube-apiserver's disk: its name, or its absence from the API.
func staticEvidence(name string) string {
	const where = "a manifest in the staticManifestsDir of kube-apiserver's --admission-control-config-file (KEP-5793, 1.37+), with no API object: neither purge --bypass-webhook nor kubectl delete can remove it"
	if compat.StaticName(name) {
		return fmt.Sprintf("%s ends in %s: %s", name, compat.StaticSuffix, where)
	}
	return fmt.Sprintf("webhook %s is in no webhook configuration the API serves: %s (or its configuration was deleted since the controller's last pass)", name, where)
}

// rescueHoldWords: a hold is on purpose; the step is to release it when
// the deletion should finish, and nothing while the content should stay.
func rescueHoldWords(b diagnose.Blocker, f *diagnose.RescueHoldFacts) BlockerWords {
	w := BlockerWords{
		Summary:  "kubectl ns-doctor rescue holds the namespace's content on purpose: ValidatingAdmissionPolicy " + b.Subject + " refuses the namespace controller's and the garbage collector's deletes here",
		Evidence: []string{"denied the namespace controller: " + Cut(f.Message, 300)},
		NextStep: nextStep(b),
	}
	if len(b.Actions) > 0 {
		w.NextStep += "; or, to put the namespace back as it was: kubectl ns-doctor rescue " + Escape(b.Actions[0].Namespace) + " --restore (docs/rescue.md)"
	}
	if h := f.Hold; h != nil {
		by := "someone"
		if h.By != "" {
			by = h.By
		}
		w.Evidence = append(w.Evidence, fmt.Sprintf("held since %s by %s", h.Since.Format(time.RFC3339), by))
	}
	return w
}

func denialWords(b diagnose.Blocker, f *diagnose.DenialFacts) BlockerWords {
	who := map[diagnose.DenialSource]string{diagnose.DeniedController: "the namespace controller", diagnose.DeniedPurge: "purge"}[f.Source]
	what := fmt.Sprintf("admission webhook %q", f.Webhook)
	if f.Policy {
		what = fmt.Sprintf("ValidatingAdmissionPolicy %q", f.Webhook)
	}
	w := BlockerWords{
		Summary:  what + " answers and denies deleting or un-finalizing the namespace's content: a policy, not an outage",
		Evidence: []string{fmt.Sprintf("denied %s: %s", who, Cut(f.Message, 300))},
		NextStep: nextStep(b),
	}
	switch {
	case f.Failing:
		w.Summary = what + ", loaded from kube-apiserver's disk, fails closed: kube-apiserver cannot call it, so it rejects deleting the namespace's content"
		w.Evidence = []string{"the namespace controller: " + Cut(f.Message, 300)}
		w.Evidence = append(w.Evidence, staticEvidence(f.Webhook))
		w.NextStep = "ask whoever runs the control plane to bring back the server at its url, or to change or remove the static manifest of " + f.Webhook
	case f.Static:
		w.Summary = what + ", loaded from kube-apiserver's disk, denies deleting or un-finalizing the namespace's content"
		w.Evidence = append(w.Evidence, staticEvidence(f.Webhook))
		w.NextStep = "ask whoever runs the control plane to change or remove the static manifest of " + f.Webhook + " (or its policy's author to allow this deletion)"
	case f.Policy && f.Binding != "":
		w.Evidence = append(w.Evidence, "bound by validatingadmissionpolicybinding "+f.Binding)
		w.NextStep = "ask the owner of its policy to allow it; if the policy no longer matters: " + ActionWords(b.Actions[0])
	case f.Policy:
		w.NextStep = "find the bindings of ValidatingAdmissionPolicy " + f.Webhook + " (kubectl get validatingadmissionpolicybindings) and ask its owner"
	case f.Configuration != "":
		w.Evidence = append(w.Evidence, fmt.Sprintf("webhook %s of %s/%s", f.Webhook, f.ConfigurationKind, f.Configuration))
	default:
		w.NextStep = "find the configuration of webhook " + f.Webhook + " (kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations) and ask its owner"
	}
	return w
}
