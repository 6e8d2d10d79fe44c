#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager and kube-scheduler
# from the pins in hack/controlplane/go.mod (the default) or, given a minor
# such as 1.33, hack/controlplane/1.33/go.mod, and kwok (the nodes' fake
# kubelets) from hack/kwok/go.mod, into a gitignored cache folder keyed by
# the pins' hash, so the ~20 minute cold build happens once per pin change.
# It also writes kwok's stages there (kwok-stages.yaml: the pinned kwok's
# own node and pod stages, with the test bed's pod deletion). Prints the
# folder on stdout.
#   bash hack/build-controlplane.sh [MINOR]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/hack/controlplane"
default_minor=$(awk '$1 == "k8s.io/kubernetes" {print $2}' "$mod/go.mod" | cut -d. -f1,2 | tr -d v)
if [ -n "${1:-}" ] && [ "$1" != default ] && [ "$1" != "$default_minor" ]; then
  mod="$root/hack/controlplane/$1"
  [ -f "$mod/go.mod" ] || { echo "no control plane pins for $1 (hack/controlplane/$1/go.mod); known: $(cd "$root/hack/controlplane" && ls -d 1.* | tr '\n' ' ')" >&2; exit 2; }
fi
cache="${NSDOCTOR_CACHE:-$root/.cache}"
kwok_mod="$root/hack/kwok"
key=$(cat "$mod/go.mod" "$mod/go.sum" "$kwok_mod/go.mod" "$kwok_mod/go.sum" "$kwok_mod/pod-delete.yaml" "$0" | sha256sum | cut -c1-16)
out="$cache/controlplane/$key"

if [ -x "$out/kube-apiserver" ] && [ -x "$out/kube-controller-manager" ] && [ -x "$out/kube-scheduler" ] &&
  [ -x "$out/etcd" ] && [ -x "$out/kwok" ] && [ -s "$out/kwok-stages.yaml" ]; then
  echo "$out"
  exit 0
fi

k8s_version=$(awk '$1 == "k8s.io/kubernetes" {print $2}' "$mod/go.mod")
minor=$(echo "$k8s_version" | cut -d. -f2)
# The release's own date, not now: the same pins give the same binaries.
build_date=$(cd "$mod" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done

tmp="$out.tmp.$$"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "building control plane $k8s_version into $out (cold: about 10 minutes on 2 cores)" >&2
cd "$mod"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly
# A release whose modules need a newer Go than the machine's names its
# toolchain in its go.mod (1.38: go1.27.3); the Go module proxy serves it.
toolchain=$(awk '$1 == "toolchain" {print $2}' go.mod)
[ -z "$toolchain" ] || export GOTOOLCHAIN="$toolchain"
go build -trimpath -ldflags "$ldflags" -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
go build -trimpath -ldflags "$ldflags" -o "$tmp/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
go build -trimpath -ldflags "$ldflags" -o "$tmp/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler
go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
# kwok is one for every Kubernetes version (it speaks the stable core API).
cd "$kwok_mod"
unset GOTOOLCHAIN
go build -trimpath -ldflags "-s -w" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok
# The stages: a node that initialises and heartbeats through its lease, and
# kwok's general pod stages (created, initialised, Running and Ready, a
# Job's pods complete), except their deletion, which is the bed's own
# (pod-delete.yaml: gone at the end of the grace period).
kwok_dir=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
{
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/general/pod-create.yaml pod/general/pod-init-container-running.yaml \
    pod/general/pod-init-container-completed.yaml pod/general/pod-ready.yaml pod/general/pod-complete.yaml; do
    echo "---"; cat "$kwok_dir/kustomize/stage/$f"
  done
  echo "---"; cat "$kwok_mod/pod-delete.yaml"
} > "$tmp/kwok-stages.yaml"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
