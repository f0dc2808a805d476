#!/usr/bin/env bash
# What building mcp-bridge costs: a clean build into a fresh target dir (dependencies included),
# timed with /usr/bin/time, with cargo's --timings for the per-crate split, then the size of the
# binary it gave.
#
#   benches/build.sh [--profile release|dist] [--mcpwire-units N]
#                    [--rebuild] [--floor] [--out FILE] [--keep DIR]
#
# --profile P          release (default) or dist (fat LTO, see Cargo.toml)
# The binary is the mcp-bridge package's (`cargo build -p mcp-bridge`), with the features of
# mcpwire that package asks for.
# --mcpwire-units N    codegen units for mcpwire itself (default: Cargo.toml's)
# --rebuild            after the clean build, rebuild mcpwire and mcp-bridge alone (dependencies kept)
#                      and time that too: the figure a change to mcpwire costs
# --floor             build benches/build_floor instead: mcp-bridge's dependencies, same versions,
#                      features and profile, each used once, and no MCP code (the part of the
#                      build time and size no change to mcpwire can take away)
# --out FILE           the JSON lines (default benches/results/build-YYYY-MM-DD.jsonl): one `build`
#                      line per build, with wall and CPU seconds, peak RSS, the binary's size and
#                      the slowest units of --timings
# --keep DIR           build into DIR and keep it (default: a scratch dir, deleted at the end)
#
# Wall time depends on what else the machine runs; the CPU seconds (user + system) less so.
# Read the load average the line carries before comparing wall times of two runs.
set -euo pipefail
cd "$(dirname "$0")/.."

PROFILE=release FEATURES=(-p mcp-bridge) FEATURE_NAME=bridge UNITS="" REBUILD=0 OUT="" KEEP=""
MANIFEST=Cargo.toml PACKAGE=mcpwire BIN=mcp-bridge
while [ $# -gt 0 ]; do
  case $1 in
    --profile) PROFILE=${2:?--profile needs release or dist}; shift 2 ;;
    --mcpwire-units) UNITS=${2:?--mcpwire-units needs a number}; shift 2 ;;
    --rebuild) REBUILD=1; shift ;;
    --floor) MANIFEST=benches/build_floor/Cargo.toml PACKAGE=build-floor BIN=build-floor; shift ;;
    --out) OUT=${2:?--out needs a file}; shift 2 ;;
    --keep) KEEP=${2:?--keep needs a directory}; shift 2 ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-benches/results/build-$(date +%F).jsonl}
LOCKED=(--locked)
if [ "$BIN" = build-floor ]; then
  FEATURES=() FEATURE_NAME=floor
  [ "$REBUILD" = 1 ] && { echo "build.sh: --rebuild is for mcp-bridge, not --floor" >&2; exit 2; }
  # The floor resolves to the same versions as mcp-bridge: the repository's lock, which cargo
  # trims to the floor's dependencies (so not --locked).
  cp Cargo.lock benches/build_floor/Cargo.lock
  LOCKED=()
  # Its dependencies are mcp-bridge's: its own, and mcpwire's for the features it asks for.
  python3 - <<'PY'
import sys, tomllib
root = tomllib.load(open("Cargo.toml", "rb"))
floor = tomllib.load(open("benches/build_floor/Cargo.toml", "rb"))["dependencies"]
def needed(feature, seen):
    for item in root["features"].get(feature, []):
        if item.startswith("dep:"):
            seen.add(item[4:])
        elif "/" not in item:
            needed(item, seen)
    return seen
bridge = tomllib.load(open("bridge/Cargo.toml", "rb"))["dependencies"]
specs = dict(root["dependencies"])
names = {n for n, d in root["dependencies"].items() if not (isinstance(d, dict) and d.get("optional"))}
for feature in bridge["mcpwire"]["features"] + root["features"]["default"]:
    needed(feature, names)
for n, d in bridge.items():
    if n != "mcpwire":
        names.add(n)
        specs[n] = d
def spec(d):
    d = dict(d) if isinstance(d, dict) else {"version": d}
    d.pop("optional", None)
    return d
wrong = sorted(n for n in names | set(floor) if n not in names or n not in floor or spec(specs[n]) != spec(floor[n]))
if wrong:
    sys.exit("build.sh: benches/build_floor/Cargo.toml's dependencies differ from mcp-bridge's: " + ", ".join(wrong))
PY
fi
mkdir -p "$(dirname "$OUT")"

if [ -n "$KEEP" ]; then
  TARGET=$KEEP
  rm -rf "$TARGET"
else
  TARGET=$(mktemp -d)
  trap 'rm -rf "$TARGET"' EXIT
fi
CONFIG=()
[ -n "$UNITS" ] && CONFIG=(--config "profile.$PROFILE.package.$PACKAGE.codegen-units=$UNITS")

# One build: cargo under /usr/bin/time, then a JSON line from its report and --timings.
measure() {
  local kind=$1 report
  report=$(mktemp)
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  CARGO_TARGET_DIR=$TARGET /usr/bin/time -v -o "$report" \
    cargo build "${LOCKED[@]}" --manifest-path "$MANIFEST" --profile "$PROFILE" "${FEATURES[@]}" "${CONFIG[@]}" --bin "$BIN" --timings >&2
  local bin=$TARGET/$PROFILE/$BIN
  local timings
  timings=$(ls -t "$TARGET"/cargo-timings/cargo-timing-*.html | head -1)
  python3 - "$report" "$timings" "$bin" "$kind" "$PROFILE" "$FEATURE_NAME" "$UNITS" "$load" "$(git rev-parse --short HEAD)" "$MANIFEST" "$PACKAGE" <<'PY' >>"$OUT"
import json, os, re, sys, tomllib
report, timings, binary, kind, profile, features, units, load, commit, manifest, package = sys.argv[1:]
if not units:
    # Cargo.toml's: the package override, else the profile's (dist inherits release).
    profiles = tomllib.load(open(manifest, "rb"))["profile"]
    name = profile
    while not units:
        p = profiles.get(name, {})
        units = p.get("package", {}).get(package, {}).get("codegen-units") or p.get("codegen-units")
        if not units:
            name = p.get("inherits", "")
            if not name:
                units = 16
fields = {}
for line in open(report):
    key, _, value = line.strip().rpartition(": ")
    fields[key] = value
def seconds(text):
    parts = [float(p) for p in text.split(":")]
    total = 0.0
    for p in parts:
        total = total * 60 + p
    return total
html = open(timings).read()
units_data = re.search(r"const UNIT_DATA = (\[.*?\]);\n", html, re.S)
slowest = []
if units_data:
    data = json.loads(units_data.group(1))
    data.sort(key=lambda u: -u["duration"])
    slowest = [{"unit": u["name"] + (" (" + u["target"].strip() + ")" if u["target"].strip() else ""), "s": round(u["duration"], 1)} for u in data[:8]]
line = {
    "bench": "build", "binary": os.path.basename(binary), "kind": kind, "profile": profile, "features": features, "mcpwire_units": int(units),
    "commit": commit, "dirty": bool(os.popen("git status --porcelain --untracked-files=no").read().strip()), "load_before": float(load),
    "wall_s": round(seconds(fields["Elapsed (wall clock) time (h:mm:ss or m:ss)"]), 1),
    "cpu_s": round(float(fields["User time (seconds)"]) + float(fields["System time (seconds)"]), 1),
    "peak_rss_mb": round(int(fields["Maximum resident set size (kbytes)"]) / 1024),
    "binary_bytes": os.path.getsize(binary), "slowest_units": slowest,
}
print(json.dumps(line))
PY
  rm -f "$report"
  tail -1 "$OUT"
}

measure clean
if [ "$REBUILD" = 1 ]; then
  touch lib.rs bridge/main.rs
  measure rebuild
fi
