#!/usr/bin/env bash
# Installs the pinned Prometheus server and promtool (same module, same
# version) with hack/install-tool.sh, cached under .cache/tools/ and keyed by
# version, and prints both paths on stdout, one a line: the server first.
#   { read -r prometheus; read -r promtool; } < <(bash hack/install-prometheus.sh)
# A cold build takes about 6 minutes on 2 cores (promtool then reuses most of
# the build cache); later runs print the cached paths at once.
# test/support/prometheus and test/monitoring run this script themselves;
# running it before `go test` keeps the cold build out of the test timeout.
set -euo pipefail

# Prometheus v3 tags its Go module v0.3xx.y (v3.16.0 = v0.316.0).
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
here="$(dirname "${BASH_SOURCE[0]}")"
# go install builds without the `builtinassets` tag: no web UI, which the
# tests do not need (the HTTP API, /-/ready and the rule engine are all there).
bash "${here}/install-tool.sh" github.com/prometheus/prometheus/cmd/prometheus "${PROMETHEUS_VERSION}"
bash "${here}/install-tool.sh" github.com/prometheus/prometheus/cmd/promtool "${PROMETHEUS_VERSION}"
