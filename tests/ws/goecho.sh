#!/usr/bin/env bash
# Builds the gorilla/websocket echo server (tests/ws/goecho) from the Go module proxy, once per
# source version, into ~/.cache/brink-ci/goecho, and prints the binary's path.
set -euo pipefail
here=$(cd "$(dirname "$0")/goecho" && pwd)
command -v go >/dev/null || { echo "needs Go (the Go module proxy serves gorilla/websocket)" >&2; exit 2; }
key=$(cat "$here/main.go" "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)
out=$HOME/.cache/brink-ci/goecho/$key/goecho
if [ ! -x "$out" ]; then
  mkdir -p "$(dirname "$out")"
  (cd "$here" && GOPATH=${GOPATH:-$HOME/.cache/brink-ci/gopath} GOFLAGS=-mod=mod go build -o "$out" .) >&2
fi
echo "$out"
