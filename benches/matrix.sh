#!/usr/bin/env bash
# The benchmark matrix of docs/benchmarks.md, in one run: every client against every server over
# stdio, in-process, and Streamable HTTP (sessions and stateless; HTTP/1.1, and HTTP/2 for our
# own pair), release builds.
#
#   benches/matrix.sh [OUT_DIR] [--pairs-only] [-- extra bench args, e.g. --n 5000]
#
# Peers: rmcp-bench, rmcp-echo-server, floor-bench and floor-echo-server from the rmcp peer
# project (../shared/peers/rmcp-peer; build it once outside the repo:
#   CARGO_TARGET_DIR=/tmp/rmcp-peer cargo build --release --locked --manifest-path ../shared/peers/rmcp-peer/Cargo.toml)
# found in $RMCP_PEER_BIN (default /tmp/rmcp-peer/release). Results: OUT_DIR/results.jsonl
# (one JSON object per scenario, with `client` and `server` added) and OUT_DIR/table.md.
# Then the gateways (benches/bridge.sh: direct, mcp-bridge serve, supergateway, mcp-proxy; the
# same extra bench args): OUT_DIR/bridge.jsonl, its table appended to OUT_DIR/table.md. Last,
# scale-out (benches/scaleout.sh: 1-3 replicas behind HAProxy, memory and Redis stores, both
# eras; it rebuilds mcp-bench and echo_server with --features redis): OUT_DIR/scaleout.jsonl,
# its table appended too. `--pairs-only` stops after the client × server tables (no gateways, no
# scale-out): the few minutes to run when only the pairs are compared.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-out}; shift || true
PAIRS_ONLY=false
[ "${1:-}" = "--pairs-only" ] && { PAIRS_ONLY=true; shift; }
[ "${1:-}" = "--" ] && shift
EXTRA=("$@")
P=${RMCP_PEER_BIN:-/tmp/rmcp-peer/release}
for b in rmcp-bench rmcp-echo-server floor-bench floor-echo-server; do
  [ -x "$P/$b" ] || { echo "matrix.sh: $P/$b missing (see the header of this script)" >&2; exit 1; }
done
cargo build --release --quiet --bin mcp-bench --bin http-floor --bin mcp-bridge --example echo_server
OURS=$(realpath "${CARGO_TARGET_DIR:-target}")/release
mkdir -p "$OUT"; : > "$OUT/results.jsonl"

# tag CLIENT SERVER: add who was measured to each JSON line.
tag() { python3 -c '
import json, sys
client, server = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    line = line.strip()
    if not line.startswith("{"): continue
    d = json.loads(line); d["client"] = client; d["server"] = server
    print(json.dumps(d))' "$1" "$2" >> "$OUT/results.jsonl"; }

declare -A SERVERS=(
  [mcpwire]="$OURS/examples/echo_server"
  [rmcp-pipes]="$P/rmcp-echo-server --pipes"
  [rmcp]="$P/rmcp-echo-server"
  [floor]="$P/floor-echo-server"
)
for server in mcpwire rmcp-pipes rmcp floor; do
  cmd=${SERVERS[$server]}
  "$OURS/mcp-bench" --stdio "$cmd" "${EXTRA[@]}" | tag mcpwire "$server"
  "$P/rmcp-bench" --stdio "$cmd" "${EXTRA[@]}" | tag rmcp "$server"
  "$P/floor-bench" --stdio "$cmd" "${EXTRA[@]}" | tag floor "$server"
done

"$OURS/mcp-bench" --inproc "${EXTRA[@]}" | tag mcpwire mcpwire
"$P/rmcp-bench" --inproc "${EXTRA[@]}" | tag rmcp rmcp

peak_rss_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo null; }
for server in mcpwire rmcp; do
  for mode in sessions stateless; do
    port=$((18930 + RANDOM % 1000))
    flag=$([ $mode = stateless ] && echo --stateless || true)
    if [ $server = mcpwire ]; then
      "$OURS/examples/echo_server" --http 127.0.0.1:$port $flag 2>/dev/null & pid=$!
    else
      "$P/rmcp-echo-server" --http 127.0.0.1:$port $flag 2>/dev/null & pid=$!
    fi
    sleep 0.5
    for client in mcpwire rmcp; do
      bench=$([ $client = mcpwire ] && echo "$OURS/mcp-bench" || echo "$P/rmcp-bench")
      "$bench" --http http://127.0.0.1:$port/mcp "${EXTRA[@]}" \
        | sed "s/\"transport\":\"http\"/\"transport\":\"http-$mode\"/" | tag "$client" "$server"
    done
    # The 2026-07-28 row: our pair in the stateless era (no session, the per-request _meta on
    # every POST), beside the handshake-era stateless pairs (rmcp-bench speaks initialize only).
    if [ $server = mcpwire ] && [ $mode = stateless ]; then
      "$OURS/mcp-bench" --http http://127.0.0.1:$port/mcp --era 2026-07-28 "${EXTRA[@]}" \
        | sed "s/\"transport\":\"http\"/\"transport\":\"http-$mode\"/" | tag mcpwire-2026 "$server"
    fi
    # HTTP/2 (h2c, prior knowledge) on the same listener: our client only (rmcp-bench speaks
    # HTTP/1.1), in the handshake era and, stateless, in 2026-07-28.
    if [ $server = mcpwire ]; then
      "$OURS/mcp-bench" --h2c http://127.0.0.1:$port/mcp "${EXTRA[@]}" \
        | sed "s/\"transport\":\"h2c\"/\"transport\":\"h2c-$mode\"/" | tag mcpwire "$server"
      if [ $mode = stateless ]; then
        "$OURS/mcp-bench" --h2c http://127.0.0.1:$port/mcp --era 2026-07-28 "${EXTRA[@]}" \
          | sed "s/\"transport\":\"h2c\"/\"transport\":\"h2c-$mode\"/" | tag mcpwire-2026 "$server"
      fi
    fi
    echo "{\"scenario\":\"server_peak_rss\",\"transport\":\"http-$mode\",\"kb\":$(peak_rss_kb $pid)}" | tag - "$server"
    kill $pid; wait $pid 2>/dev/null || true
  done
done
# The HTTP floor: blocking std::net client and server, one serde_json parse and write per
# message, one application/json answer per POST (benches/http_floor.rs).
port=$((18930 + RANDOM % 1000))
"$OURS/http-floor" serve 127.0.0.1:$port 2>/dev/null & pid=$!
sleep 0.5
"$OURS/http-floor" bench http://127.0.0.1:$port/mcp "${EXTRA[@]}" | tag floor floor
kill $pid; wait $pid 2>/dev/null || true

python3 benches/table.py "$OUT/results.jsonl" > "$OUT/table.md"
if $PAIRS_ONLY; then cat "$OUT/table.md"; exit 0; fi
{ echo; echo "## Gateways (benches/bridge.sh)"; echo; } >> "$OUT/table.md"
benches/bridge.sh --no-build --out "$OUT/bridge.jsonl" -- "${EXTRA[@]}" >> "$OUT/table.md"
{ echo; echo "## Scale-out (benches/scaleout.sh)"; echo; } >> "$OUT/table.md"
benches/scaleout.sh --out "$OUT/scaleout.jsonl" -- "${EXTRA[@]}" >> "$OUT/table.md"
cat "$OUT/table.md"
