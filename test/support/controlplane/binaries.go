package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// binDir finds the control plane binaries: the given folder, else (for the
// default version) $NSDOCTOR_CONTROLPLANE_BIN, else the project's cached
// build of that version, built on first use by hack/build-controlplane.sh
// (about 10 minutes cold).
func binDir(ctx context.Context, dir, version string) (string, error) {
	if dir == "" && version == "" {
		dir = os.Getenv("NSDOCTOR_CONTROLPLANE_BIN")
	}
	if dir != "" {
		for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				return "", fmt.Errorf("%w in %s: %v", errNoBinaries, dir, err)
			}
		}
		return dir, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "build-controlplane.sh"), version)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the control plane with hack/build-controlplane.sh: %w", err)
	}
	return strings.TrimSpace(out.String()), nil
}

// moduleRoot walks up from the working directory to the project's go.mod;
// tests run in their package's folder.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "build-controlplane.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w: set NSDOCTOR_CONTROLPLANE_BIN or run from the ns-doctor checkout", errNoBinaries)
		}
		dir = parent
	}
}
