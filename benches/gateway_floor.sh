#!/usr/bin/env bash
# The floor of a gateway built on our HTTP server: how close to the floor gateway any gateway
# can come whose HTTP side is our server as it is, sequential 16 B calls. In each round:
#
#   floor client (http-floor bench) -> http-floor serve                   t_fs
#   floor client                    -> http-floor gateway -- echo_server  t_fg_floor
#   mcp-bench --http                -> http-floor gateway -- echo_server  t_fg
#   mcp-bench --http                -> echo_server --http (ours, direct)  t_ours
#   mcp-bench --http                -> mcp-bridge serve -- echo_server    t_bridge
#
# (t = 1 / calls/s). The child hop at its cheapest is h = t_fg_floor - t_fs (the floor client
# on both); a gateway on our HTTP server costs at least t_ours + h, so it reaches at most
# t_fg / (t_ours + h) of the floor gateway's calls/s: the bound printed beside the bridge's
# own t_fg / t_bridge, per round and their medians. mcp-bench is the client of the three
# last lines, so its own cost is common to them.
#
#   benches/gateway_floor.sh [BIN_DIR] [--rounds R] [--n N] [--out FILE]
#
# BIN_DIR holds mcp-bench, mcp-bridge, http-floor and examples/echo_server (default
# target/release, built first). Raw lines (one per target and round, `who` and `round` added)
# go to FILE (default benches/results/gateway-floor-DATE.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release ROUNDS=5 N=3000 OUT="benches/results/gateway-floor-$(date +%F).jsonl" BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --n) N=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) BIN=$1; BUILD=0; shift ;;
  esac
done
if [ "$BUILD" = 1 ]; then
  cargo build --release --quiet --bin mcp-bench --bin mcp-bridge --bin http-floor --example echo_server
fi
ECHO=$BIN/examples/echo_server
mkdir -p "$(dirname "$OUT")"
: >"$OUT"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
listening() { for _ in $(seq 200); do (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
tag() { sed "s|}\$|, \"who\": \"$1\", \"round\": $ROUND}|" >>"$OUT"; }
start() { local port=$1; shift; "$@" >/dev/null 2>&1 & pids+=($!); listening "$port"; }
stop() { kill "${pids[-1]}" 2>/dev/null || true; wait "${pids[-1]}" 2>/dev/null || true; unset 'pids[-1]'; }
floor_bench() { "$BIN/http-floor" bench "http://127.0.0.1:$1/mcp" --n "$N" --concurrency 1 --sizes 16 | sed -n 1p; }
our_bench() { "$BIN/mcp-bench" --http "http://127.0.0.1:$1/mcp" --tool echo --n "$N" --concurrency 1 --sizes 16 2>/dev/null |
  grep '"scenario":"echo"' | sed -n 1p; }

for ROUND in $(seq "$ROUNDS"); do
  echo "round $ROUND of $ROUNDS" >&2
  port=$(free_port); start "$port" "$BIN/http-floor" serve "127.0.0.1:$port"
  floor_bench "$port" | tag floor-client/floor-serve; stop
  port=$(free_port); start "$port" "$BIN/http-floor" gateway "127.0.0.1:$port" -- "$ECHO"
  floor_bench "$port" | tag floor-client/floor-gateway
  our_bench "$port" | tag mcp-bench/floor-gateway; stop
  port=$(free_port); start "$port" "$ECHO" --http "127.0.0.1:$port"
  our_bench "$port" | tag mcp-bench/direct; stop
  port=$(free_port); start "$port" "$BIN/mcp-bridge" serve --listen "http://127.0.0.1:$port/mcp" -- "$ECHO"
  our_bench "$port" | tag mcp-bench/mcp-bridge; stop
done

python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    j = json.loads(line)
    rows.setdefault(j["round"], {})[j["who"]] = 1e6 / j["calls_per_s"]
hops, bounds, bridges = [], [], []
for r, t in sorted(rows.items()):
    h = t["floor-client/floor-gateway"] - t["floor-client/floor-serve"]
    bound = t["mcp-bench/floor-gateway"] / (t["mcp-bench/direct"] + h)
    bridge = t["mcp-bench/floor-gateway"] / t["mcp-bench/mcp-bridge"]
    hops.append(h); bounds.append(bound); bridges.append(bridge)
    print(f"round {r}: child hop {h:.0f} µs; a gateway on our HTTP server at most {bound:.2f} of the floor "
          f"gateway's calls/s; mcp-bridge {bridge:.2f}")
print(f"medians: child hop {statistics.median(hops):.0f} µs, bound {statistics.median(bounds):.2f}, "
      f"mcp-bridge {statistics.median(bridges):.2f}")
PY
