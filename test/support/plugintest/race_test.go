package plugintest

import (
	"os/exec"
	"path/filepath"
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
	err := exec.Command(bin).Run()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 66 {
		t.Fatalf("a racy binary built with -race ended with %v, want exit code 66", err)
	}
}
