#!/usr/bin/env bash
# Peak memory of brink holding many WebSocket connections: Python's websockets echo server
# (bench/ws/echo.py) takes C connections that each ping every 5 s for D seconds;
# /usr/bin/time reports brink's peak RSS. The goal: 10,000 held connections under 64 MiB.
#
#   bash bench/ws_hold.sh [CONNS] [SECONDS]     (from the project root; default 10000 20)
#   BRINK=path/to/brink bash bench/ws_hold.sh ...
set -euo pipefail
C=${1:-10000}; D=${2:-20}
python3 -c "import websockets" 2>/dev/null || { echo "needs Python's websockets (pip install websockets)"; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)"; exit 2; }
ulimit -n 30000 2>/dev/null || true
BRINK=${BRINK:-}
[ -n "$BRINK" ] || { cargo build --release -q -p brink; BRINK=target/release/brink; }
PORT=18766
python3 bench/ws/echo.py $PORT 2>/dev/null & SRV=$!
out=$(mktemp -d)
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null; rm -rf "$out"' EXIT
sleep 1
/usr/bin/time -f "%M %U %S" -o "$out/time" "$BRINK" run ws://127.0.0.1:$PORT/ --hold -c "$C" \
  --every 5s -d "${D}s" --connect-timeout 10s --no-history -q --json "$out/r.json"
python3 - "$out/r.json" "$out/time" "$C" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); w = r["summary"]["websocket"]
rss, user, sysc = open(sys.argv[2]).read().split()
print(f"held {sys.argv[3]} connections: {w['upgrades']:,} upgraded, {w['unexpected_closes']} ended by the server, "
      f"{r['summary']['requests']:,} pings answered; brink peak RSS {int(rss) / 1024:.1f} MiB, CPU {float(user) + float(sysc):.2f}s")
PY
