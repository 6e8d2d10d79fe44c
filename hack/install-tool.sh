#!/usr/bin/env bash
# Installs a Go tool at a pinned version into .cache/tools/<name>-<version>/
# and prints the binary's path on stdout (progress goes to stderr):
#   bin="$(bash hack/install-tool.sh github.com/golangci/golangci-lint/v2/cmd/golangci-lint v2.15.0)"
set -euo pipefail

pkg="$1"
version="$2"
name="$(basename "${pkg%/v[0-9]*}")"
[[ "${pkg}" =~ /v[0-9]+$ ]] && name="$(basename "$(dirname "${pkg}")")"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# One folder per version, so bumping a pin never reuses a stale binary.
tool_dir="${repo_root}/.cache/tools/${name}-${version}"
bin="${tool_dir}/$(basename "${pkg}")"
[[ "$(basename "${pkg}")" =~ ^v[0-9]+$ ]] && bin="${tool_dir}/${name}"

# Already installed: nothing to do (a cold build takes minutes).
if [[ -x "${bin}" ]]; then
  echo "${bin}"
  exit 0
fi

echo "installing ${name} ${version} into ${tool_dir} ..." >&2
mkdir -p "${tool_dir}"
# Build into a temp dir and move into place, so an interrupted install never
# leaves a half-written binary that the check above would accept.
tmp_dir="$(mktemp -d "${tool_dir}.tmp.XXXXXX")"
trap 'rm -rf "${tmp_dir}"' EXIT
# GOBIN picks the install folder; `go install pkg@version` builds the tool
# with its own go.mod, never the project's, so the plugin's deps stay clean.
GOBIN="${tmp_dir}" go install "${pkg}@${version}" >&2
mv "${tmp_dir}/$(basename "${bin}")" "${bin}"

echo "${bin}"
