package printer

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ns-doctor/ns-doctor/internal/backup/restore"
	"github.com/ns-doctor/ns-doctor/internal/rescue"
)

// RescueDocument is rescue's report for -o json|yaml.
type RescueDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*rescue.Report
	Release string `json:"release"`
	Restore string `json:"restore"`
}

// RescueDoc is rescue's report as the document -o json|yaml prints (and
// the MCP server's rescue_namespace returns): the report, and the two
// ways on as commands.
func RescueDoc(r *rescue.Report) RescueDocument {
	return RescueDocument{APIVersion: APIVersion, Kind: "Rescue", Report: r,
		Release: releaseCommand(r.Namespace), Restore: restoreCommand(r.Namespace, r.Backup.Dir)}
}

// Rescue prints rescue's report: -o json|yaml (format), or the human view.
func Rescue(w io.Writer, format string, r *rescue.Report) error {
	if format != "" {
		return Print(w, format, RescueDoc(r))
	}
	_, err := io.WriteString(w, RescueWords(r))
	return err
}

// RescueWords is the human view of rescue's report.
func RescueWords(r *rescue.Report) string {
	var b strings.Builder
	ns := Escape(r.Namespace)
	fmt.Fprintf(&b, "HELD namespace %s: ValidatingAdmissionPolicy %s refuses the namespace controller's and the garbage collector's deletes in it\n", ns, Escape(r.Hold))
	b.WriteString("  " + inForceWords(r.InForce) + "\n")
	b.WriteString("  Pods already deleted, and objects already being deleted, are not brought back by the hold.\n")
	var going []string
	for _, t := range r.Backup.Types {
		for _, name := range t.Going {
			going = append(going, Escape(t.Resource)+"/"+Escape(name))
		}
	}
	if len(going) > 0 {
		fmt.Fprintf(&b, "  going (deletion already under way, saved): %s\n", strings.Join(going, ", "))
	}
	b.WriteString(lostWords(r.Backup.Lost))
	if len(r.Volumes) == 0 {
		b.WriteString("VOLUMES none bound to a claim in this namespace\n")
	}
	for _, v := range r.Volumes {
		fmt.Fprintf(&b, "VOLUME %s (claim %s): reclaim policy Retain (was %s)\n", Escape(v.Name), Escape(v.Claim), Escape(v.Before))
	}
	fmt.Fprintf(&b, "SAVED to %s\n", Escape(r.Backup.Dir))
	for _, t := range r.Backup.Types {
		line := fmt.Sprintf("  %s: %d", Escape(t.Resource), t.Count)
		if t.Record > 0 {
			line += fmt.Sprintf(", %d for the record only (record/: a controller or kubelet re-creates them)", t.Record)
		}
		b.WriteString(line + "\n")
	}
	if r.Backup.Secrets > 0 {
		fmt.Fprintf(&b, "  %d Secret(s) are saved in clear: the files are 0600 in folders 0700; keep the folder safe, delete it when done\n", r.Backup.Secrets)
	}
	for _, f := range r.Backup.Failed {
		fmt.Fprintf(&b, "  NOT SAVED %s\n", Escape(f))
	}
	fmt.Fprintf(&b, "NEXT let the deletion finish: %s (volumes stay Retain)\n", releaseCommand(r.Namespace))
	fmt.Fprintf(&b, "     or bring the namespace back: %s\n", restoreCommand(r.Namespace, r.Backup.Dir))
	return b.String()
}

// inForceWords says whether the API server was seen enforcing the hold.
func inForceWords(f rescue.InForce) string {
	if f.Proven {
		return fmt.Sprintf("in force after %s: a dry-run DELETE of %s as %s was refused", time.Duration(f.AfterMs)*time.Millisecond, Escape(f.Object), rescue.ProofUser)
	}
	return fmt.Sprintf("NOT PROVEN in force (%s): %s", time.Duration(f.AfterMs)*time.Millisecond, Escape(f.Why))
}

// maxLostLines bounds the human view's list of what was lost; -o json has
// them all.
const maxLostLines = 20

// lostWords says what the deletion took before the hold, as far as what
// remains tells, and that the rest cannot be known.
func lostWords(lost []rescue.Lost) string {
	var b strings.Builder
	if len(lost) == 0 {
		b.WriteString("LOST nothing that what remains names\n")
	} else {
		fmt.Fprintf(&b, "LOST %d object(s) deleted before the hold, named by what remains:\n", len(lost))
	}
	for i, l := range lost {
		if i == maxLostLines {
			fmt.Fprintf(&b, "  and %d more (-o json lists them all)\n", len(lost)-i)
			break
		}
		by := make([]string, len(l.By))
		for j, n := range l.By {
			by[j] = Escape(n)
		}
		fmt.Fprintf(&b, "  %s/%s (named by %s)\n", Escape(l.Kind), Escape(l.Name), joinSome(by))
	}
	b.WriteString("  What nothing left names cannot be known from the cluster: compare with where the namespace came from (Git, Helm, a backup).\n")
	return b.String()
}

// RescueStep is the progress line for one step of a rescue (stderr).
func RescueStep(s rescue.Step, r *rescue.Report) string {
	switch s {
	case rescue.StepHeld:
		return fmt.Sprintf("rescue: hold applied (ValidatingAdmissionPolicy and binding %s)", Escape(r.Hold))
	case rescue.StepInForce:
		return "rescue: hold " + inForceWords(r.InForce)
	case rescue.StepRetained:
		return fmt.Sprintf("rescue: %d volume(s) set to Retain", len(r.Volumes))
	case rescue.StepSaved:
		n := 0
		for _, t := range r.Backup.Types {
			n += t.Count + t.Record
		}
		return fmt.Sprintf("rescue: %d object(s) saved to %s", n, Escape(r.Backup.Dir))
	}
	return "rescue: " + Escape(string(s))
}

// RestoreStep is the progress line for one step of rescue --restore
// (stderr): a restore killed half-way has said how far it got.
func RestoreStep(s rescue.RestoreStep, r *rescue.RestoreReport) string {
	ns := Escape(r.Namespace)
	switch s {
	case rescue.StepReleased:
		return "restore: hold removed (" + releasedWords(r.Released) + "); finishing the deletion of namespace " + ns
	case rescue.StepDeleted:
		if r.Deletion == nil {
			return "restore: namespace " + ns + " was gone already"
		}
		return fmt.Sprintf("restore: namespace %s deleted by purge's pass in %d pass(es)", ns, r.Deletion.Passes)
	case rescue.StepRecreated:
		if r.Restore != nil && !r.Restore.NamespaceCreated {
			return "restore: namespace " + ns + " is there: restoring into it"
		}
		return "restore: namespace " + ns + " created again"
	case rescue.StepReapplied, rescue.StepGivenBack:
		if r.Restore != nil {
			return RestoreProgress(map[rescue.RestoreStep]restore.Step{rescue.StepReapplied: restore.StepApplied, rescue.StepGivenBack: restore.StepVolumes}[s], r.Restore)
		}
	}
	return "restore: " + Escape(string(s))
}

// releasedWords says whether the API server was seen letting the
// controllers delete again once the hold was removed.
func releasedWords(f rescue.InForce) string {
	if f.Proven {
		return fmt.Sprintf("released in force after %s: a dry-run DELETE of %s as %s was allowed", time.Duration(f.AfterMs)*time.Millisecond, Escape(f.Object), rescue.ProofUser)
	}
	return fmt.Sprintf("release NOT PROVEN in force (%s): %s", time.Duration(f.AfterMs)*time.Millisecond, Escape(f.Why))
}

func releaseCommand(ns string) string { return "kubectl ns-doctor rescue " + Escape(ns) + " --release" }

// restoreCommand brings the namespace back from the backup: --restore
// releases the hold and waits for the deletion itself; the folder is named
// so that it works once the hold (which records it) is gone too.
func restoreCommand(ns, dir string) string {
	return fmt.Sprintf("kubectl ns-doctor rescue %s --restore --backup-dir %s", Escape(ns), shellQuote(Escape(dir)))
}

// ReleasedDocument is release's report for -o json|yaml.
type ReleasedDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*rescue.Released
}

// Released prints what release did.
func Released(w io.Writer, format string, r *rescue.Released) error {
	if format != "" {
		return Print(w, format, ReleasedDocument{APIVersion: APIVersion, Kind: "RescueRelease", Released: r})
	}
	var b strings.Builder
	if r.WasHeld {
		fmt.Fprintf(&b, "RELEASED namespace %s: policy %s removed; the namespace controller goes on deleting it (%s)\n", Escape(r.Namespace), Escape(r.Hold), releasedWords(r.InForce))
	} else {
		fmt.Fprintf(&b, "NOT HELD namespace %s: no policy %s to remove\n", Escape(r.Namespace), Escape(r.Hold))
	}
	for _, v := range r.Volumes {
		fmt.Fprintf(&b, "VOLUME %s (claim %s) stays %s; its policy before the rescue was %s: %s\n",
			Escape(v.Name), Escape(v.Claim), Escape(v.Now), Escape(v.Before), Escape(v.RestoreCommand()))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ProtectedDocument is protect's report for -o json|yaml.
type ProtectedDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*rescue.Protected
}

// Protected prints what protect did.
func Protected(w io.Writer, format string, p *rescue.Protected) error {
	if format != "" {
		return Print(w, format, ProtectedDocument{APIVersion: APIVersion, Kind: "Protect", Protected: p})
	}
	ns := Escape(p.Namespace)
	var line string
	switch {
	case p.Removed && p.WasThere:
		line = fmt.Sprintf("UNPROTECTED namespace %s: policy %s removed; a dry-run deletion is allowed again\n", ns, Escape(p.Policy))
		if !p.Enforced {
			line = fmt.Sprintf("UNPROTECTED namespace %s: policy %s removed, but the API server still refused a dry-run deletion: it may take a few more seconds; check with kubectl delete namespace %s --dry-run=server\n",
				ns, Escape(p.Policy), ns)
		}
	case p.Removed:
		line = fmt.Sprintf("NOT PROTECTED namespace %s: no policy %s to remove\n", ns, Escape(p.Policy))
	default:
		line = fmt.Sprintf("PROTECTED namespace %s: policy %s refuses its deletion unless it is annotated first: kubectl annotate namespace %s %s\n",
			ns, Escape(p.Policy), ns, Escape(p.Annotation))
		if !p.Enforced {
			line += "  the API server did not yet refuse a dry-run deletion: the policy may take a few more seconds to apply; check with kubectl delete namespace " + ns + " --dry-run=server\n"
		}
	}
	_, err := io.WriteString(w, line)
	return err
}

// RestoredDocument is rescue --restore's report for -o json|yaml.
type RestoredDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	*rescue.RestoreReport
}

// Restored prints what rescue --restore did: the release, the deletion
// purge's pass finished, then the restore as `restore` prints it.
func Restored(w io.Writer, format string, r *rescue.RestoreReport) error {
	if format != "" {
		return Print(w, format, RestoredDocument{APIVersion: APIVersion, Kind: "RescueRestore", RestoreReport: r})
	}
	var b strings.Builder
	if r.WasHeld {
		fmt.Fprintf(&b, "RELEASED hold of namespace %s: %s\n", Escape(r.Namespace), releasedWords(r.Released))
	}
	if r.Deletion != nil {
		fmt.Fprintf(&b, "DELETED namespace %s with purge's own pass: %s\n", Escape(r.Namespace), Escape(PurgeMessage(r.Deletion)))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if r.Restore == nil {
		return nil
	}
	return Restore(w, "", r.Restore)
}
