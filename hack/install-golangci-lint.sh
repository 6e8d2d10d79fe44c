#!/usr/bin/env bash
# Installs the pinned golangci-lint v2 (staticcheck, errcheck, unused,
# ineffassign and go vet in one run) and prints the binary's path.
set -euo pipefail

# v2.15.0 is the newest the module proxy serves that builds with Go 1.26.
GOLANGCI_LINT_VERSION="${GOLANGCI_LINT_VERSION:-v2.15.0}"
exec bash "$(dirname "${BASH_SOURCE[0]}")/install-tool.sh" github.com/golangci/golangci-lint/v2/cmd/golangci-lint "${GOLANGCI_LINT_VERSION}"
