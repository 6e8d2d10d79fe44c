#!/usr/bin/env bash
# Installs the pinned krew and krew-index's manifest validator (same module,
# same version) with hack/install-tool.sh, cached under .cache/tools/ and
# keyed by version, and prints both paths on stdout, one a line: krew first.
#   { read -r krew; read -r validate; } < <(bash hack/install-krew.sh)
# test/distribution runs this script itself; running it before `go test`
# keeps the cold build (about a minute) out of the test timeout.
set -euo pipefail

KREW_VERSION="${KREW_VERSION:-v0.4.3}"
here="$(dirname "${BASH_SOURCE[0]}")"
bash "${here}/install-tool.sh" sigs.k8s.io/krew/cmd/krew "${KREW_VERSION}"
bash "${here}/install-tool.sh" sigs.k8s.io/krew/cmd/validate-krew-manifest "${KREW_VERSION}"
