#!/usr/bin/env bash
# The coordinator of a distributed run on its own: N simulated workers (crates/fleet/examples/
# sim_workers.rs: they agree with any command, answer pings and send one realistic second per
# second, a 2,000-value latency histogram each, and load nothing) for S seconds; /usr/bin/time
# reports the coordinator's CPU (user + system) and peak RSS.
#
#   bash bench/coordinator.sh [N] [SECONDS]      (from the project root; default 100 30)
#   BRINK=path/to/brink bash bench/coordinator.sh ...   (another build, e.g. for an A/B)
#   WRAP="perf record -g" bash bench/coordinator.sh ...  (the coordinator under a profiler)
set -euo pipefail
N=${1:-100}; S=${2:-30}
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)"; exit 2; }
[ -n "${BRINK:-}" ] || cargo build --release -q -p brink
cargo build --release -q -p fleet --example sim_workers
ulimit -n 30000 2>/dev/null || true
out=$(mktemp -d)
TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$TOKEN" > "$out/token"
# The simulated workers on CPU 1, the coordinator on CPU 0 (where there are two), so one's
# load does not land in the other's figures.
PIN_SIM=(); PIN_BRINK=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then PIN_SIM=(taskset -c 1); PIN_BRINK=(taskset -c 0); fi
"${PIN_SIM[@]}" target/release/examples/sim_workers "$N" "$S" "$TOKEN" > "$out/addrs" & SIM=$!
trap 'kill $SIM 2>/dev/null; wait $SIM 2>/dev/null; rm -rf "$out"' EXIT
for _ in $(seq 50); do [ "$(wc -l < "$out/addrs")" -ge "$N" ] && break; sleep 0.1; done
args=()
while read -r a; do args+=(--worker "$a"); done < "$out/addrs"
# The simulated workers send no load: the target is never contacted.
/usr/bin/time -f "%U %S %e %M" -o "$out/time" "${PIN_BRINK[@]}" ${WRAP:-} ${BRINK:-target/release/brink} run http://127.0.0.1:9/ \
  --rate 1 -d "${S}s" --no-history -q --token-file "$out/token" "${args[@]}" --json "$out/r.json" || true
read -r user sys wall rss < "$out/time"
python3 - "$out/r.json" "$N" "$S" "$user" "$sys" "$wall" "$rss" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
n, s, user, sysc, wall, rss = int(sys.argv[2]), int(sys.argv[3]), *map(float, sys.argv[4:7]), int(sys.argv[7])
w = r["scenarios"][0]["workers"]
done = sum(1 for x in w if x["status"] == "done")
print(f"workers {n} x {s}s: {r['summary']['requests']:,} requests merged from {sum(x['seconds'] for x in w):,} seconds, {done} done")
print(f"coordinator CPU {user + sysc:.2f}s over {wall:.1f}s wall = {(user + sysc) / wall * 100:.1f}% of one core; peak RSS {rss / 1024:.1f} MiB")
PY
