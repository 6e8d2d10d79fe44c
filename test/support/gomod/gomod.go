// Package gomod gets a Go module at a pinned version through the module
// proxy (or the module cache) for the files it ships: the Prometheus
// Operator's and cert-manager's CRDs, which test/monitoring installs.
package gomod

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
)

// Dir downloads module (path@version) and returns its folder in the module
// cache. It runs `go mod download` in a throwaway folder with no go.mod,
// so no go.mod or go.sum of the project changes.
func Dir(ctx context.Context, module string) (string, error) {
	tmp, err := os.MkdirTemp("", "ns-doctor-modcache-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// -json reports a module's own error in the JSON, with exit status 1.
	runErr := cmd.Run()
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out.Bytes(), &info); err != nil || info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %v %s%s", module, runErr, info.Error, errOut.String())
	}
	return info.Dir, nil
}
