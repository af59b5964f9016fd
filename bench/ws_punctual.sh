#!/usr/bin/env bash
# The open model over WebSocket: messages at fixed intended times against the gorilla/websocket
# echo server (tests/ws/goecho, pinned to CPU 1; brink pinned to CPU 0), at each RATE for D
# seconds. Goals: at most 1% of messages sent late, and p90 from the intended send within
# 0.2 ms of p90 round trip (from the actual send).
#
#   bash bench/ws_punctual.sh [SECONDS] [RATES...]     (from the project root; default 5 1000 20000)
set -euo pipefail
D=${1:-5}; shift $(( $# > 0 ? 1 : 0 ))
RATES=${*:-"1000 20000"}
cargo build --release -q -p brink
ECHO=$(bash tests/ws/goecho.sh)
PORT=18768
taskset -c 1 "$ECHO" -port $PORT > /dev/null & SRV=$!
out=$(mktemp -d)
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null; rm -rf "$out"' EXIT
sleep 0.5
printf "%8s %9s %7s %8s %12s %12s\n" rate messages late% lag_ms p90_intended p90_sent
for r in $RATES; do
  taskset -c 0 target/release/brink run ws://127.0.0.1:$PORT/ --message hello --rate "$r" -d "${D}s" \
    --no-history -q --json "$out/r.json"
  python3 - "$out/r.json" "$r" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]; sc = s["schedule"]
print(f"{sys.argv[2]:>8} {s['requests']:>9} {100 * sc['late'] / max(sc['intended'], 1):>7.2f} {sc['max_lag_ms']:>8.2f} "
      f"{s['latency_ms']['p90']:>12.3f} {s['service_time_ms']['p90']:>12.3f}")
PY
done
