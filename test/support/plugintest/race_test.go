package plugintest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A binary built with -race, as Setup.Race builds the plugin, ends with
// exit code 66 after a data race: the end-to-end tests, which check every
// exit code, then fail. Without this, a race-built plugin could race
// unnoticed.
func TestRaceBuiltBinaryFailsOnARace(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "racy")
	if out, err := exec.Command("go", "build", "-race", "-o", bin, "./testdata/racy").CombinedOutput(); err != nil {
		t.Fatalf("go build -race: %v\n%s", err, out)
	}
	var stderr strings.Builder
	cmd := exec.Command(bin)
	cmd.Stderr = &stderr
	err := cmd.Run()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 66 {
		t.Fatalf("a racy binary built with -race ended with %v, want exit code 66", err)
	}
	// A process the test kills never exits with 66: Command and Process
	// read its stderr for the report instead.
	if report, ok := RaceReport(stderr.String()); !ok || !strings.Contains(report, "racy") {
		t.Fatalf("no race report found in its stderr:\n%s", stderr.String())
	}
	if _, ok := RaceReport("error: namespace \"demo\" not found\n"); ok {
		t.Fatal("a race found in an ordinary error")
	}
}
