#!/usr/bin/env bash
# What one call through a gateway costs the gateway and its stdio child together, in counts the
# kernel keeps: system calls (in all, and the few kinds a call makes), context switches (a
# thread put to sleep and woken: one per wakeup), futex calls (a thread woken by, or waiting
# for, another thread of the same process), CPU migrations, allocations (malloc, calloc and
# realloc of libc, which Rust's default allocator calls) and CPU time, per `tools/call echo` of
# 16 B sent by mcp-bench over Streamable HTTP, at 1 and at 16 calls in flight. The companion of
# per_call.sh (a stdio pair); counts do not swing with the VM's fast and slow modes as calls/s
# do. CPU time does, and is given for the shape only.
#
#   benches/per_call_gateway.sh [BIN_DIR] [--bridge PATH] [--floor] [--n1 N] [--n2 N]
#                               [--rounds R] [--no-alloc]
#
# BIN_DIR     holds mcp-bench, mcp-bridge, http-floor and examples/echo_server (default:
#             $CARGO_TARGET_DIR/release, built first)
# --bridge P  measure another mcp-bridge (e.g. main's, for a before and after on one run)
# --floor     measure the floor gateway (`http-floor gateway ADDR -- echo_server`) instead of
#             `mcp-bridge serve --listen URL -- echo_server`
# --n1, --n2  the two run lengths (default 2000 and 6000 calls): each figure is the difference
#             between the runs divided by the calls between them, which leaves the gateway's
#             start, the handshakes, the listing and mcp-bench's warm-up out. Runs at
#             concurrency 1 make 2N calls at 1; runs at 16 make N at 1, then N at 16: the cost
#             at 16 is what is left once the sequential part is taken away
# --rounds R  repeat the four runs R times (default 1), one JSON line per round and concurrency
# --no-alloc  leave the allocation counts out (they need uprobes on libc: root, and a kernel
#             with CONFIG_UPROBE_EVENTS; probes this script adds are removed when it ends)
#
# `perf stat` runs the gateway (its children inherit the counters) while mcp-bench, outside the
# count, drives it; the gateway is stopped after each run and perf's totals read.
set -euo pipefail
cd "$(dirname "$0")/.."
D="" BR="" FLOOR=0 N1=2000 N2=6000 ROUNDS=1 ALLOC=1
while [ $# -gt 0 ]; do
  case $1 in
    --bridge) BR=$(realpath "${2:?--bridge needs a path}"); shift 2 ;;
    --floor) FLOOR=1; shift ;;
    --n1) N1=${2:?--n1 needs a number}; shift 2 ;;
    --n2) N2=${2:?--n2 needs a number}; shift 2 ;;
    --rounds) ROUNDS=${2:?--rounds needs a number}; shift 2 ;;
    --no-alloc) ALLOC=0; shift ;;
    -h | --help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) D=$(realpath "$1"); shift ;;
  esac
done
if [ -z "$D" ]; then
  cargo build --release --quiet --bin mcp-bench --bin mcp-bridge --bin http-floor --example echo_server
  D=$(realpath "${CARGO_TARGET_DIR:-target}")/release
fi
BR=${BR:-$D/mcp-bridge} ECHO=$D/examples/echo_server
command -v perf >/dev/null || { echo "per_call_gateway.sh: needs perf" >&2; exit 1; }
. benches/processes.sh

EVENTS=raw_syscalls:sys_enter,context-switches,cpu-migrations,task-clock
KINDS=(futex read write writev recvfrom sendto epoll_wait sched_yield)
for k in "${KINDS[@]}"; do EVENTS+=,syscalls:sys_enter_$k; done
ADDED=()
if [ $ALLOC = 1 ]; then
  LIBC=$(ldd "$ECHO" | awk '/libc\.so/ {print $3}')
  PROBES=$(perf probe -l 2>/dev/null || true)
  for f in malloc calloc realloc; do
    if ! grep -q "probe_libc:$f " <<<"$PROBES"; then
      perf probe -q -x "$LIBC" --add "$f" || { echo "per_call_gateway.sh: cannot probe $f (try --no-alloc)" >&2; exit 1; }
      ADDED+=("probe_libc:$f")
    fi
    EVENTS+=,probe_libc:$f
  done
fi
remove_probes() { local p; for p in "${ADDED[@]}"; do perf probe -q --del "$p" || true; done; }
trap 'remove_probes; cleanup' EXIT

# The child runs under a perf stat of its own too (the outer one counts it as well), so that
# the gateway's own share is the difference.
CHILD=$WORK/child
printf '#!/bin/sh\nexec %s stat -x, -o %s -e %s -- %s "$@"\n' "$(command -v perf)" "$WORK/child.txt" "$EVENTS" "$ECHO" >"$CHILD"
chmod +x "$CHILD"

# counts N C: one run of the gateway under perf while mcp-bench makes its calls; prints
# "event=count" pairs of the gateway with its child, then "|", then the child's.
counts() {
  local port url tool out=$WORK/perf.txt i
  port=$(free_port)
  url=http://127.0.0.1:$port/mcp
  rm -f "$WORK/child.txt"
  if [ $FLOOR = 1 ]; then
    start "$WORK/gateway.log" perf stat -x, -o "$out" -e "$EVENTS" -- "$D/http-floor" gateway "127.0.0.1:$port" -- "$CHILD"
  else
    start "$WORK/gateway.log" perf stat -x, -o "$out" -e "$EVENTS" -- "$BR" serve --listen "$url" -- "$CHILD"
  fi
  local perf_pid=$STARTED
  wait_listening "$perf_pid" "$port" || { echo "per_call_gateway.sh: the gateway did not listen:" >&2; cat "$WORK/gateway.log" >&2; exit 1; }
  tool=echo
  [ $FLOOR = 1 ] || tool=$("$BR" tools --json --url "$url" 2>/dev/null |
    python3 -c 'import json, sys; print([t["name"] for t in json.load(sys.stdin) if t["name"].endswith("echo")][0])')
  "$D/mcp-bench" --http "$url" --tool "$tool" --sizes 16 --concurrency "$2" --n "$1" --startup-runs 0 >"$WORK/bench.jsonl" 2>&1 ||
    { echo "per_call_gateway.sh: mcp-bench failed:" >&2; tail -5 "$WORK/bench.jsonl" >&2; exit 1; }
  ! grep -q '"errors": *[1-9]' "$WORK/bench.jsonl" || { echo "per_call_gateway.sh: calls failed:" >&2; cat "$WORK/bench.jsonl" >&2; exit 1; }
  # The gateway is perf's child: stopping it ends perf, which writes its totals.
  kill -TERM "$(pgrep -P "$perf_pid" | head -1)"
  wait "$perf_pid" 2>/dev/null || true
  for i in $(seq 100); do grep -q task-clock "$WORK/child.txt" 2>/dev/null && break; sleep 0.1; done
  awk -F, '$3 != "" {print $3 "=" $1}' "$out" | tr '\n' ' '
  echo -n "| "
  awk -F, '$3 != "" {print $3 "=" $1}' "$WORK/child.txt" | tr '\n' ' '
}

for round in $(seq "$ROUNDS"); do
  r1a=$(counts "$N1" 1) r1b=$(counts "$N2" 1) r16a=$(counts "$N1" 16) r16b=$(counts "$N2" 16)
  python3 - "$([ $FLOOR = 1 ] && echo floor-gateway || basename "$BR")" "$round" "$N1" "$N2" "$r1a" "$r1b" "$r16a" "$r16b" <<'EOF'
import json, sys
gateway, rnd, n1, n2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def parse(s):
    out = {}
    for pair in s.split():
        k, _, v = pair.rpartition("=")
        try:
            out[k] = float(v)
        except ValueError:
            out[k] = float("nan")
    return out
runs = [s.split("|") for s in sys.argv[5:9]]
dn = n2 - n1
names = {"raw_syscalls:sys_enter": "syscalls", "context-switches": "context_switches",
         "cpu-migrations": "cpu_migrations", "task-clock": "cpu_us"}
def label(k):
    if k in names:
        return names[k]
    return k.split(":")[1].replace("sys_enter_", "") if ":" in k else k
def per_call(part):
    r1a, r1b, r16a, r16b = (parse(r[part]) for r in runs)
    seq = {k: (r1b[k] - r1a[k]) / (2 * dn) for k in r1a}
    return seq, {k: (r16b[k] - r16a[k]) / dn - seq[k] for k in r16a}
both, child = per_call(0), per_call(1)
own = tuple({k: b[k] - c.get(k, 0) for k in b} for b, c in zip(both, child))
lines = []
for part, (seq, at16) in (("gateway+child", both), ("gateway", own), ("child", child)):
    lines += [(part, 1, seq), (part, 16, at16)]
for part, conc, v in lines:
    line = {"gateway": gateway, "part": part, "round": rnd, "concurrency": conc}
    allocs = sum(v.get(f"probe_libc:{f}", 0) for f in ("malloc", "calloc", "realloc"))
    for k, x in v.items():
        if k.startswith("probe_libc:"):
            continue
        line[label(k)] = round(x * 1000 if k == "task-clock" else x, 2)
    if any(k.startswith("probe_libc:") for k in v):
        line["allocations"] = round(allocs, 2)
    print(json.dumps(line))
EOF
done
