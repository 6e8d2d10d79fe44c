#!/usr/bin/env bash
# Installs the pinned MCP Inspector (npm @modelcontextprotocol/inspector) into
# .cache/tools/mcp-inspector-<version>/ and prints the path of its command on
# stdout (progress goes to stderr):
#   inspector="$(bash hack/install-inspector.sh)"
#   "$inspector" --cli kubectl-ns_doctor mcp --method tools/list
# test/mcp runs this script itself; `make test` runs it before `go test`, so
# the cold install (about a minute) is outside the test timeout.
set -euo pipefail

INSPECTOR_VERSION="${INSPECTOR_VERSION:-2.12.0}"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# One folder per version, so bumping the pin never reuses a stale install.
tool_dir="${repo_root}/.cache/tools/mcp-inspector-${INSPECTOR_VERSION}"
bin="${tool_dir}/node_modules/.bin/mcp-inspector"

if [[ -x "${bin}" ]]; then
  echo "${bin}"
  exit 0
fi
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "the MCP Inspector needs node and npm (Node.js 20 or later): install them, e.g. apt-get install nodejs npm" >&2
  exit 1
fi

echo "installing @modelcontextprotocol/inspector ${INSPECTOR_VERSION} into ${tool_dir} ..." >&2
mkdir -p "$(dirname "${tool_dir}")"
# Install into a temp dir and move into place, so an interrupted install
# never leaves a half-written folder that the check above would accept.
tmp_dir="$(mktemp -d "${tool_dir}.tmp.XXXXXX")"
trap 'rm -rf "${tmp_dir}"' EXIT
npm install --prefix "${tmp_dir}" --no-audit --no-fund --loglevel=error \
  "@modelcontextprotocol/inspector@${INSPECTOR_VERSION}" >&2
rm -rf "${tool_dir}"
mv "${tmp_dir}" "${tool_dir}"

echo "${bin}"
