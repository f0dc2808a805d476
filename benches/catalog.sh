#!/usr/bin/env bash
# The catalog lifecycle benchmark: `mcp-bridge serve --config` over N echo_server stdio
# upstreams (default 40), started eagerly and lazily from a warm catalog cache, then a reload
# that changes one server.
#
#   eager   every upstream starts at launch
#   lazy    `startup = "lazy"` for all, the catalog cache warmed by one earlier run: nothing
#           starts at launch; the first call starts one upstream
#
# Per mode: the time from launching the bridge to the first listed catalog (`mcp-bridge tools
# --url` answering with all N*3 tools) and to the first call answered, then the memory of the
# set (the bridge's VmRSS and the sum of its children's) and the number of upstream processes.
# Then, on the eager bridge: one server's args changed in the file and SIGHUP sent; the time
# until the bridge logs the reload, and the processes started and stopped by it (expected: 1
# and 1; the other N-1 keep their pids).
#
#   benches/catalog.sh [--n N] [--out FILE] [--no-build] [--profile release|debug]
#
# --n N         upstream servers (default 40)
# --out FILE    the JSON lines (default benches/results/catalog-YYYY-MM-DD.jsonl): one
#               `catalog_startup` line per mode and one `catalog_reload` line
# --no-build    use the binaries already in $CARGO_TARGET_DIR (default target/)
# --profile P   which build to use (default release; debug only to check that the script works)
#
# Every process it starts runs in its own process group, killed on exit. The catalog cache is
# kept in a scratch XDG_CACHE_HOME, never the user's.
set -euo pipefail
cd "$(dirname "$0")/.."

N=40 OUT="" BUILD=1 PROFILE=release
while [ $# -gt 0 ]; do
  case $1 in
    --n) N=${2:?--n needs a number}; shift 2 ;;
    --out) OUT=${2:?--out needs a file}; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --profile) PROFILE=${2:?--profile needs release or debug}; shift 2 ;;
    -h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "catalog.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case $PROFILE in release | debug) ;; *) echo "catalog.sh: --profile release or debug" >&2; exit 2 ;; esac
OUT=${OUT:-benches/results/catalog-$(date -u +%F).jsonl}
mkdir -p "$(dirname "$OUT")"
: >"$OUT"

log() { echo "catalog.sh: $*" >&2; }
if [ $BUILD = 1 ]; then
  flag=$([ "$PROFILE" = release ] && echo --release || true)
  cargo build $flag --quiet --bin mcp-bridge --example echo_server
fi
BIN=$(realpath "${CARGO_TARGET_DIR:-target}")/$PROFILE
ECHO=$BIN/examples/echo_server BRIDGE=$BIN/mcp-bridge
for b in "$ECHO" "$BRIDGE"; do
  [ -x "$b" ] || { log "$b missing (run without --no-build)"; exit 1; }
done

. benches/processes.sh
export XDG_CACHE_HOME=$WORK/cache

now_ms() { date +%s%3N; }
children() { pgrep -P "$1" | sort || true; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
children_rss_kb() {
  local total=0 pid
  for pid in $(children "$1"); do total=$((total + $(rss_kb "$pid"))); done
  echo "$total"
}
# stop PID: TERM it (it stops its upstreams with their process groups), wait, then TERM its group.
stop() {
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  kill -TERM -- "-$1" 2>/dev/null || true
  local p left=()
  for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || left+=("$p"); done
  PIDS=("${left[@]}")
}

# config FILE STARTUP [CHANGED]: N echo_server upstreams; CHANGED: the index whose args differ.
config() {
  local i
  for i in $(seq 0 $((N - 1))); do
    printf '[mcp_servers.echo%d]\ncommand = "%s"\nstartup = "%s"\n' "$i" "$ECHO" "$2"
    if [ "${3:-}" = "$i" ]; then printf 'args = ["--threads", "2"]\n'; fi
    printf '\n'
  done >"$1"
}

# launch CONFIG LOG: starts the bridge on a free port; sets BRIDGE_PID and URL.
launch() {
  local port
  port=$(free_port)
  URL=http://127.0.0.1:$port/mcp
  setsid "$BRIDGE" serve --listen "$URL" --config "$1" >"$2" 2>&1 </dev/null &
  BRIDGE_PID=$!
  PIDS+=("$BRIDGE_PID")
}

# first_listed: until `tools --url` lists all N*3 tools (60 s).
first_listed() {
  local i count
  for i in $(seq 600); do
    count=$("$BRIDGE" tools --json --url "$URL" 2>/dev/null | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))' 2>/dev/null || echo 0)
    [ "$count" -ge $((N * 3)) ] && return 0
    kill -0 "$BRIDGE_PID" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# startup MODE: launch, time to the first listed catalog and first call, memory; leaves it running.
startup() {
  local mode=$1 cfg=$WORK/$1.toml t0 listed called
  config "$cfg" "$([ "$mode" = lazy ] && echo lazy || echo eager)"
  if [ "$mode" = lazy ]; then
    # Warm the cache: one run that lists everything (a lazy server without a cache entry starts).
    launch "$cfg" "$WORK/warm.log"
    first_listed || { log "lazy: the warming run never listed its catalog"; sed 's/^/  | /' "$WORK/warm.log" | tail >&2; exit 1; }
    stop "$BRIDGE_PID"
  fi
  t0=$(now_ms)
  launch "$cfg" "$WORK/$mode.log"
  first_listed || { log "$mode: never listed its catalog"; sed 's/^/  | /' "$WORK/$mode.log" | tail >&2; exit 1; }
  listed=$(($(now_ms) - t0))
  local before
  before=$(children "$BRIDGE_PID" | wc -l)
  "$BRIDGE" call mcp__echo0__echo --args '{"text":"first"}' --url "$URL" >/dev/null
  called=$(($(now_ms) - t0))
  local processes
  processes=$(children "$BRIDGE_PID" | wc -l)
  printf '{"scenario":"catalog_startup","mode":"%s","servers":%d,"first_listed_ms":%d,"first_call_ms":%d,"bridge_rss_kb":%d,"children_rss_kb":%d,"processes_before_call":%d,"processes":%d}\n' \
    "$mode" "$N" "$listed" "$called" "$(rss_kb "$BRIDGE_PID")" "$(children_rss_kb "$BRIDGE_PID")" "$before" "$processes" | tee -a "$OUT"
}

startup lazy
stop "$BRIDGE_PID"
startup eager

# Reload the eager bridge with one server's args changed.
before=$(children "$BRIDGE_PID")
config "$WORK/eager.toml" eager 0
t0=$(now_ms)
kill -HUP "$BRIDGE_PID"
for _ in $(seq 600); do
  grep -q 'reloaded' "$WORK/eager.log" && break
  sleep 0.02
done
grep -q 'reloaded' "$WORK/eager.log" || { log "reload: not logged within 12 s"; tail "$WORK/eager.log" >&2; exit 1; }
reload_ms=$(($(now_ms) - t0))
after=$(children "$BRIDGE_PID")
started=$(comm -13 <(echo "$before") <(echo "$after") | grep -c . || true)
stopped=$(comm -23 <(echo "$before") <(echo "$after") | grep -c . || true)
printf '{"scenario":"catalog_reload","servers":%d,"changed":1,"reload_ms":%d,"processes_started":%d,"processes_stopped":%d}\n' \
  "$N" "$reload_ms" "$started" "$stopped" | tee -a "$OUT"
stop "$BRIDGE_PID"
log "wrote $OUT"
