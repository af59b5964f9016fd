#!/usr/bin/env bash
# Peak memory at many keep-alive connections, brink beside wrk: each drives a one-worker nginx
# (bench/nginx-10k.conf) with C connections for D seconds; /usr/bin/time reports peak RSS.
#
#   bash bench/memory.sh [CONNS] [SECONDS] [TOOLS...]      (from the project root; default 10000 10 brink wrk)
#   BRINK=path/to/brink bash bench/memory.sh ...           (another brink binary, not rebuilt)
set -euo pipefail
C=${1:-10000}; D=${2:-10}; shift $(( $# < 2 ? $# : 2 ))
TOOLS=${*:-"brink wrk"}
URL=http://127.0.0.1:18082/
HERE=$(cd "$(dirname "$0")" && pwd)
command -v nginx >/dev/null && command -v wrk >/dev/null || { echo "needs nginx and wrk (apt-get install nginx-light wrk)"; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)"; exit 2; }
ulimit -n 30000 2>/dev/null || true
BRINK=${BRINK:-}
[ -n "$BRINK" ] || { cargo build --release -q -p brink; BRINK=target/release/brink; }
nginx -c "$HERE/nginx-10k.conf" & NG=$!
trap 'kill $NG 2>/dev/null; wait $NG 2>/dev/null' EXIT
sleep 0.5
out=$(mktemp -d)
printf "%-7s %8s %10s %10s %8s\n" tool conns requests req/s rss_mb
for t in $TOOLS; do
  case $t in
    wrk)   cmd=(wrk -t2 -c"$C" -d"${D}s" $URL);;
    brink) cmd=("$BRINK" run $URL -c "$C" -d "${D}s" --json "$out/b.json");;
    *) echo "unknown tool $t"; continue;;
  esac
  /usr/bin/time -f "%M" -o "$out/time" "${cmd[@]}" > "$out/out" 2>&1 || { echo "$t failed: $(tail -2 "$out/out")"; continue; }
  case $t in
    wrk)   req=$(grep -oE '^ *[0-9]+ requests in' "$out/out" | grep -oE '[0-9]+' | head -1);;
    brink) req=$(python3 -c "import json;print(json.load(open('$out/b.json'))['summary']['requests'])");;
  esac
  python3 -c "print(f'{\"$t\":<7} {$C:>8} {int(\"$req\"):>10} {int(\"$req\")/$D:>10.0f} {int(open(\"$out/time\").read().split()[-1])/1024:>8.1f}')"
done
rm -rf "$out"
