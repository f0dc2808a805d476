#!/usr/bin/env bash
# Instructions and system calls per call of the bridge alone (`mcp-bridge serve -- echo_server`,
# mcp-bench's HTTP client, 16 B sequential calls): counts that do not swing with the shared
# machine as latency does, so two builds can be compared on one run each.
#
#   benches/bridge_instructions.sh [BIN_DIR] [--bridge PATH] [--no-strace] [--child]
#
# BIN_DIR holds mcp-bench, mcp-bridge and examples/echo_server (default: target/release, built
# first); --bridge measures another mcp-bridge with them (e.g. main's, for a comparison).
# Instructions: valgrind's cachegrind on the bridge (user space only; the child runs natively).
# System calls: strace -c attached to the bridge's threads once it listens (the child, started
# before, is not traced). Each over runs of 500 and 1,500 calls; the difference divided by the
# calls between them leaves out startup and the handshake. --child: the instructions per call of
# the echo_server child too (cachegrind on the child, the bridge native), in
# `child_instructions_per_call` (the bridge speaks to it in the era it negotiates).
set -euo pipefail
cd "$(dirname "$0")/.."
D="" BR="" STRACE=1 CHILD=0
while [ $# -gt 0 ]; do
  case $1 in
    --bridge) BR=$(realpath "${2:?--bridge needs a path}"); shift 2 ;;
    --no-strace) STRACE=0; shift ;;
    --child) CHILD=1; shift ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) D=$(realpath "$1"); shift ;;
  esac
done
if [ -z "$D" ]; then
  cargo build --release --quiet --bin mcp-bench --bin mcp-bridge --example echo_server
  D=$(realpath "${CARGO_TARGET_DIR:-target}")/release
fi
BR=${BR:-$D/mcp-bridge} ECHO=$D/examples/echo_server
command -v valgrind >/dev/null || { echo "bridge_instructions.sh: needs valgrind" >&2; exit 1; }
[ $STRACE = 0 ] || command -v strace >/dev/null || { echo "bridge_instructions.sh: needs strace (or --no-strace)" >&2; exit 1; }
# Calls made by one mcp-bench run with --n N at concurrency 1: warm-up, then two measured rounds.
calls() { local w=$(($1 / 10)); [ $w -lt 10 ] && w=10; [ $w -gt 200 ] && w=200; echo $((2 * $1 + w)); }
. benches/processes.sh
# count N cachegrind|strace: the bridge's instructions or system calls over a run of N calls.
count() {
  local port=$((20000 + RANDOM % 10000)) log pid tracer=""
  log=$(mktemp)
  if [ "$2" = cachegrind ]; then
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
      "$BR" serve --listen "http://127.0.0.1:$port/mcp" -- "$ECHO" >/dev/null 2>"$log" &
  elif [ "$2" = child ]; then
    printf '#!/bin/sh\nexec valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null --log-file=%s %s "$@"\n' \
      "$log" "$ECHO" >"$WORK/child"
    chmod +x "$WORK/child"
    "$BR" serve --listen "http://127.0.0.1:$port/mcp" -- "$WORK/child" >/dev/null 2>&1 &
  else
    "$BR" serve --listen "http://127.0.0.1:$port/mcp" -- "$ECHO" >/dev/null 2>&1 &
  fi
  pid=$!
  wait_listening "$pid" "$port" || { echo "bridge_instructions.sh: the bridge did not listen" >&2; exit 1; }
  local url=http://127.0.0.1:$port/mcp tool
  tool=$("$BR" tools --json --url "$url" 2>/dev/null |
    python3 -c 'import json, sys; print([t["name"] for t in json.load(sys.stdin) if t["name"].endswith("echo")][0])')
  if [ "$2" = strace ]; then
    strace -f -c -o "$log" -p "$pid" 2>/dev/null &
    tracer=$!
    sleep 1 # strace attaches to every thread before the first call
  fi
  "$D/mcp-bench" --http "$url" --tool "$tool" --sizes 16 --concurrency 1 --n "$1" --startup-runs 0 >/dev/null 2>&1
  [ -z "$tracer" ] || { kill -INT "$tracer"; wait "$tracer" 2>/dev/null || true; }
  kill -INT "$pid"; wait "$pid" 2>/dev/null || true
  if [ "$2" = cachegrind ] || [ "$2" = child ]; then
    grep -o 'I *refs: *[0-9,]*' "$log" | tr -dc '0-9'
  else
    awk '$NF == "total" {print $4}' "$log"
  fi
  rm -f "$log"
}
between=$(($(calls 1500) - $(calls 500)))
i1=$(count 500 cachegrind) i2=$(count 1500 cachegrind)
syscalls=null
if [ $STRACE = 1 ]; then
  s1=$(count 500 strace) s2=$(count 1500 strace)
  syscalls=$(python3 -c "print(round(($s2 - $s1) / $between, 2))")
fi
child=null
if [ $CHILD = 1 ]; then
  c1=$(count 500 child) c2=$(count 1500 child)
  child=$(((c2 - c1) / between))
fi
echo "{\"payload_bytes\":16,\"concurrency\":1,\"bridge_instructions_per_call\":$(((i2 - i1) / between)),\"bridge_syscalls_per_call\":$syscalls,\"child_instructions_per_call\":$child}"
