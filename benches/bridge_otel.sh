#!/usr/bin/env bash
# What tracing costs the bridge: `mcp-bridge serve -- echo_server` measured by mcp-bench in three
# builds/configurations, alternating within each round:
#
#   compiled-out   mcp-bridge built without `otel` (the default features)
#   otel-off       mcp-bridge built with `mcp-bridge/otel`, no endpoint configured (no
#                  --otlp-endpoint, no OTEL_EXPORTER_OTLP_ENDPOINT): the spans' callsites are
#                  compiled in, and disabled
#   otel-export    the same binary with --otlp-endpoint to a local OTLP/HTTP sink that answers
#                  200 to every export (two spans per call, batched, sampled: parent-based
#                  always-on, every call a root here)
#
#   benches/bridge_otel.sh [--n N] [--rounds R] [--out FILE] [--no-build]
#
# --n N       calls per measurement (default 2000); size 16 bytes, concurrency 1 and 16
# --rounds R  rounds (default 5); each measures the three, in an order rotated every round, so
#             that the VM's fast and slow spells fall on each alike; the summary is the median
# --out FILE  JSON lines (default benches/results/bridge-otel-YYYY-MM-DD.jsonl): mcp-bench's
#             lines with `peer` and `round` added
# --no-build  use the binaries already built: $CARGO_TARGET_DIR/release/{mcp-bench,
#             examples/echo_server} and $CARGO_TARGET_DIR/bench-otel/mcp-bridge-{out,otel}
#
# The two bridges are two release builds (copied to $CARGO_TARGET_DIR/bench-otel/ after each,
# since both are target/release/mcp-bridge). Prints calls/s and p50 per configuration and
# concurrency, and each one's difference from compiled-out.
set -euo pipefail
cd "$(dirname "$0")/.."

N=2000 ROUNDS=5 OUT="" BUILD=1
while [ $# -gt 0 ]; do
  case $1 in
    --n) N=${2:?--n needs a number}; shift 2 ;;
    --rounds) ROUNDS=${2:?--rounds needs a number}; shift 2 ;;
    --out) OUT=${2:?--out needs a file}; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bridge_otel.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-benches/results/bridge-otel-$(date -u +%F).jsonl}
mkdir -p "$(dirname "$OUT")"
: >"$OUT"
log() { echo "bridge_otel.sh: $*" >&2; }

TARGET=$(realpath "${CARGO_TARGET_DIR:-target}")
BIN=$TARGET/release KEEP=$TARGET/bench-otel
mkdir -p "$KEEP"
if [ $BUILD = 1 ]; then
  cargo build --release --quiet --bin mcp-bench --bin mcp-bridge --example echo_server
  cp "$BIN/mcp-bridge" "$KEEP/mcp-bridge-out"
  cargo build --release --quiet --bin mcp-bridge --features mcp-bridge/otel
  cp "$BIN/mcp-bridge" "$KEEP/mcp-bridge-otel"
fi
ECHO=$BIN/examples/echo_server BENCH=$BIN/mcp-bench OUT_BRIDGE=$KEEP/mcp-bridge-out OTEL_BRIDGE=$KEEP/mcp-bridge-otel
for b in "$ECHO" "$BENCH" "$OUT_BRIDGE" "$OTEL_BRIDGE"; do
  [ -x "$b" ] || { log "$b missing (run without --no-build)"; exit 1; }
done
"$OTEL_BRIDGE" serve --help 2>&1 | grep -q -- --otlp-endpoint || { log "$OTEL_BRIDGE has no --otlp-endpoint"; exit 1; }

. benches/processes.sh
# No endpoint from the environment: otel-off must be off, and only otel-export exports.
unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT OTEL_SDK_DISABLED OTEL_TRACES_EXPORTER

# The sink: OTLP/HTTP exports read whole and answered 200 (not decoded: it measures the bridge).
SINK_PORT=$(free_port)
start "$WORK/sink.log" python3 -c '
import http.server, sys
class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200); self.send_header("content-length", "0"); self.end_headers()
    def log_message(self, *args): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()' "$SINK_PORT"
SINK_PID=$STARTED
wait_listening "$SINK_PID" "$SINK_PORT" || { log "the sink did not start"; exit 1; }


# measure NAME BRIDGE [ARGS...]: serve echo_server through BRIDGE (ARGS before `--`), bench it.
measure() {
  local name=$1 bridge=$2
  shift 2
  local port
  port=$(free_port)
  local url=http://127.0.0.1:$port/mcp
  start "$WORK/$name.log" "$bridge" serve --listen "$url" "$@" -- "$ECHO"
  local pid=$STARTED
  if ! wait_listening "$pid" "$port"; then
    log "$name: not listening; its output:"
    sed 's/^/  | /' "$WORK/$name.log" | tail -20 >&2
    exit 1
  fi
  local tool
  tool=$(BRIDGE=$bridge echo_tool "$url")
  [ -n "$tool" ] || { log "$name: no echo tool at $url"; exit 1; }
  "$BENCH" --http "$url" --tool "$tool" --n "$N" --concurrency 16 --sizes 16 >"$WORK/$name.jsonl" 2>"$WORK/$name.err" ||
    { log "$name: mcp-bench failed: $(tail -3 "$WORK/$name.err")"; exit 1; }
  tag "$name" <"$WORK/$name.jsonl"
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

CONFIGS=(compiled-out otel-off otel-export)
for ROUND in $(seq "$ROUNDS"); do
  for i in 0 1 2; do
    config=${CONFIGS[$(((i + ROUND) % 3))]}
    log "round $ROUND of $ROUNDS: $config"
    case $config in
      compiled-out) measure "$config" "$OUT_BRIDGE" ;;
      otel-off) measure "$config" "$OTEL_BRIDGE" ;;
      otel-export) measure "$config" "$OTEL_BRIDGE" --otlp-endpoint "http://127.0.0.1:$SINK_PORT" ;;
    esac
  done
done

python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
echo = [r for r in rows if r.get("scenario") == "echo"]
rounds = sorted({r["round"] for r in echo})
configs = ["compiled-out", "otel-off", "otel-export"]
# Each configuration against compiled-out of the same round (the VM changes speed between
# rounds), then the median over rounds; the medians of the raw figures beside them.
print(f"{'configuration':<14} {'conc':>4} {'calls/s':>9} {'p50 µs':>8} {'calls/s vs out':>15} {'p50 vs out':>11}   (medians of {len(rounds)} rounds; vs out: per round)")
for c in sorted({r["concurrency"] for r in echo}):
    by = {(r["peer"], r["round"]): r for r in echo if r["concurrency"] == c}
    for peer in configs:
        runs = [by[(peer, n)] for n in rounds if (peer, n) in by]
        cps = statistics.median(r["calls_per_s"] for r in runs)
        p50 = statistics.median(r["p50_us"] for r in runs)
        pairs = [(by[(peer, n)], by[("compiled-out", n)]) for n in rounds if (peer, n) in by and ("compiled-out", n) in by]
        d_cps = statistics.median(a["calls_per_s"] / b["calls_per_s"] - 1 for a, b in pairs)
        d_p50 = statistics.median(a["p50_us"] / b["p50_us"] - 1 for a, b in pairs)
        print(f"{peer:<14} {c:>4} {cps:>9.0f} {p50:>8.1f} {100 * d_cps:>+14.1f}% {100 * d_p50:>+10.1f}%")
PY
log "results: $OUT"
