#!/usr/bin/env bash
# What a distributed run costs: brink as one process beside brink --workers N on the same CPU,
# driving the same one-worker nginx (pinned to CPU 1; the generator and its workers to CPU 0).
# With the same CPU the two should send about as many requests per CPU-second: splitting the
# load must not cost efficiency. /usr/bin/time counts the worker processes (children). The
# third row is one process with N threads: N event loops sharing a CPU cost the same way.
#
#   bash bench/workers.sh [CONNS] [SECONDS] [N]      (from the project root; default 50 10 2)
set -euo pipefail
C=${1:-50}; D=${2:-10}; N=${3:-2}
URL=http://127.0.0.1:18082/
HERE=$(cd "$(dirname "$0")" && pwd)
command -v nginx >/dev/null || { echo "needs nginx (apt-get install nginx-light)"; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)"; exit 2; }
cargo build --release -q -p brink
taskset -c 1 nginx -c "$HERE/nginx-10k.conf" & NG=$!
trap 'kill $NG 2>/dev/null; wait $NG 2>/dev/null' EXIT
sleep 0.5
out=$(mktemp -d)
printf "%-12s %10s %10s %8s %12s\n" how requests req/s cpu_s req/cpu_s
for how in one workers threads; do
  case $how in
    one) extra=(--threads 1);;
    workers) extra=(--threads 1 --workers "$N");;
    threads) extra=(--threads "$N");;
  esac
  /usr/bin/time -f "%U %S" -o "$out/time" taskset -c 0 target/release/brink run $URL -c "$C" \
    -d "${D}s" --no-history -q --json "$out/r.json" "${extra[@]}"
  read -r user sys < "$out/time"
  python3 - "$out/r.json" "$user" "$sys" "$how" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); cpu = float(sys.argv[2]) + float(sys.argv[3])
s = r["summary"]; n = s["requests"]
print(f"{sys.argv[4]:<12} {n:>10,} {s['rps']:>10,.0f} {cpu:>8.2f} {n / cpu:>12,.0f}")
PY
done
