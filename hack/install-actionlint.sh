#!/usr/bin/env bash
# Installs the pinned actionlint (checks .github/workflows in make lint) with
# hack/install-tool.sh, cached under .cache/tools/ and keyed by version;
# prints its path.
set -euo pipefail

ACTIONLINT_VERSION="${ACTIONLINT_VERSION:-v1.7.12}"
exec bash "$(dirname "${BASH_SOURCE[0]}")/install-tool.sh" github.com/rhysd/actionlint/cmd/actionlint "${ACTIONLINT_VERSION}"
