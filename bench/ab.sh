#!/usr/bin/env bash
# Two brink binaries side by side against the same bench nginx, alternating, so a change to
# the engine is measured against its parent in one run rather than across runs: each round
# runs A then B (then B then A the next round), each pinned to CPU 0 for D seconds with C
# connections, nginx pinned to CPU 1. Prints requests per generator CPU-second per binary
# and the paired median ratio B/A.
#
#   bash bench/ab.sh A_BINARY B_BINARY [h1|h2|ws|open] [ROUNDS] [SECONDS] [CONNS]
#
# h2 drives the h2c nginx with -c 200 over CONNS connections and one thread; ws the gorilla
# echo server (tests/ws/goecho) with a message per exchange; open the bench nginx in the open
# model at 20,000 requests/s over a pool of CONNS (also printed: requests sent late, over
# 1 ms after their intended instant). Needs nginx.
set -euo pipefail
A=$1; B=$2; MODE=${3:-h1}; N=${4:-6}; D=${5:-5}; C=${6:-50}
HERE=$(cd "$(dirname "$0")" && pwd)
case $MODE in
  h1) CONF=$(cd "$HERE/../../shared/bench" 2>/dev/null && pwd)/nginx.conf; URL=http://127.0.0.1:18081/
      args=(-c "$C");;
  h2) CONF=$HERE/nginx-h2c.conf; URL=http://127.0.0.1:18097/
      args=(--http2 -c 200 --connections "$C" --threads 1);;
  ws) URL=ws://127.0.0.1:18767/; args=(--message hello -c "$C");;
  open) CONF=$(cd "$HERE/../../shared/bench" 2>/dev/null && pwd)/nginx.conf; URL=http://127.0.0.1:18081/
      args=(--rate 20000 -c "$C" --threads 1);;
  *) echo "mode: h1, h2, ws or open"; exit 2;;
esac
if [ "$MODE" = ws ]; then
  ECHO=$(bash "$HERE/../tests/ws/goecho.sh")
  taskset -c 1 "$ECHO" -port 18767 > /dev/null & NG=$!
else
  [ -f "$CONF" ] || { echo "bench nginx config not found at $CONF"; exit 2; }
  taskset -c 1 nginx -c "$CONF" & NG=$!
fi
trap 'kill $NG 2>/dev/null; wait $NG 2>/dev/null' EXIT
sleep 0.5
out=$(mktemp -d)
for i in $(seq "$N"); do
  if (( i % 2 )); then order="A B"; else order="B A"; fi
  for t in $order; do
    bin=$A; [ "$t" = B ] && bin=$B
    /usr/bin/time -f "%U %S" -o "$out/time" taskset -c 0 "$bin" run "$URL" "${args[@]}" \
      -d "${D}s" -q --no-history --json "$out/r.json" > /dev/null 2>&1 || true
    read -r req late < <(python3 -c "import json;s=json.load(open('$out/r.json'))['summary'];print(s['ok'], (s.get('schedule') or {}).get('late') or 0)")
    read -r u s < "$out/time"
    echo "$i $t $req $u $s $late"
  done
done | tee "$out/log"
python3 - "$out/log" <<'P'
import statistics as st, sys
by = {"A": {}, "B": {}}
late = {"A": [], "B": []}
for line in open(sys.argv[1]):
    i, t, req, u, s, l = line.split()
    by[t][i] = int(req) / (float(u) + float(s))
    late[t].append(int(l))
a, b = by["A"], by["B"]
print(f"A median {st.median(a.values()):.0f} req/cpu_s, B median {st.median(b.values()):.0f}")
print(f"late (over 1 ms): A {late['A']}, B {late['B']}")
print(f"B/A paired median {st.median([b[i] / a[i] for i in a if i in b]):.3f}")
P
rm -rf "$out"
