#!/usr/bin/env bash
# WebSocket echo messages per generator CPU-second, side by side and alternating in one run:
# the gorilla/websocket echo server (tests/ws/goecho) pinned to CPU 1, each client pinned to
# CPU 0 with C connections. "ceiling" is crates/engine/examples/ws_ceiling.rs, a loop that
# only frames, masks, sends and finds each answer's end: what any generator can reach here.
# "artillery" is Artillery's WebSocket engine (npm, installed once into ~/.cache/brink-ci),
# each message sent and its echo awaited (a capture), C virtual users of 4,000 messages.
#
#   bash bench/ws.sh [ROUNDS] [SECONDS] [CONNS]      (from the project root; default 3 5 50)
set -euo pipefail
N=${1:-3}; D=${2:-5}; C=${3:-50}
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)"; exit 2; }
command -v npm >/dev/null || { echo "needs npm (apt-get install npm) for Artillery"; exit 2; }
ART=$HOME/.cache/brink-ci/artillery
if [ ! -x "$ART/node_modules/.bin/artillery" ]; then
  mkdir -p "$ART"
  # Playwright comes with Artillery; no browser is ever downloaded.
  (cd "$ART" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --silent --no-audit --no-fund artillery@2) >&2
fi
cargo build --release -q -p brink
cargo build --release -q -p engine --example ws_ceiling
ECHO=$(bash tests/ws/goecho.sh)
PORT=18767
taskset -c 1 "$ECHO" -port $PORT > /dev/null & SRV=$!
out=$(mktemp -d)
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null; rm -rf "$out"' EXIT
sleep 0.5
cat > "$out/ws.yml" <<YML
config:
  target: "ws://127.0.0.1:$PORT"
  phases:
    - duration: 1
      arrivalCount: $C
scenarios:
  - engine: ws
    flow:
      - loop:
          - send:
              payload: '{"m":1}'
              capture:
                json: "\$.m"
                as: "m"
        count: 4000
YML
printf "%-10s %10s %8s %14s\n" tool messages cpu_s msgs_per_cpu_s
for i in $(seq "$N"); do
  for t in ceiling brink artillery; do
    case $t in
      ceiling)   cmd=(target/release/examples/ws_ceiling "$C" "$D" 127.0.0.1:$PORT);;
      brink)     cmd=(target/release/brink run ws://127.0.0.1:$PORT/ --message hello -c "$C" -d "${D}s" --no-history -q --json "$out/b.json");;
      artillery) cmd=("$ART/node_modules/.bin/artillery" run --output "$out/a.json" "$out/ws.yml");;
    esac
    /usr/bin/time -f "%U %S" -o "$out/time" taskset -c 0 "${cmd[@]}" > "$out/out" 2>&1 || { echo "$t failed: $(tail -2 "$out/out")"; continue; }
    case $t in
      ceiling)   n=$(grep -oE '^[0-9]+ messages' "$out/out" | grep -oE '[0-9]+');;
      brink)     n=$(python3 -c "import json;print(json.load(open('$out/b.json'))['summary']['ok'])");;
      artillery) n=$(python3 -c "import json;print(json.load(open('$out/a.json'))['aggregate']['counters'].get('websocket.messages_received', 0))");;
    esac
    python3 -c "
u, s = map(float, open('$out/time').read().split())
print(f'{\"$t\":<10} {$n:>10} {u + s:>8.2f} {$n / (u + s):>14,.0f}')"
  done
done
