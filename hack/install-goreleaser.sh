#!/usr/bin/env bash
# Installs a pinned goreleaser v2 into .cache/tools/goreleaser-<version>/ and
# prints the binary's path on stdout (progress goes to stderr), so callers can
# do: GORELEASER="$(hack/install-goreleaser.sh)".
set -euo pipefail

# Pinned because v2.18+ needs Go 1.27 and v2.17 needs a module the proxy
# refuses; v2.15.4 builds with the Go 1.26 toolchain we use.
GORELEASER_VERSION="${GORELEASER_VERSION:-v2.15.4}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# One folder per version, so bumping the pin never reuses a stale binary.
tool_dir="${repo_root}/.cache/tools/goreleaser-${GORELEASER_VERSION}"
bin="${tool_dir}/goreleaser"

# Already installed: nothing to do (a cold build takes minutes).
if [[ -x "${bin}" ]]; then
  echo "${bin}"
  exit 0
fi

echo "installing goreleaser ${GORELEASER_VERSION} into ${tool_dir} ..." >&2
mkdir -p "${tool_dir}"
# Build into a temp dir and move into place, so an interrupted install never
# leaves a half-written binary that the check above would accept.
tmp_dir="$(mktemp -d "${tool_dir}.tmp.XXXXXX")"
trap 'rm -rf "${tmp_dir}"' EXIT
# GOBIN picks the install folder; `go install pkg@version` builds the tool
# with its own go.mod, never the project's, so the plugin's deps stay clean.
GOBIN="${tmp_dir}" go install "github.com/goreleaser/goreleaser/v2@${GORELEASER_VERSION}" >&2
mv "${tmp_dir}/goreleaser" "${bin}"

echo "${bin}"
