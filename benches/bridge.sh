#!/usr/bin/env bash
# The gateway benchmark: our echo server reached over Streamable HTTP directly and through each
# stdio -> Streamable HTTP gateway, one after the other, each measured by mcp-bench:
#
#   direct        echo_server --http 127.0.0.1:P                       (the floor)
#   floor-gateway http-floor gateway 127.0.0.1:P -- echo_server         (the floor of a gateway:
#                 each message moved through the child, nothing else; benches/http_floor.rs)
#   mcp-bridge    mcp-bridge serve --listen http://127.0.0.1:P/mcp -- echo_server
#   supergateway  supergateway 4 --stdio echo_server --outputTransport streamableHttp --stateful
#   mcp-proxy     mcp-proxy 0.13 --port P -- echo_server                (sparfenyuk's, Python)
#
# then the peak RSS (VmHWM) of `mcp-bridge serve --config` over 10 echo_server stdio upstreams
# after a few calls through it.
#
#   benches/bridge.sh [--n N] [--rounds R] [--out FILE] [--no-build] [--bridge PATH] [-- EXTRA]
#
# --n N       calls per measurement (default 2000); size 16 bytes, concurrency 1 and 16
# --rounds R  measure the four targets one after the other R times (default 3): this VM moves
#             between a fast and a slow mode, so each round's bridge is compared with the same
#             round's direct server and peers, and the summary is the median of the rounds
# --out FILE  the JSON lines (default benches/results/bridge-YYYY-MM-DD.jsonl): mcp-bench's lines
#             with `peer` added, plus `gateway_peak_rss` per gateway and `bridge_fanout_peak_rss`
# --no-build  use the release binaries already in $CARGO_TARGET_DIR (default target/)
# --bridge PATH  the mcp-bridge to measure (default: the release build beside mcp-bench)
# EXTRA       passed to every mcp-bench run after ours (a later --n wins), e.g. --startup-runs 5
#
# Peers come from scripts/install-peers ($MCPWIRE_PEERS/peers.env: MCP_NODE, MCP_SUPERGATEWAY_JS,
# MCP_PROXY). A target that is missing (mcp-bridge without `serve`, a peer not installed) or that
# fails is skipped with a message and the rest still run. Prints a table: calls/s, p50 and p99
# per target and mode, and what the bridge adds over direct (p50/p99, µs) and its calls/s over
# each peer's. Every process it starts runs in its own process group, killed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

N=2000 ROUNDS=3 OUT="" BUILD=1 BRIDGE="" EXTRA=()
while [ $# -gt 0 ]; do
  case $1 in
    --n) N=${2:?--n needs a number}; shift 2 ;;
    --rounds) ROUNDS=${2:?--rounds needs a number}; shift 2 ;;
    --out) OUT=${2:?--out needs a file}; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --bridge) BRIDGE=$(realpath "${2:?--bridge needs a path}"); shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h | --help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bridge.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-benches/results/bridge-$(date -u +%F).jsonl}
mkdir -p "$(dirname "$OUT")"
: >"$OUT"

log() { echo "bridge.sh: $*" >&2; }
if [ $BUILD = 1 ]; then
  cargo build --release --quiet --bin mcp-bench --bin mcp-bridge --bin http-floor --example echo_server
fi
BIN=$(realpath "${CARGO_TARGET_DIR:-target}")/release
ECHO=$BIN/examples/echo_server BENCH=$BIN/mcp-bench BRIDGE=${BRIDGE:-$BIN/mcp-bridge} FLOOR=$BIN/http-floor
for b in "$ECHO" "$BENCH" "$BRIDGE"; do
  [ -x "$b" ] || { log "$b missing (run without --no-build)"; exit 1; }
done
PEERS_ENV=${MCPWIRE_PEERS:-$HOME/.cache/mcp-peers}/peers.env
# shellcheck disable=SC1090
[ -f "$PEERS_ENV" ] && . "$PEERS_ENV" || log "$PEERS_ENV missing: the peers are skipped (run scripts/install-peers)"

. benches/processes.sh
# stop PID: TERM it so that it shuts its children down itself (KILL after 5 s), wait for it,
# then TERM whatever is left in its process group.
stop() {
  kill -TERM "$1" 2>/dev/null || true
  (
    sleep 5 &
    trap 'kill $! 2>/dev/null; exit 0' TERM
    wait $! && kill -KILL "$1" 2>/dev/null
  ) &
  local guard=$!
  wait "$1" 2>/dev/null || true
  kill "$guard" 2>/dev/null || true
  wait "$guard" 2>/dev/null || true
  kill -TERM -- "-$1" 2>/dev/null || true
  local p left=()
  for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || left+=("$p"); done
  PIDS=("${left[@]}")
}
peak_rss_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status" 2>/dev/null || true; }
# measure PEER PORT CMD ARGS...: start the target, bench http://127.0.0.1:PORT/mcp, record the
# target's peak RSS, stop it.
measure() {
  local peer=$1 port=$2
  shift 2
  local url=http://127.0.0.1:$port/mcp logfile=$WORK/$peer.log
  log "$peer: $*"
  start "$logfile" "$@"
  local pid=$STARTED
  if ! wait_listening "$pid" "$port"; then
    log "$peer: skipped: not listening on $port; its output:"
    sed 's/^/  | /' "$logfile" | tail -20 >&2
    stop "$pid"
    return 0
  fi
  local tool
  tool=$(echo_tool "$url" || true)
  if [ -z "$tool" ]; then
    log "$peer: skipped: no single echo tool listed at $url"
    stop "$pid"
    return 0
  fi
  if "$BENCH" --http "$url" --tool "$tool" --n "$N" --concurrency 16 --sizes 16 "${EXTRA[@]}" \
    >"$WORK/$peer.jsonl" 2>"$WORK/$peer.err"; then
    tag "$peer" <"$WORK/$peer.jsonl"
    echo "{\"scenario\":\"gateway_peak_rss\",\"kb\":$(peak_rss_kb "$pid" || echo null)}" | tag "$peer"
  else
    log "$peer: mcp-bench failed: $(tail -3 "$WORK/$peer.err")"
  fi
  stop "$pid"
}

for ROUND in $(seq "$ROUNDS"); do
  log "round $ROUND of $ROUNDS"
  port=$(free_port)
  measure direct "$port" "$ECHO" --http "127.0.0.1:$port"

  if [ -x "$FLOOR" ]; then
    port=$(free_port)
    measure floor-gateway "$port" "$FLOOR" gateway "127.0.0.1:$port" -- "$ECHO"
  else
    log "floor-gateway: skipped: $FLOOR missing (run without --no-build)"
  fi

  if "$BRIDGE" --help 2>&1 | grep -qE '^  serve '; then
    port=$(free_port)
    measure mcp-bridge "$port" "$BRIDGE" serve --listen "http://127.0.0.1:$port/mcp" -- "$ECHO"
  else
    log "mcp-bridge: skipped: $BRIDGE has no \`serve\` subcommand yet (its --help does not list it)"
  fi

  if [ -n "${MCP_SUPERGATEWAY_JS:-}" ] && [ -f "$MCP_SUPERGATEWAY_JS" ]; then
    port=$(free_port)
    measure supergateway "$port" "$MCP_NODE" "$MCP_SUPERGATEWAY_JS" --stdio "$ECHO" \
      --outputTransport streamableHttp --stateful --port "$port"
  else
    log "supergateway: skipped: MCP_SUPERGATEWAY_JS not in $PEERS_ENV (run scripts/install-peers)"
  fi

  if [ -n "${MCP_PROXY:-}" ] && [ -x "$MCP_PROXY" ]; then
    port=$(free_port)
    measure mcp-proxy "$port" "$MCP_PROXY" --host 127.0.0.1 --port "$port" -- "$ECHO"
  else
    log "mcp-proxy: skipped: MCP_PROXY not in $PEERS_ENV (run scripts/install-peers)"
  fi
done

# The bridge's footprint with 10 upstreams: a codex TOML of 10 echo_server stdio servers, a few
# calls through it (to several upstreams), then its VmHWM.
if "$BRIDGE" --help 2>&1 | grep -qE '^  serve '; then
  config=$WORK/ten.toml
  for i in $(seq 0 9); do printf '[mcp_servers.echo%d]\ncommand = "%s"\n\n' "$i" "$ECHO"; done >"$config"
  port=$(free_port)
  url=http://127.0.0.1:$port/mcp
  log "mcp-bridge fan-out: serve --config (10 echo_server upstreams)"
  start "$WORK/fanout.log" "$BRIDGE" serve --listen "$url" --config "$config"
  pid=$STARTED
  if wait_listening "$pid" "$port"; then
    tools=$("$BRIDGE" tools --json --url "$url" 2>/dev/null |
      python3 -c 'import json, sys; print(" ".join(t["name"] for t in json.load(sys.stdin) if t["name"].endswith("__echo")))' || true)
    calls=0
    for tool in $tools; do
      for _ in 1 2 3; do
        "$BRIDGE" call "$tool" --args '{"text":"hello"}' --url "$url" >/dev/null 2>&1 && calls=$((calls + 1))
      done
    done
    upstreams=$(echo "$tools" | wc -w)
    [ "$upstreams" = 10 ] || log "mcp-bridge fan-out: $upstreams echo tools listed at $url, not 10"
    echo "{\"scenario\":\"bridge_fanout_peak_rss\",\"upstreams\":10,\"echo_tools_listed\":$upstreams,\"calls\":$calls,\"kb\":$(peak_rss_kb "$pid" || echo null)}" | tag mcp-bridge
  else
    log "mcp-bridge fan-out: skipped: not listening on $port; its output:"
    sed 's/^/  | /' "$WORK/fanout.log" | tail -20 >&2
  fi
  stop "$pid"
fi

log "results: $OUT"
python3 - "$OUT" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
peers = list(dict.fromkeys(r["peer"] for r in rows))
rounds = sorted({r.get("round", 1) for r in rows})
sizes = sorted({r["payload_bytes"] for r in rows if r["scenario"] == "echo"})
def echo(peer, size, sequential, rnd):
    return next((r for r in rows if r["peer"] == peer and r["scenario"] == "echo" and r.get("round", 1) == rnd
                 and r["payload_bytes"] == size and (r["concurrency"] == 1) == sequential), None)
def one(peer, scenario, rnd=None):
    return next((r for r in rows if r["peer"] == peer and r["scenario"] == scenario
                 and (rnd is None or r.get("round", 1) == rnd)), None)
def num(x, fmt="{:.0f}"):
    return "-" if x is None else fmt.format(x)
def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
def show(values, fmt):
    kept = [v for v in values if v is not None]
    if not kept:
        return None
    return f"{fmt.format(median(kept))} (rounds: " + ", ".join(fmt.format(v) for v in kept) + ")"

conc = next((r["concurrency"] for r in rows if r["scenario"] == "echo" and r["concurrency"] != 1), "C")
print(f"Medians of {len(rounds)} round(s).\n")
print(f"| target | bytes | seq calls/s | seq p50 µs | seq p99 µs | c={conc} calls/s | c={conc} p50 µs | c={conc} p99 µs | errors | startup p50 ms | gateway peak RSS KiB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for p in peers:
    for size in sizes:
        runs = [(echo(p, size, True, r), echo(p, size, False, r)) for r in rounds]
        runs = [(s, c) for s, c in runs if s]
        if not runs:
            continue
        def field(which, key):
            return median([(x[which] or {}).get(key) for x in runs])
        errors = sum(s["errors"] + (c["errors"] if c else 0) for s, c in runs)
        rss = median([(one(p, "gateway_peak_rss", r) or {}).get("kb") for r in rounds])
        startup = median([(one(p, "startup", r) or {}).get("p50_ms") for r in rounds])
        cells = [str(size), num(field(0, "calls_per_s")), num(field(0, "p50_us"), "{:.1f}"),
                 num(field(0, "p99_us"), "{:.1f}"), num(field(1, "calls_per_s")), num(field(1, "p50_us"), "{:.1f}"),
                 num(field(1, "p99_us"), "{:.1f}"), str(errors), num(startup, "{:.3f}"), num(rss)]
        print(f"| {p} | " + " | ".join(cells) + " |")

for size in sizes:
    modes = ((True, "sequential"), (False, f"concurrency {conc}"))
    lines = []
    for seq, label in modes:
        def added(key, r):
            b, d = echo("mcp-bridge", size, seq, r), echo("direct", size, seq, r)
            return b[key] - d[key] if b and d else None
        p50 = show([added("p50_us", r) for r in rounds], "{:+.1f} µs")
        p99 = show([added("p99_us", r) for r in rounds], "{:+.1f} µs")
        if p50:
            lines.append(f"mcp-bridge adds over direct ({size} B, {label}): p50 {p50}; p99 {p99}")
        floor = show([(lambda f, d: f["p50_us"] - d["p50_us"] if f and d else None)(
            echo("floor-gateway", size, seq, r), echo("direct", size, seq, r)) for r in rounds], "{:+.1f} µs")
        if floor:
            lines.append(f"the floor gateway adds over direct ({size} B, {label}): p50 {floor}")
    for peer in ("supergateway", "mcp-proxy"):
        for seq, label in modes:
            def ratio(r):
                b, e = echo("mcp-bridge", size, seq, r), echo(peer, size, seq, r)
                return b["calls_per_s"] / e["calls_per_s"] if b and e and e["calls_per_s"] else None
            shown = show([ratio(r) for r in rounds], "{:.2f}x")
            if shown:
                lines.append(f"mcp-bridge calls/s ÷ {peer} ({size} B, {label}): {shown}")
    if lines:
        print()
        print("\n".join(lines))
fan = one("mcp-bridge", "bridge_fanout_peak_rss")
if fan:
    print(f"\nmcp-bridge serve --config with 10 upstreams: peak RSS {fan['kb']} KiB after {fan['calls']} calls "
          f"({fan['echo_tools_listed']} echo tools listed)")
EOF
