#!/usr/bin/env bash
# gRPC calls per generator CPU-second, brink beside ghz, in one run: each drives the same Go
# gRPC Greeter (bench/grpc-server, pinned to CPU 1) with C calls in flight over CONNS connections
# for D seconds, the generator pinned to CPU 0. RATE 0 saturates; a rate both can reach shows
# whether each offered what it was asked for.
#
#   bash bench/grpc.sh [CONCURRENCY] [SECONDS] [RATE] [CONNECTIONS]   (from the project root;
#                                                   CONNECTIONS defaults to CONCURRENCY)
#
# ghz (v0.121.0) and the server are built once from the Go module proxy into $PEERS (default
# ~/.cache/brink-peers), outside the repository. Prints per tool: calls, calls/s, generator CPU
# seconds, calls per generator CPU-second, peak RSS.
set -euo pipefail
C=${1:-50}; D=${2:-10}; RATE=${3:-0}; CONNS=${4:-$C}
HERE=$(cd "$(dirname "$0")" && pwd)
PEERS=${PEERS:-$HOME/.cache/brink-peers}
BRINK=${BRINK:-target/release/brink}
PROTO=examples/grpc/greeter.proto
ADDR=127.0.0.1:18095
mkdir -p "$PEERS/bin"
[ -x "$PEERS/bin/ghz" ] || GOBIN=$PEERS/bin go install github.com/bojand/ghz/cmd/ghz@v0.121.0
[ -x "$PEERS/bin/greeter-bench" ] || (cd "$HERE/grpc-server" && go build -o "$PEERS/bin/greeter-bench" .)
[ -x "$BRINK" ] || cargo build --release -q -p brink
taskset -c 1 "$PEERS/bin/greeter-bench" -addr $ADDR & SRV=$!
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null' EXIT
sleep 0.5
out=$(mktemp -d)
run() { local name=$1; shift; /usr/bin/time -f "%U %S %M" -o "$out/$name.time" taskset -c 0 "$@" > "$out/$name.out" 2>&1; }
rate_brink=(); rate_ghz=()
if [ "$RATE" != 0 ]; then rate_brink=(--rate "$RATE"); rate_ghz=(--rps "$RATE"); fi
printf "%-6s %10s %10s %8s %14s %8s\n" tool calls calls/s cpu_s calls/cpu_s rss_mb
for t in brink ghz; do
  case $t in
    brink) run brink "$BRINK" run "grpc://$ADDR" --proto $PROTO --call helloworld.Greeter/SayHello \
             --data '{"name":"brink"}' -c "$C" --connections "$CONNS" -d "${D}s" "${rate_brink[@]}" --threads 1 -q --no-history --json "$out/brink.json"
           calls=$(python3 -c "import json;print(json.load(open('$out/brink.json'))['summary']['requests'])");;
    ghz)   run ghz "$PEERS/bin/ghz" --insecure --proto $PROTO --call helloworld.Greeter.SayHello \
             -d '{"name":"ghz"}' -c "$C" --connections "$CONNS" -z "${D}s" "${rate_ghz[@]}" -O json "$ADDR"
           calls=$(python3 -c "import json;print(json.load(open('$out/ghz.out'))['count'])");;
  esac
  read -r u s m < "$out/$t.time"
  python3 -c "
c,u,s,m,d=$calls,$u,$s,$m,$D
cpu=u+s
print(f'{\"$t\":<6} {c:>10} {c/d:>10.0f} {cpu:>8.2f} {c/cpu if cpu else 0:>14.0f} {m/1024:>8.1f}')"
done
