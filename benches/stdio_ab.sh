#!/usr/bin/env bash
# Builds of our stdio pair against each other and against the floor pair, in alternating rounds:
# each round runs every build's `mcp-bench --stdio echo_server` and then `floor-bench --stdio
# floor-echo-server`, one after the other, so each ratio compares runs taken seconds apart in
# the same machine mode (this VM moves between a fast and a slow one). Every round's ratios
# are printed, then their medians.
#
#   benches/stdio_ab.sh [--rounds R] [--n N] [--sizes S] [--out FILE] NAME=BIN_DIR [NAME=BIN_DIR ...]
#
# NAME=BIN_DIR  a build: BIN_DIR holds mcp-bench and examples/echo_server (a release target
#               directory). Ratios are each build over the floor and each build over the first.
# --rounds R    rounds (default 5)
# --n N         calls per cell (default 5000); concurrency 1 and 16
# --sizes S     payload sizes (default 16,65536)
# --out FILE    one line per run: round, build, size, in flight, calls/s, p50 µs
#               (default benches/results/stdio-ab-YYYY-MM-DD.txt)
#
# The floor pair (blocking reads and writes, one thread, no runtime) comes from the rmcp peer
# project, found in $RMCP_PEER_BIN (default /tmp/rmcp-peer/release; see benches/matrix.sh for
# how to build it). Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=5 N=5000 SIZES=16,65536 OUT="" BUILDS=()
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=${2:?--rounds needs a number}; shift 2 ;;
    --n) N=${2:?--n needs a number}; shift 2 ;;
    --sizes) SIZES=${2:?--sizes needs a list}; shift 2 ;;
    --out) OUT=${2:?--out needs a file}; shift 2 ;;
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *=*) BUILDS+=("$1"); shift ;;
    *) echo "stdio_ab.sh: unknown argument $1 (builds are NAME=BIN_DIR)" >&2; exit 2 ;;
  esac
done
[ ${#BUILDS[@]} -gt 0 ] || { echo "stdio_ab.sh: name at least one build, NAME=BIN_DIR" >&2; exit 2; }
P=${RMCP_PEER_BIN:-/tmp/rmcp-peer/release}
for b in floor-bench floor-echo-server; do
  [ -x "$P/$b" ] || { echo "stdio_ab.sh: $P/$b missing (see benches/matrix.sh)" >&2; exit 1; }
done
for build in "${BUILDS[@]}"; do
  dir=${build#*=}
  for b in mcp-bench examples/echo_server; do
    [ -x "$dir/$b" ] || { echo "stdio_ab.sh: $dir/$b missing" >&2; exit 1; }
  done
done
OUT=${OUT:-benches/results/stdio-ab-$(date +%F).txt}
mkdir -p "$(dirname "$OUT")"
: > "$OUT"

# mcp-bench's and floor-bench's JSON lines of the echo scenario, as one line each.
rows() {
  python3 -c '
import json, sys
for line in sys.stdin:
    if not line.startswith("{"):
        continue
    d = json.loads(line)
    if d.get("scenario") != "echo":
        continue
    print(sys.argv[1], sys.argv[2], d.get("payload_bytes", d.get("size")), d["concurrency"], d["calls_per_s"], d["p50_us"])
' "$1" "$2"
}

for r in $(seq "$ROUNDS"); do
  for build in "${BUILDS[@]}"; do
    name=${build%%=*} dir=${build#*=}
    "$dir/mcp-bench" --stdio "$dir/examples/echo_server" --n "$N" --concurrency 16 --sizes "$SIZES" \
      --startup-runs 1 2>/dev/null | rows "$r" "$name" >> "$OUT"
  done
  "$P/floor-bench" --stdio "$P/floor-echo-server" --n "$N" --concurrency 16 --sizes "$SIZES" 2>/dev/null \
    | rows "$r" floor >> "$OUT"
done

python3 - "$OUT" "${BUILDS[@]%%=*}" <<'PY'
import statistics, sys
path, names = sys.argv[1], sys.argv[2:]
calls = {}
for line in open(path):
    r, build, size, conc, cps, _p50 = line.split()
    calls[(r, build, size, conc)] = float(cps)
rounds = sorted({k[0] for k in calls}, key=int)
cells = sorted({(k[2], k[3]) for k in calls}, key=lambda c: (int(c[0]), int(c[1])))

def ratios(a, b, size, conc):
    return [calls[(r, a, size, conc)] / calls[(r, b, size, conc)]
            for r in rounds if (r, a, size, conc) in calls and (r, b, size, conc) in calls]

def show(v):
    if not v:
        return "(not measured)"
    return " ".join(f"{x:.2f}" for x in v) + (f"  (median {statistics.median(v):.2f})" if v else "")

print(f"{path}: {len(rounds)} rounds; ratios of calls/s per round")
for size, conc in cells:
    print(f"{size} B x {conc}:")
    for name in names:
        print(f"  {name} / floor: {show(ratios(name, 'floor', size, conc))}")
    for name in names[1:]:
        print(f"  {name} / {names[0]}: {show(ratios(name, names[0], size, conc))}")
PY
