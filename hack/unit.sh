#!/usr/bin/env bash
# make unit: every fast test (no control plane: everything outside test/),
# under the race detector (-race: a pass of many namespaces runs at once),
# then the unit coverage floors. Prints each package's line as go test does.
set -euo pipefail
cd "$(dirname "$0")/.."

# Floors, in percent of statements: the packages whose logic the fast
# tests must cover (issue #22). Raise them as coverage grows.
floors="internal/apierror=85 internal/guard=75 internal/mcp=75 internal/webhookcert=60 internal/watch=55 internal/purge=80 internal/printer=75 internal/kube=60 internal/await=60 internal/diagnose=75 internal/deletion=85 internal/access=90 internal/consent=90"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# shellcheck disable=SC2046
go test -race -count=1 -cover $(go list ./... | grep -v '/test/') | tee "$out"

failed=0
for floor in $floors; do
  pkg=${floor%=*} want=${floor#*=}
  got=$(awk -v p="github.com/ns-doctor/ns-doctor/$pkg" '$2 == p { for (i = 1; i <= NF; i++) if ($i == "coverage:") { sub("%", "", $(i+1)); print $(i+1) } }' "$out")
  if [ -z "$got" ]; then
    echo "coverage of $pkg not reported" >&2; failed=1; continue
  fi
  if awk -v g="$got" -v w="$want" 'BEGIN { exit !(g < w) }'; then
    echo "coverage of $pkg is $got%, below its floor of $want%" >&2; failed=1
  fi
done
exit $failed
