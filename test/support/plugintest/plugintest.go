// Package plugintest runs the built plugin through the real kubectl, for
// the end-to-end test packages.
package plugintest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Build compiles kubectl-ns_doctor into dir, under the name kubectl looks
// for, with extra ldflags (e.g. a version); race builds it with the race
// detector, so that a race in a real run ends it with exit code 66 (and
// the report on stderr), failing the test that ran it.
func Build(dir, ldflags string, race bool) error {
	args := []string{"build", "-ldflags", ldflags, "-o", filepath.Join(dir, "kubectl-ns_doctor")}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/ns-doctor/ns-doctor/cmd/kubectl-ns_doctor")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the plugin: %v\n%s", err, out)
	}
	return nil
}

// Result is what one command printed and its exit code.
type Result struct {
	Stdout, Stderr string
	Code           int
	// MaxRSS is the command's peak resident memory in bytes (0 where the
	// system does not say).
	MaxRSS int64
}

// Plugin is a built plugin's folder, for a test package to run it from.
type Plugin struct{ Dir string }

// Kubectl runs the real kubectl with the plugin first on PATH.
func (p Plugin) Kubectl(t testing.TB, kubeconfig string, args ...string) Result {
	t.Helper()
	return Kubectl(t, p.Dir, kubeconfig, args...)
}

// Kubectl runs the real kubectl with pluginDir first on PATH and the given
// kubeconfig; NO_COLOR is left empty so colour follows the TTY rule.
func Kubectl(t testing.TB, pluginDir, kubeconfig string, args ...string) Result {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl is not on PATH: %v", err)
	}
	env := []string{"PATH=" + pluginDir + string(os.PathListSeparator) + os.Getenv("PATH"), "KUBECONFIG=" + kubeconfig, "NO_COLOR="}
	return Command(t, "", 3*time.Minute, env, "kubectl", args...)
}

// Command runs name with args in dir (empty: the test's folder), env
// added to this process's environment, and fails the test only if it
// could not run at all.
func Command(t testing.TB, dir string, timeout time.Duration, env []string, name string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s %s: %v", name, strings.Join(args, " "), err)
	}
	failOnRace(t, name, errOut.String())
	return Result{Stdout: out.String(), Stderr: errOut.String(), Code: code, MaxRSS: maxRSS(cmd.ProcessState)}
}

// raceWarning starts the race detector's report of a race.
const raceWarning = "WARNING: DATA RACE"

// RaceReport is the first data race a race-built process reported on
// stderr, and whether there is one.
func RaceReport(stderr string) (string, bool) {
	i := strings.Index(stderr, raceWarning)
	if i < 0 {
		return "", false
	}
	report := stderr[i:]
	if j := strings.Index(report, "\n==================\n"); j >= 0 {
		report = report[:j]
	}
	return report, true
}

// failOnRace fails the test when a race-built process reported a race,
// whatever its exit code (a long-running one is killed before it could
// exit with 66).
func failOnRace(t testing.TB, name, stderr string) {
	t.Helper()
	if report, ok := RaceReport(stderr); ok {
		t.Errorf("%s reported a data race:\n%s", name, report)
	}
}

// Direct runs the plugin binary itself, not through kubectl: kubectl
// execs the plugin in its own process, whose peak memory then counts
// kubectl's too.
func (p Plugin) Direct(t testing.TB, kubeconfig string, args ...string) Result {
	t.Helper()
	return Command(t, "", 3*time.Minute, []string{"KUBECONFIG=" + kubeconfig, "NO_COLOR="}, filepath.Join(p.Dir, "kubectl-ns_doctor"), args...)
}

// Must fails the test on err.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// UniqueName is a namespace name derived from the test's, unique per run.
func UniqueName(t testing.TB) string {
	var b strings.Builder
	for _, r := range strings.ToLower(t.Name()) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteRune('-')
		}
	}
	name := b.String()
	if len(name) > 40 {
		name = name[:40]
	}
	return strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
}
