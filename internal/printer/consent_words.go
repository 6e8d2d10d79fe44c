package printer

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/consent"
	"github.com/ns-doctor/ns-doctor/internal/rescue"
)

// The confirmations: what a person is asked before a command changes a
// cluster, one per command, each derived from what its plan will change.
// A terminal (the command's prompt) and an agent's client (an MCP
// elicitation) ask the same consent.Request, from here. A new command that
// changes a cluster adds its own here.

// PurgeConfirmation is purge --force's (and purge_namespace's).
type PurgeConfirmation struct {
	// Names are the namespaces, or the former namespaces (Orphans).
	Names   []string
	Orphans bool
	// Context and Cluster name where the writes go.
	Context, Cluster string
	// Consent are the escalations' lines (purge.Asked.Consent).
	Consent []string
}

// Request says the namespaces, where the writes go, a line per escalation
// and what it costs, and that everything is saved first; the answer is
// the namespace's name (the former one's), or how many.
func (c PurgeConfirmation) Request() consent.Request {
	r := consent.Request{Lines: append([]string{consent.Where(c.Context, c.Cluster)}, consentLines(c.Consent)...),
		Closing: "Everything it deletes or changes is saved first.", Question: "Type the namespace name to go on"}
	switch {
	case c.Orphans:
		r.Change = fmt.Sprintf("run the namespace controller's deletion pass FOR REAL on what former namespace(s) %s left in storage", strings.Join(c.Names, ", "))
	case len(c.Names) == 1:
		r.Change = fmt.Sprintf("run the namespace controller's deletion pass FOR REAL on namespace %q", c.Names[0])
	default:
		r.Change = fmt.Sprintf("run the namespace controller's deletion pass FOR REAL on %d namespaces: %s", len(c.Names), strings.Join(c.Names, ", "))
	}
	if len(c.Names) == 1 {
		r.Want = c.Names[0]
		return r
	}
	r.Want = strconv.Itoa(len(c.Names))
	r.Question = fmt.Sprintf("Type the number of namespaces (%s) to go on", r.Want)
	return r
}

// FleetConfirmation is purge --force's over several clusters: one for all.
type FleetConfirmation struct {
	Clusters []FleetTarget
	// Consent are the escalations' lines (purge.Asked.Consent).
	Consent []string
}

// FleetTarget is one cluster's namespaces a fleet's purge acts on.
type FleetTarget struct {
	Context, Cluster string
	Names            []string
}

// Request names every cluster and its namespaces; the answer is their
// total number.
func (c FleetConfirmation) Request() consent.Request {
	total := 0
	var lines []string
	for _, t := range c.Clusters {
		if len(t.Names) > 0 {
			total += len(t.Names)
			lines = append(lines, fmt.Sprintf("%s: %d: %s", consent.Where(t.Context, t.Cluster), len(t.Names), strings.Join(t.Names, ", ")))
		}
	}
	want := strconv.Itoa(total)
	return consent.Request{
		Change: fmt.Sprintf("run the namespace controller's deletion pass FOR REAL on %d namespaces in %d clusters:", total, len(c.Clusters)),
		Lines:  append(lines, consentLines(c.Consent)...), Closing: "Everything it deletes or changes is saved first.",
		Question: fmt.Sprintf("Type the number of namespaces (%s) to go on", want), Want: want,
	}
}

// consentLines are the escalations' lines of a confirmation, escaped.
func consentLines(consent []string) []string {
	out := make([]string, len(consent))
	for i, line := range consent {
		out[i] = Escape(line)
	}
	return out
}

// RescueConfirmation is rescue's (and rescue_namespace's): the namespace,
// where the writes go, and each write of the plan.
type RescueConfirmation struct {
	Plan             *rescue.Plan
	Context, Cluster string
}

// Request says each change of the plan; the answer is the namespace's
// name, as purge asks.
func (c RescueConfirmation) Request() consent.Request {
	p := c.Plan
	verb := "create"
	if p.AlreadyHeld {
		verb = "re-apply"
	}
	lines := []string{consent.Where(c.Context, c.Cluster),
		fmt.Sprintf("%s ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding %s: the namespace controller and the garbage collector may not delete anything in %s",
			verb, Escape(p.Hold), Escape(p.Namespace))}
	for _, v := range p.Volumes {
		if v.Before == "Retain" {
			lines = append(lines, fmt.Sprintf("mark PersistentVolume %s (claim %s) as rescued; it is Retain already", Escape(v.Name), Escape(v.Claim)))
			continue
		}
		lines = append(lines, fmt.Sprintf("set PersistentVolume %s (claim %s) to reclaim policy Retain (was %s, kept in annotation %s)",
			Escape(v.Name), Escape(v.Claim), Escape(v.Before), rescue.ReclaimAnnotation))
	}
	lines = append(lines, fmt.Sprintf("save every object left in %s, Secrets included (in clear, files 0600), to %s", Escape(p.Namespace), Escape(p.BackupDir)))
	return namespaceRequest(fmt.Sprintf("hold the deletion of namespace %q", p.Namespace), p.Namespace, lines)
}

// ReleaseConfirmation is rescue --release's.
type ReleaseConfirmation struct {
	Release          *rescue.Released
	Context, Cluster string
}

// Request says the hold's removal, and that the volumes stay Retain.
func (c ReleaseConfirmation) Request() consent.Request {
	r := c.Release
	return namespaceRequest(fmt.Sprintf("release namespace %q", r.Namespace), r.Namespace, []string{consent.Where(c.Context, c.Cluster),
		fmt.Sprintf("delete ValidatingAdmissionPolicyBinding and ValidatingAdmissionPolicy %s: the namespace controller goes on deleting the namespace", r.Hold),
		"PersistentVolumes a rescue set to Retain stay Retain"})
}

// RestoreConfirmation is rescue --restore's.
type RestoreConfirmation struct {
	Restore *rescue.Restoring
	// Wait bounds the deletion purge's pass finishes, and the restore's
	// waits.
	Wait             time.Duration
	Context, Cluster string
}

// Request says each step of the restore, from the folder it reads, with
// the plan's counts.
func (c RestoreConfirmation) Request() consent.Request {
	r := c.Restore
	applied := r.Plan.Restored()
	return namespaceRequest(fmt.Sprintf("restore namespace %q", r.Namespace), r.Namespace, []string{consent.Where(c.Context, c.Cluster),
		"from " + Escape(r.Dir),
		fmt.Sprintf("delete the hold (ValidatingAdmissionPolicy and binding %s)", r.Hold),
		fmt.Sprintf("finish the deletion with purge's own pass (no escalation; what it deletes is saved to the same folder first), waiting up to %s", c.Wait),
		"create the namespace again with its labels and annotations",
		fmt.Sprintf("apply %d saved object(s) (server-side apply, field manager %s), leaving out %d (each, and why: kubectl ns-doctor restore %s)",
			applied, rescue.FieldManager, len(r.Plan.Steps)-applied, shellQuote(Escape(r.Dir))),
		"bind the claims to their retained volumes again, and give each volume its reclaim policy from before the rescue back once its claim is bound"})
}

// ProtectConfirmation is protect's (and protect --remove's).
type ProtectConfirmation struct {
	Protect          *rescue.Protected
	Context, Cluster string
}

// Request says the policy applied or removed, and what it does.
func (c ProtectConfirmation) Request() consent.Request {
	p := c.Protect
	what := fmt.Sprintf("create ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding %s: DELETE of namespace %s is refused unless it is annotated %s",
		p.Policy, p.Namespace, p.Annotation)
	if p.Removed {
		what = fmt.Sprintf("delete ValidatingAdmissionPolicyBinding and ValidatingAdmissionPolicy %s: namespace %s can be deleted as any other", p.Policy, p.Namespace)
	}
	return namespaceRequest(fmt.Sprintf("change the protection of namespace %q", p.Namespace), p.Namespace, []string{consent.Where(c.Context, c.Cluster), what})
}

// namespaceRequest asks for the namespace's name to go on.
func namespaceRequest(change, namespace string, lines []string) consent.Request {
	return consent.Request{Change: change, Lines: lines, Question: "Type the namespace name to go on", Want: namespace}
}
