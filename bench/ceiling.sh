#!/usr/bin/env bash
# The efficiency ceiling beside brink and wrk, alternating in one run: the bench nginx pinned to
# CPU 1, each client to CPU 0 for D seconds with C connections, N rounds. "epoll" and "uring"
# are crates/engine/examples/ceiling.rs: loops that only do the I/O every client must do, so
# their requests per CPU-second bound what any generator can reach against this server.
#
#   bash bench/ceiling.sh [ROUNDS] [SECONDS] [CONNS]      (from the project root)
set -euo pipefail
N=${1:-4}; D=${2:-5}; C=${3:-50}
URL=http://127.0.0.1:18081/
CONF=$(cd "$(dirname "$0")/../../shared/bench" 2>/dev/null && pwd)/nginx.conf
[ -f "$CONF" ] || { echo "bench nginx config not found at $CONF"; exit 2; }
command -v nginx >/dev/null && command -v wrk >/dev/null || { echo "needs nginx and wrk (apt-get install nginx-light wrk)"; exit 2; }
cargo build --release -q -p brink
cargo build --release -q -p engine --example ceiling
taskset -c 1 nginx -c "$CONF" & NG=$!
trap 'kill $NG 2>/dev/null; wait $NG 2>/dev/null' EXIT
sleep 0.5
out=$(mktemp -d)
for i in $(seq "$N"); do
  for t in epoll uring brink wrk; do
    case $t in
      wrk)   cmd=(wrk -t1 -c"$C" -d"${D}s" $URL);;
      brink) cmd=(target/release/brink run $URL -c "$C" -d "${D}s" --json "$out/b.json");;
      *)     cmd=(target/release/examples/ceiling "$t" "$C" "$D");;
    esac
    /usr/bin/time -f "%U %S" -o "$out/time" taskset -c 0 "${cmd[@]}" > "$out/out" 2>&1 || { echo "$t failed: $(tail -1 "$out/out")"; continue; }
    case $t in
      wrk)   req=$(grep -oE '^ *[0-9]+ requests in' "$out/out" | grep -oE '[0-9]+' | head -1);;
      brink) req=$(python3 -c "import json;print(json.load(open('$out/b.json'))['summary']['requests'])");;
      *)     req=$(grep -oE '^[0-9]+' "$out/out");;
    esac
    read -r u s < "$out/time"
    echo "$t $req $u $s"
  done
done | tee "$out/log"
python3 - "$out/log" <<'P'
import statistics as st, sys
by = {}
for line in open(sys.argv[1]):
    t, req, u, s = line.split()
    by.setdefault(t, []).append(int(req) / (float(u) + float(s)))
w = by.get("wrk")
print(f"{'client':<7} {'median req/cpu_s':>17} {'x wrk (paired median)':>22}")
for t, v in by.items():
    ratio = f"{st.median([a / b for a, b in zip(v, w)]):.2f}" if w else "-"
    print(f"{t:<7} {st.median(v):>17.0f} {ratio:>22}")
P
rm -rf "$out"
