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
// for, with extra ldflags (e.g. a version).
func Build(dir, ldflags string) error {
	cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", filepath.Join(dir, "kubectl-ns_doctor"), "github.com/ns-doctor/ns-doctor/cmd/kubectl-ns_doctor")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the plugin: %v\n%s", err, out)
	}
	return nil
}

// Result is what one command printed and its exit code.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Kubectl runs the real kubectl with pluginDir first on PATH and the given
// kubeconfig; NO_COLOR is left empty so colour follows the TTY rule.
func Kubectl(t testing.TB, pluginDir, kubeconfig string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is not on PATH: %v", err)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig, "NO_COLOR=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running kubectl %s: %v", strings.Join(args, " "), err)
	}
	return Result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// UniqueName is a namespace name derived from the test's, unique per run.
func UniqueName(t testing.TB) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	return strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
}
