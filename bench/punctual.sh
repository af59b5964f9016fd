#!/usr/bin/env bash
# How punctual the open model is over HTTP/2, gRPC and HTTP/3, and what it costs: brink at
# RATES requests/s for D seconds (one thread, pinned to CPU 0) against the bench nginx (h2c),
# the Go gRPC Greeter and the bench HTTP/3 server (crates/engine/examples/h3_server.rs, over 4
# connections), all pinned to CPU 1. Prints per protocol and rate: requests, how many
# started late (over 1 ms after their intended instant), p90 from the intended start beside
# p90 service time, and the generator's CPU microseconds per request. BEFORE=path/to/brink
# adds the same rows for another build, side by side.
#
#   bash bench/punctual.sh [SECONDS] [RATES]      (from the project root; RATES "1000 20000")
#
# Needs nginx; the Greeter is built once from the Go module proxy (see bench/grpc.sh).
set -euo pipefail
D=${1:-5}; RATES=${2:-"1000 20000"}
HERE=$(cd "$(dirname "$0")" && pwd)
PEERS=${PEERS:-$HOME/.cache/brink-peers}
BRINK=${BRINK:-target/release/brink}
[ -x "$BRINK" ] || cargo build --release -q -p brink
cargo build --release -q -p engine --example h3_server
[ -x "$PEERS/bin/greeter-bench" ] || (mkdir -p "$PEERS/bin" && cd "$HERE/grpc-server" && go build -o "$PEERS/bin/greeter-bench" .)
taskset -c 1 nginx -c "$HERE/nginx-h2c.conf" & NG=$!
taskset -c 1 "$PEERS/bin/greeter-bench" -addr 127.0.0.1:18095 & SRV=$!
taskset -c 1 target/release/examples/h3_server 18443 3600 & H3=$!
trap 'kill $NG $SRV $H3 2>/dev/null; wait $NG $SRV $H3 2>/dev/null' EXIT
sleep 0.5
# Measure the bench servers, never whatever else holds their ports (a stray caddy did once).
bound() { kill -0 "$1" 2>/dev/null && { ! command -v ss >/dev/null || ss -Hlpn "$3" "sport = :$2" | grep -q "pid=$1,"; }; }
bound $SRV 18095 -t || { echo "the gRPC bench server does not hold TCP port 18095 (taken? ss -tlpn 'sport = :18095')" >&2; exit 1; }
bound $H3 18443 -u || { echo "the bench HTTP/3 server does not hold UDP port 18443 (taken? ss -ulpn 'sport = :18443')" >&2; exit 1; }
out=$(mktemp -d)
printf "%-7s %-5s %6s %9s %7s %11s %11s %8s\n" build proto rate requests late p90_int_ms p90_svc_ms us/req
for bin in "$BRINK" ${BEFORE:-}; do
  label=this; [ "$bin" = "$BRINK" ] || label=before
  for proto in h2c grpc h3; do
    for rate in $RATES; do
      case $proto in
        h2c)  target=(http://127.0.0.1:18097/ --http2);;
        grpc) target=(grpc://127.0.0.1:18095 --proto examples/grpc/greeter.proto
                      --call helloworld.Greeter/SayHello --data '{"name":"brink"}');;
        h3)   target=(https://127.0.0.1:18443/ --http3 --insecure --connections 4);;
      esac
      /usr/bin/time -o "$out/time" -f "%U %S" taskset -c 0 "$bin" run "${target[@]}" \
        --rate "$rate" -d "${D}s" --threads 1 -q --no-history --json "$out/r.json"
      python3 - "$out" "$label" "$proto" "$rate" <<'PY'
import json, sys
out, label, proto, rate = sys.argv[1:]
s = json.load(open(f"{out}/r.json"))["scenarios"][0]["summary"]
u, k = map(float, open(f"{out}/time").read().split())
n = s["requests"]
print(f"{label:<7} {proto:<5} {rate:>6} {n:>9} {s['schedule']['late']:>7} "
      f"{s['latency_ms']['p90']:>11.3f} {s['service_time_ms']['p90']:>11.3f} {(u + k) / n * 1e6:>8.1f}")
PY
    done
  done
done
