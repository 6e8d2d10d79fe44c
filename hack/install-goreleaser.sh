#!/usr/bin/env bash
# Installs the pinned goreleaser v2 and prints the binary's path, so callers
# can do: GORELEASER="$(hack/install-goreleaser.sh)".
set -euo pipefail

# Pinned because v2.18+ needs Go 1.27 and v2.17 needs a module the proxy
# refuses; v2.15.4 builds with the Go 1.26 toolchain we use.
GORELEASER_VERSION="${GORELEASER_VERSION:-v2.15.4}"
exec bash "$(dirname "${BASH_SOURCE[0]}")/install-tool.sh" github.com/goreleaser/goreleaser/v2 "${GORELEASER_VERSION}"
