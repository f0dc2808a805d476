#!/usr/bin/env bash
# Calls/s of the in-process pairs side by side, alternating within each round so a change of the
# VM's mode touches all three: ours (`mcp-bench --inproc-channel`), the floor (`mcp-bench
# --inproc-floor`: a tokio mpsc to one server task, a oneshot answer, no MCP) and rmcp's typed
# channel pair (`rmcp-bench --inproc`, its channel lines only). 16 B echo, × 1 and × 16.
#
#   benches/inproc_rounds.sh [ROUNDS] [N] [MCP_BENCH] [RMCP_BENCH]
#
# Defaults: 3 rounds of 20000 calls, target/release/mcp-bench, /tmp/rmcp-peer/release/rmcp-bench
# (built in ../shared/peers/rmcp-peer, see its README). Prints the load average first (calls/s
# need an otherwise idle machine), then one line per round, pair and concurrency:
# `ROUND PAIR CONCURRENCY CALLS_PER_S P50_US`, then each round's ratios at each concurrency.
set -euo pipefail
ROUNDS=${1:-3}; N=${2:-20000}
BENCH=${3:-target/release/mcp-bench}; RMCP=${4:-/tmp/rmcp-peer/release/rmcp-bench}
fields='select(.scenario == "echo" and .payload_bytes == 16) | "\(.transport) \(.concurrency) \(.calls_per_s) \(.p50_us)"'
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
out=$(mktemp); trap 'rm -f "$out"' EXIT
for r in $(seq "$ROUNDS"); do
  "$BENCH" --inproc-channel --n "$N" --sizes 16 --startup-runs 1 | jq -r "$fields" | sed "s/^/$r ours /" | tee -a "$out"
  "$BENCH" --inproc-floor --n "$N" --sizes 16 --startup-runs 1 | jq -r "$fields" | sed "s/^/$r floor /" | tee -a "$out"
  "$RMCP" --inproc --n "$N" --sizes 16 --startup-runs 1 | jq -r "$fields" | grep '^inproc-channel ' | sed "s/^/$r rmcp /" | tee -a "$out"
done
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '{ v[$1" "$2" "$4] = $5 }
  END { for (r = 1; r <= '"$ROUNDS"'; r++) for (c = 1; c <= 16; c += 15)
    printf "round %d x %d: ours/rmcp %.2f  floor/rmcp %.2f  ours/floor %.0f%%\n", r, c,
      v[r" ours "c] / v[r" rmcp "c], v[r" floor "c] / v[r" rmcp "c], 100 * v[r" ours "c] / v[r" floor "c] }' "$out"
