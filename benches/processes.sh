# benches/processes.sh — sourced by the benchmark scripts (bridge.sh, scaleout.sh, catalog.sh,
# bridge_instructions.sh): a scratch dir and the processes a run starts, all stopped and removed
# when the script exits however it exits; a free loopback port; waiting for a listener; the echo
# tool's name behind a gateway; JSON result lines tagged with who was measured and the round. It
# measures nothing and starts nothing by itself.
#
# After sourcing: $WORK (a fresh temporary dir), PIDS (the pids `start` recorded) and ROUND (1:
# the caller's round loop sets it).

WORK=$(mktemp -d)
PIDS=()
# cleanup: TERM each recorded process group, wait for them, remove $WORK (on EXIT).
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start LOG CMD ARGS...: run CMD in a process group of its own (its pid is the group's id, so
# its children go with it), output to LOG; sets STARTED to the pid and records it in PIDS.
start() {
  local logfile=$1
  shift
  setsid "$@" >"$logfile" 2>&1 </dev/null &
  STARTED=$!
  PIDS+=("$STARTED")
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_listening PID PORT: until 127.0.0.1:PORT accepts a connection (30 s), or PID died.
wait_listening() {
  local i
  for i in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# tag PEER: add `peer` and `round` ($ROUND) to each JSON line on stdin, append them to $OUT.
ROUND=1
tag() { python3 -c '
import json, sys
for line in sys.stdin:
    line = line.strip()
    if line.startswith("{"):
        d = json.loads(line); d["peer"] = sys.argv[1]; d["round"] = int(sys.argv[2]); print(json.dumps(d))' "$1" "$ROUND" >>"$OUT"; }

# echo_tool URL: the echo tool's name as URL serves it (asked through $BRIDGE's `tools`): `echo`,
# or the one qualified name ending in `__echo` (a gateway may qualify its upstreams' names);
# empty if neither.
echo_tool() {
  "$BRIDGE" tools --json --url "$1" 2>/dev/null | python3 -c '
import json, sys
names = [t["name"] for t in json.load(sys.stdin)]
hits = ["echo"] if "echo" in names else [n for n in names if n.endswith("__echo")]
print(hits[0] if len(hits) == 1 else "")'
}
