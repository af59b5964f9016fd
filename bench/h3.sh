#!/usr/bin/env bash
# HTTP/3, brink beside oha and the quinn ceiling, in one run: each drives the bench HTTP/3
# server (crates/engine/examples/h3_server.rs: quinn answering every request with the same
# precomputed answer, pinned to CPU 1) with C requests in flight over CONNS connections for D
# seconds, the generator pinned to CPU 0 (brink on one thread). "ceiling" is
# crates/engine/examples/h3_ceiling.rs, a loop on quinn that does only what every HTTP/3
# client must over it (no QPACK or frame decoding): what a generator on brink's QUIC library
# can reach against this server. Prints per tool: requests, req/s, generator CPU seconds,
# requests per generator CPU-second, peak RSS; then medians and each tool's paired ratio to
# oha. Runs ROUNDS rounds, alternating.
#
#   bash bench/h3.sh [CONCURRENCY] [SECONDS] [CONNECTIONS] [ROUNDS]   (from the project root)
#
# oha with HTTP/3: `cargo install oha --features http3 --root ~/.cache/brink-peers/cargo-h3`
# (or set OHA); without it the table has brink and the ceiling only.
set -euo pipefail
C=${1:-200}; D=${2:-5}; CONNS=${3:-4}; ROUNDS=${4:-3}
BRINK=${BRINK:-target/release/brink}
OHA=${OHA:-$HOME/.cache/brink-peers/cargo-h3/bin/oha}
PORT=18443
URL=https://127.0.0.1:$PORT/
[ -x "$BRINK" ] || cargo build --release -q -p brink
cargo build --release -q -p engine --example h3_ceiling --example h3_server
# (oha lingers some 30 s after its run: the server outlives every round and is stopped on exit)
taskset -c 1 target/release/examples/h3_server $PORT 3600 & SRV=$!
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null' EXIT
sleep 0.5
# Measure the bench server, never whatever else holds the port (a stray caddy did once).
bound() { kill -0 "$1" 2>/dev/null && { ! command -v ss >/dev/null || ss -Hulpn "sport = :$2" | grep -q "pid=$1,"; }; }
bound $SRV $PORT || { echo "the bench HTTP/3 server does not hold UDP port $PORT (taken? ss -ulpn 'sport = :$PORT')" >&2; exit 1; }
tools="brink ceiling"; [ -x "$OHA" ] && tools="brink oha ceiling"
out=$(mktemp -d)
run() { local name=$1; shift; /usr/bin/time -f "%U %S %M" -o "$out/$name.time" taskset -c 0 "$@" > "$out/$name.out" 2>&1; }
printf "%-7s %10s %10s %8s %14s %8s\n" tool requests req/s cpu_s req/cpu_s rss_mb
for round in $(seq "$ROUNDS"); do
  for t in $tools; do
    case $t in
      brink)   run brink "$BRINK" run "$URL" --http3 -k -c "$C" --connections "$CONNS" -d "${D}s" \
                 --threads 1 -q --no-history --json "$out/brink.json"
               n=$(python3 -c "import json;print(json.load(open('$out/brink.json'))['summary']['ok'])");;
      # oha waits some 30 s for its connections after -z (its CPU time is not counting
      # then), once in a while for ever: ended 45 s after its run, that round has no oha.
      oha)     run oha timeout -s INT -k 5 $((D + 40)) "$OHA" --http-version 3 --insecure --no-tui -c "$CONNS" -p $((C / CONNS)) -z "${D}s" "$URL" || true
               n=$(sed -n 's/^ *\[200\] \([0-9]*\) responses.*/\1/p' "$out/oha.out");;
      ceiling) run ceiling target/release/examples/h3_ceiling "$CONNS" $((C / CONNS)) "$D" 127.0.0.1:$PORT
               n=$(grep -oE '^[0-9]+' "$out/ceiling.out");;
    esac
    [ -n "$n" ] || { echo "$t gave no count this round: $(tail -1 "$out/$t.out")"; continue; }
    read -r u s m < "$out/$t.time"
    python3 -c "
n,u,s,m,d=$n,$u,$s,$m,$D
cpu=u+s
print(f'{\"$t\":<7} {n:>10} {n/d:>10.0f} {cpu:>8.2f} {n/cpu if cpu else 0:>14.0f} {m/1024:>8.1f}')" | tee -a "$out/log"
  done
done
python3 - "$out/log" <<'P'
import statistics as st, sys
by = {}
for line in open(sys.argv[1]):
    if "gave no count" in line:
        continue
    t, *_, per_cpu, _ = line.split()
    by.setdefault(t, []).append(float(per_cpu))
o = by.get("oha")
print(f"\n{'tool':<7} {'median req/cpu_s':>17} {'x oha (paired median)':>22}")
for t, v in by.items():
    ratio = f"{st.median([a / b for a, b in zip(v, o)]):.2f}" if o else "-"
    print(f"{t:<7} {st.median(v):>17.0f} {ratio:>22}")
P
rm -rf "$out"
