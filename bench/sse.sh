#!/usr/bin/env bash
# Server-Sent Events read per generator CPU-second, side by side and alternating in one run: a
# one-worker nginx (pinned to CPU 1) serves a 64 KiB text/event-stream file of small events
# (`data: {"t":N}`), and each client, pinned to CPU 0 with C keep-alive connections, reads it
# over and over. "ceiling" is crates/engine/examples/sse_ceiling.rs, a loop that only reads
# the answers and splits them into lines (what any reader of a stream must do); "brink" is
# `brink run --stream` (every event parsed as the HTML standard reads them, timed, its gaps
# in HDR histograms); "brink-llm" is `brink run --llm` on a file of OpenAI-style token chunks
# (each event's JSON read too, TTFT/ITL/TPOT recorded; GET with no body, as nginx serves files).
#
#   bash bench/sse.sh [ROUNDS] [SECONDS] [CONNS]      (from the project root; default 3 5 20)
set -euo pipefail
N=${1:-3}; D=${2:-5}; C=${3:-20}
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)"; exit 2; }
command -v nginx >/dev/null || { echo "needs nginx (apt-get install nginx-light)"; exit 2; }
cargo build --release -q -p brink
cargo build --release -q -p engine --example sse_ceiling
PORT=18090
out=$(mktemp -d)
python3 - "$out" <<'PY'
import sys
d = sys.argv[1]
ev, n = [], 0
while sum(map(len, ev)) < 64 * 1024:
    ev.append('data: {"t":%d}\n\n' % n); n += 1
open(f"{d}/events", "w").write("".join(ev))
tok, n = [], 0
while sum(map(len, tok)) < 64 * 1024:
    tok.append('data: {"choices":[{"index":0,"delta":{"content":"t%d "}}]}\n\n' % n); n += 1
tok.append('data: {"choices":[],"usage":{"completion_tokens":%d}}\n\ndata: [DONE]\n\n' % n)
open(f"{d}/tokens", "w").write("".join(tok))
PY
# nginx's worker (nobody) reads the files.
chmod 755 "$out"; chmod 644 "$out/events" "$out/tokens"
cat > "$out/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $out/nginx.pid;
error_log /dev/null crit;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    default_type text/event-stream;
    server {
        listen 127.0.0.1:$PORT;
        root $out;
        location = /v1/completions { alias $out/tokens; }
    }
}
CONF
taskset -c 1 nginx -c "$out/nginx.conf" & NG=$!
trap 'kill $NG 2>/dev/null; wait $NG 2>/dev/null; rm -rf "$out"' EXIT
sleep 0.5
printf "%-10s %12s %8s %16s\n" tool events cpu_s events_per_cpu_s
for i in $(seq "$N"); do
  for t in ceiling brink brink-llm; do
    case $t in
      ceiling)   cmd=(target/release/examples/sse_ceiling "$C" "$D" 127.0.0.1:$PORT /events);;
      brink)     cmd=(target/release/brink run http://127.0.0.1:$PORT/events --stream -c "$C" -d "${D}s" --no-history -q --json "$out/b.json");;
      brink-llm) cmd=(target/release/brink run http://127.0.0.1:$PORT/v1/completions --llm -m GET -b '' -c "$C" -d "${D}s" --no-history -q --json "$out/b.json");;
    esac
    /usr/bin/time -f "%U %S" -o "$out/time" taskset -c 0 "${cmd[@]}" > "$out/out" 2>&1 || { echo "$t failed: $(tail -2 "$out/out")"; continue; }
    case $t in
      ceiling) n=$(grep -oE '^[0-9]+ events' "$out/out" | grep -oE '[0-9]+');;
      *)       n=$(python3 -c "import json;print(json.load(open('$out/b.json'))['summary']['stream']['events'])");;
    esac
    python3 -c "
u, s = map(float, open('$out/time').read().split())
print(f'{\"$t\":<10} {$n:>12} {u + s:>8.2f} {$n / (u + s):>16,.0f}')"
  done
done
