#!/usr/bin/env bash
# Peak memory while holding many event streams: a Python asyncio server (bench/sse/hold_server.py)
# answers every request with an endless text/event-stream, one event a second per stream, and
# brink holds C of them for D seconds (`--hold --stream`: held for the run, bounded by their
# silence).
# /usr/bin/time reports brink's peak RSS; the result says how many events it read.
#
#   bash bench/sse_hold.sh [CONNS] [SECONDS]      (from the project root; default 10000 10)
set -euo pipefail
C=${1:-10000}; D=${2:-10}
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)"; exit 2; }
ulimit -n 30000 2>/dev/null || true
HERE=$(cd "$(dirname "$0")" && pwd)
BRINK=${BRINK:-}
[ -n "$BRINK" ] || { cargo build --release -q -p brink; BRINK=target/release/brink; }
PORT=18093
python3 "$HERE/sse/hold_server.py" $PORT & SRV=$!
out=$(mktemp -d)
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null; rm -rf "$out"' EXIT
sleep 1
/usr/bin/time -f "%M" -o "$out/time" "$BRINK" run http://127.0.0.1:$PORT/notify --hold --stream \
  -c "$C" -d "${D}s" --timeout 10s --no-history -q --json "$out/b.json" > "$out/out" 2>&1 || true
python3 - "$out" "$C" <<'PY'
import json, sys
d, c = sys.argv[1], int(sys.argv[2])
rss = int(open(f"{d}/time").read().split()[-1]) / 1024
s = json.load(open(f"{d}/b.json"))["summary"]
gap = (s.get("stream") or {}).get("event_gap_ms") or {}
st = s.get("stream") or {}
print(f"streams held {c} (open at the end: {st.get('held')}, reconnects {st.get('reconnects')}), "
      f"connections opened {s['connections_opened']}, events {st.get('events')}, "
      f"peak RSS {rss:.1f} MB, event gap p50 {gap.get('p50', 'n/a')} ms")
PY
