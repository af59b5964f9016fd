#!/usr/bin/env bash
# Plain HTTP/2 with multiplexing, brink beside h2load and the h2 ceiling, in one run: each
# drives the bench nginx (h2c, pinned to CPU 1) with C requests in flight over CONNS
# connections for D seconds, the generator pinned to CPU 0 on one thread. "ceiling" is
# crates/engine/examples/h2_ceiling.rs, a loop that only does the I/O and framing every
# HTTP/2 client must (no HPACK decoding): what no generator can beat against this server.
# Prints per tool: requests, req/s, generator CPU seconds, requests per generator CPU-second,
# peak RSS. Runs ROUNDS rounds, alternating.
#
#   bash bench/h2.sh [CONCURRENCY] [SECONDS] [CONNECTIONS] [ROUNDS]   (from the project root)
#
# Needs nginx and h2load (apt-get install nginx-light nghttp2-client).
set -euo pipefail
C=${1:-200}; D=${2:-10}; CONNS=${3:-4}; ROUNDS=${4:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
BRINK=${BRINK:-target/release/brink}
URL=http://127.0.0.1:18097/
command -v nginx >/dev/null && command -v h2load >/dev/null || {
  echo "needs nginx and h2load (apt-get install nginx-light nghttp2-client)"; exit 2; }
[ -x "$BRINK" ] || cargo build --release -q -p brink
cargo build --release -q -p engine --example h2_ceiling
taskset -c 1 nginx -c "$HERE/nginx-h2c.conf" & NG=$!
trap 'kill $NG 2>/dev/null; wait $NG 2>/dev/null' EXIT
sleep 0.5
out=$(mktemp -d)
run() { local name=$1; shift; /usr/bin/time -f "%U %S %M" -o "$out/$name.time" taskset -c 0 "$@" > "$out/$name.out" 2>&1; }
printf "%-7s %10s %10s %8s %14s %8s\n" tool requests req/s cpu_s req/cpu_s rss_mb
for round in $(seq "$ROUNDS"); do
  for t in brink h2load ceiling; do
    case $t in
      brink)  run brink "$BRINK" run "$URL" --http2 -c "$C" --connections "$CONNS" -d "${D}s" \
                --threads 1 -q --no-history --json "$out/brink.json"
              n=$(python3 -c "import json;print(json.load(open('$out/brink.json'))['summary']['ok'])");;
      h2load) run h2load h2load -t 1 -c "$CONNS" -m $((C / CONNS)) -D "$D" "$URL"
              n=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' "$out/h2load.out");;
      ceiling) run ceiling target/release/examples/h2_ceiling "$CONNS" $((C / CONNS)) "$D"
              n=$(grep -oE '^[0-9]+' "$out/ceiling.out");;
    esac
    read -r u s m < "$out/$t.time"
    python3 -c "
n,u,s,m,d=$n,$u,$s,$m,$D
cpu=u+s
print(f'{\"$t\":<7} {n:>10} {n/d:>10.0f} {cpu:>8.2f} {n/cpu if cpu else 0:>14.0f} {m/1024:>8.1f}')"
  done
done
