#!/usr/bin/env bash
# What one call costs a stdio client and server pair together, in counts the kernel keeps:
# system calls, context switches (a process put to sleep and woken: one per wakeup), and CPU
# time, per `tools/call echo` of 16 B, at 1 and at 16 calls in flight. Counts do not swing with
# the VM's fast and slow modes as calls/s do; CPU time does, and is given for the shape only.
#
#   benches/per_call.sh CLIENT_BIN "SERVER_CMD" [N1 N2]
#
# CLIENT_BIN takes rmcp-bench's flags (mcp-bench, rmcp-bench, floor-bench); SERVER_CMD is any
# stdio echo server (split on whitespace). `perf stat` counts the client and its child together.
# Each figure is the difference between runs of N2 and N1 calls (default 2000 and 6000) divided
# by the calls between them, which leaves startup, the handshake and the warm-up out: runs at
# concurrency 1 give the sequential cost; runs at concurrency 16 (which make N calls at 1, then
# N at 16) give the cost at 16 once the sequential part is taken away. One JSON line per
# concurrency.
set -euo pipefail
CLIENT=${1:?client binary}; SERVER=${2:?server command}; N1=${3:-2000}; N2=${4:-6000}
command -v perf >/dev/null || { echo "per_call.sh: needs perf" >&2; exit 1; }
# counts N C: "syscalls context_switches task_clock_ms" of one run.
counts() {
  perf stat -x, -e raw_syscalls:sys_enter,context-switches,task-clock -- \
    "$CLIENT" --stdio "$SERVER" --n "$1" --concurrency "$2" --sizes 16 2>&1 >/dev/null |
    awk -F, '/raw_syscalls/ {s=$1} /context-switches/ {c=$1} /task-clock/ {t=$1} END {print s, c, t}'
}
read -r s1a c1a t1a <<<"$(counts "$N1" 1)"
read -r s1b c1b t1b <<<"$(counts "$N2" 1)"
read -r s16a c16a t16a <<<"$(counts "$N1" 16)"
read -r s16b c16b t16b <<<"$(counts "$N2" 16)"
python3 - "$CLIENT" "$SERVER" "$N1" "$N2" "$s1a" "$c1a" "$t1a" "$s1b" "$c1b" "$t1b" \
  "$s16a" "$c16a" "$t16a" "$s16b" "$c16b" "$t16b" <<'EOF'
import json, sys
client, server, n1, n2 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
v = [float(x) for x in sys.argv[5:]]
dn = n2 - n1
seq = [(v[3 + i] - v[i]) / (2 * dn) for i in range(3)]
both = [(v[9 + i] - v[6 + i]) / dn for i in range(3)]
at16 = [both[i] - seq[i] for i in range(3)]
for conc, (s, c, t) in ((1, seq), (16, at16)):
    print(json.dumps({"client": client.rsplit("/", 1)[-1], "server": server.split()[0].rsplit("/", 1)[-1],
                      "concurrency": conc, "syscalls_per_call": round(s, 2),
                      "context_switches_per_call": round(c, 2), "cpu_us_per_call": round(t * 1000, 2)}))
EOF
