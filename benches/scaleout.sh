#!/usr/bin/env bash
# The scale-out benchmark: calls/s of `tools/call echo` (16 bytes) with 1, 2 and 3 `echo_server
# --http` replicas behind HAProxy (round robin, no stickiness), each cell measured by mcp-bench,
# sequential and 16 in flight, in both eras:
#
#   handshake era (sessions; mcp-bench --era legacy)
#     memory 1 direct     one replica, sessions in its memory, no balancer      (the base)
#     memory 1 haproxy    the same replica behind HAProxy
#     redis 1|2|3 haproxy N replicas sharing sessions and streams through one Redis
#                         (echo_server --session-store redis://...)
#   2026-07-28 era (stateless: no session, nothing shared; mcp-bench --era 2026-07-28)
#     none 1 direct       one replica, no balancer                              (the base)
#     none 1|2|3 haproxy  N replicas behind HAProxy
#
#   benches/scaleout.sh [--n N] [--out FILE] [--no-build] [-- EXTRA mcp-bench args]
#
# --n N       calls per measurement (default 2000)
# --out FILE  the JSON lines (default benches/results/scaleout-YYYY-MM-DD.jsonl): mcp-bench's
#             lines with `cell`, `store`, `replicas` and `via` added
# --no-build  use the release binaries already in $CARGO_TARGET_DIR (default target/), which must
#             have been built with `--features redis`
# EXTRA       passed to every mcp-bench run after ours (a later --n wins), e.g. --startup-runs 5
#
# HAProxy and Redis come from the Debian packages, found through scripts/install-peers
# ($MCPWIRE_PEERS/peers.env: MCP_HAPROXY, MCP_REDIS_SERVER); a cell whose program is missing,
# or that fails, is skipped with a message and the rest still run. A fresh Redis (no
# persistence) is started for each Redis cell. Prints a table: calls/s, p50 and p99 per cell and
# mode, each cell's calls/s ÷ its era's 1 replica direct (same mode), and the cost Redis adds
# per call (p50 and p99, µs: Redis 1 replica minus memory 1 replica, both through HAProxy).
# Every process it starts runs in its own process group, killed on exit. The machine's cores
# are shared by the replicas, HAProxy, Redis and the client: more replicas than cores measure
# contention, not capacity; docs/benchmarks.md says how the figures were taken.
set -euo pipefail
cd "$(dirname "$0")/.."

N=2000 OUT="" BUILD=1 EXTRA=()
while [ $# -gt 0 ]; do
  case $1 in
    --n) N=${2:?--n needs a number}; shift 2 ;;
    --out) OUT=${2:?--out needs a file}; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h | --help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scaleout.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-benches/results/scaleout-$(date -u +%F).jsonl}
mkdir -p "$(dirname "$OUT")"
: >"$OUT"

log() { echo "scaleout.sh: $*" >&2; }
if [ $BUILD = 1 ]; then
  cargo build --release --quiet --features redis --bin mcp-bench --example echo_server
fi
BIN=$(realpath "${CARGO_TARGET_DIR:-target}")/release
ECHO=$BIN/examples/echo_server BENCH=$BIN/mcp-bench
for b in "$ECHO" "$BENCH"; do
  [ -x "$b" ] || { log "$b missing (run without --no-build)"; exit 1; }
done
PEERS_ENV=${MCPWIRE_PEERS:-$HOME/.cache/mcp-peers}/peers.env
# shellcheck disable=SC1090
[ -f "$PEERS_ENV" ] && . "$PEERS_ENV" || log "$PEERS_ENV missing: the HAProxy and Redis cells are skipped (run scripts/install-peers)"
HAPROXY=${MCP_HAPROXY:-} REDIS=${MCP_REDIS_SERVER:-}

. benches/processes.sh
# stop_all: TERM every process started (HAProxy's master stops its worker), wait for them.
stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  PIDS=()
}
tag() { python3 -c '
import json, sys
store, replicas, via = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for line in sys.stdin:
    line = line.strip()
    if line.startswith("{"):
        d = json.loads(line)
        d.update(cell=f"{store} {replicas} {via}", store=store, replicas=replicas, via=via)
        print(json.dumps(d))' "$1" "$2" "$3" >>"$OUT"; }

# started_or_skip NAME PID PORT: whether PID listens on PORT; if not, says why and shows its log.
started_or_skip() {
  if wait_listening "$2" "$3"; then return 0; fi
  log "$1: skipped: not listening on $3; its output:"
  sed 's/^/  | /' "$WORK/$1.log" | tail -20 >&2
  return 1
}

# cell ERA STORE REPLICAS VIA: start the replicas (and Redis, HAProxy), bench the cell, stop it all.
cell() {
  local era=$1 store=$2 replicas=$3 via=$4
  local name="$store-$replicas-$via-$era" url redis_url="" port i pid
  if [ "$store" = redis ] && [ ! -x "$REDIS" ]; then
    log "$name: skipped: MCP_REDIS_SERVER not in $PEERS_ENV (run scripts/install-peers)"
    return 0
  fi
  if [ "$via" = haproxy ] && [ ! -x "$HAPROXY" ]; then
    log "$name: skipped: MCP_HAPROXY not in $PEERS_ENV (run scripts/install-peers)"
    return 0
  fi
  log "$name"
  if [ "$store" = redis ]; then
    port=$(free_port)
    start "$WORK/$name-redis.log" "$REDIS" --port "$port" --bind 127.0.0.1 --save "" --appendonly no
    started_or_skip "$name-redis" "$STARTED" "$port" || { stop_all; return 0; }
    redis_url=redis://127.0.0.1:$port
  fi
  local servers=""
  for i in $(seq "$replicas"); do
    port=$(free_port)
    if [ -n "$redis_url" ]; then
      start "$WORK/$name-r$i.log" "$ECHO" --http "127.0.0.1:$port" --session-store "$redis_url"
    else
      start "$WORK/$name-r$i.log" "$ECHO" --http "127.0.0.1:$port"
    fi
    started_or_skip "$name-r$i" "$STARTED" "$port" || { stop_all; return 0; }
    servers+="  server r$i 127.0.0.1:$port"$'\n'
    url=http://127.0.0.1:$port/mcp
  done
  if [ "$via" = haproxy ]; then
    port=$(free_port)
    # As tests/scale_out.rs: round robin, each request balanced on its own, no stickiness.
    printf 'global\n  maxconn 400\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\nfrontend mcp\n  bind 127.0.0.1:%s\n  default_backend replicas\nbackend replicas\n  balance roundrobin\n%s' \
      "$port" "$servers" >"$WORK/$name-haproxy.cfg"
    start "$WORK/$name-haproxy.log" "$HAPROXY" -W -db -f "$WORK/$name-haproxy.cfg"
    started_or_skip "$name-haproxy" "$STARTED" "$port" || { stop_all; return 0; }
    url=http://127.0.0.1:$port/mcp
  fi
  if "$BENCH" --http "$url" --era "$era" --n "$N" --concurrency 16 --sizes 16 "${EXTRA[@]}" \
    >"$WORK/$name.jsonl" 2>"$WORK/$name.err"; then
    tag "$store" "$replicas" "$via" <"$WORK/$name.jsonl"
  else
    log "$name: mcp-bench failed: $(tail -3 "$WORK/$name.err")"
  fi
  stop_all
}

cell legacy memory 1 direct
cell legacy memory 1 haproxy
for n in 1 2 3; do cell legacy redis "$n" haproxy; done
cell 2026-07-28 none 1 direct
for n in 1 2 3; do cell 2026-07-28 none "$n" haproxy; done

log "results: $OUT"
python3 - "$OUT" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
echo = [r for r in rows if r.get("scenario") == "echo"]
def find(era, cell, sequential):
    return next((r for r in echo if r["era"] == era and r["cell"] == cell and (r["concurrency"] == 1) == sequential), None)
def num(x, fmt="{:.0f}"):
    return "-" if x is None else fmt.format(x)
conc = next((r["concurrency"] for r in echo if r["concurrency"] != 1), "C")
bases = {"legacy": "memory 1 direct", "2026-07-28": "none 1 direct"}
titles = {"legacy": "handshake era (sessions)", "2026-07-28": "2026-07-28 era (stateless, nothing shared)"}
print(f"| era | store | replicas | via | seq calls/s | seq p50 µs | seq p99 µs | seq ÷ base | c={conc} calls/s | c={conc} p50 µs | c={conc} p99 µs | c={conc} ÷ base | errors |")
print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for era in ("legacy", "2026-07-28"):
    cells = list(dict.fromkeys(r["cell"] for r in echo if r["era"] == era))
    for cell in cells:
        out = []
        errors = 0
        for sequential in (True, False):
            r, base = find(era, cell, sequential), find(era, bases[era], sequential)
            ratio = r["calls_per_s"] / base["calls_per_s"] if r and base and base["calls_per_s"] else None
            out += [num(r and r["calls_per_s"]), num(r and r["p50_us"], "{:.1f}"), num(r and r["p99_us"], "{:.1f}"),
                    num(ratio, "{:.2f}")]
            errors += r["errors"] if r else 0
        store, replicas, via = cell.split()
        print(f"| {titles[era]} | {store} | {replicas} | {via} | " + " | ".join(out) + f" | {errors} |")
print()
for sequential, label in ((True, "sequential"), (False, f"concurrency {conc}")):
    redis, memory = find("legacy", "redis 1 haproxy", sequential), find("legacy", "memory 1 haproxy", sequential)
    if redis and memory:
        print(f"Redis adds per call ({label}, 1 replica through HAProxy): p50 {redis['p50_us'] - memory['p50_us']:+.1f} µs, "
              f"p99 {redis['p99_us'] - memory['p99_us']:+.1f} µs; calls/s {redis['calls_per_s'] / memory['calls_per_s']:.2f}x")
for sequential, label in ((True, "sequential"), (False, f"concurrency {conc}")):
    new, old = find("2026-07-28", "none 1 direct", sequential), find("legacy", "memory 1 direct", sequential)
    if new and old and old["calls_per_s"]:
        print(f"2026-07-28 ÷ handshake era, 1 replica direct ({label}): {new['calls_per_s'] / old['calls_per_s']:.2f}x calls/s")
EOF
