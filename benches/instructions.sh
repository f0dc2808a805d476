#!/usr/bin/env bash
# Instructions per call of our HTTP client and server (valgrind's cachegrind), for one cell:
# a count that does not swing with the machine as calls/s and CPU time do here, so two builds
# can be compared on one run each.
#
#   benches/instructions.sh [BIN_DIR] [sessions|stateless] [SIZE] [CONCURRENCY] [ERA]
#
# ERA: the client's era (`mcp-bench --era`): legacy (the default) or 2026-07-28.
# BIN_DIR holds mcp-bench and examples/echo_server (default: target/release, built first).
# Each side is counted alone (the other runs natively), over two runs of 500 and 1500 calls;
# the difference divided by the calls between them leaves out startup. User-space instructions
# only: system calls and the kernel's work are not in the count.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${1:-}" ]; then
  cargo build --release --quiet --bin mcp-bench --example echo_server
  D=$(realpath "${CARGO_TARGET_DIR:-target}")/release
else
  D=$(realpath "$1")
fi
MODE=${2:-sessions}; SIZE=${3:-16}; CONC=${4:-1}; ERA=${5:-legacy}
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind" >&2; exit 1; }
flag=$([ "$MODE" = stateless ] && echo --stateless || true)
# Calls made by one mcp-bench run with --n N at concurrency 1: warm-up, then two measured rounds.
calls() { local w=$(($1 / 10)); [ $w -lt 10 ] && w=10; [ $w -gt 200 ] && w=200; echo $((2 * $1 + w)); }
refs() { grep -o 'I *refs: *[0-9,]*' "$1" | tr -dc '0-9'; }
# Waits until the server listens on $1 (a server under valgrind takes seconds to start on a busy
# machine: a fixed sleep made the first connection fail there).
listening() { for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
client_refs() {
  local port=$((20000 + RANDOM % 10000)) log; log=$(mktemp)
  "$D/examples/echo_server" --http 127.0.0.1:$port $flag 2>/dev/null & local pid=$!
  listening $port
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$D/mcp-bench" \
    --http http://127.0.0.1:$port/mcp --sizes "$SIZE" --concurrency "$CONC" --n "$1" --startup-runs 0 \
    --era "$ERA" > /dev/null 2> "$log"
  kill $pid; wait $pid 2>/dev/null || true
  refs "$log"; rm -f "$log"
}
server_refs() {
  local port=$((20000 + RANDOM % 10000)) log; log=$(mktemp)
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$D/examples/echo_server" --http 127.0.0.1:$port $flag > /dev/null 2> "$log" & local pid=$!
  listening $port
  "$D/mcp-bench" --http http://127.0.0.1:$port/mcp --sizes "$SIZE" --concurrency "$CONC" --n "$1" \
    --startup-runs 0 --era "$ERA" > /dev/null
  kill -INT $pid; wait $pid 2>/dev/null || true
  refs "$log"; rm -f "$log"
}
c1=$(client_refs 500); c2=$(client_refs 1500); s1=$(server_refs 500); s2=$(server_refs 1500)
between=$(( $(calls 1500) - $(calls 500) ))
echo "{\"era\":\"$ERA\",\"mode\":\"$MODE\",\"payload_bytes\":$SIZE,\"concurrency\":$CONC,\"client_instructions_per_call\":$(( (c2 - c1) / between )),\"server_instructions_per_call\":$(( (s2 - s1) / between ))}"
