#!/usr/bin/env bash
# What building mcp-bridge costs: a clean build into a fresh target dir (dependencies included),
# timed with /usr/bin/time, with cargo's --timings for the per-crate split, then the size of the
# binary it gave.
#
#   benches/build.sh [--profile release|dist] [--default-features] [--mcpwire-units N]
#                    [--rebuild] [--out FILE] [--keep DIR]
#
# --profile P          release (default) or dist (fat LTO, see Cargo.toml)
# --default-features   build with the default features (as `cargo build --release --bin
#                      mcp-bridge` does); otherwise `--no-default-features --features bridge`, what a
#                      distribution builds (no conformance runner)
# --mcpwire-units N    codegen units for mcpwire itself (default: Cargo.toml's, 1)
# --rebuild            after the clean build, rebuild mcpwire alone (lib and bin, dependencies kept)
#                      and time that too: the figure a change to mcpwire costs
# --out FILE           the JSON lines (default benches/results/build-YYYY-MM-DD.jsonl): one `build`
#                      line per build, with wall and CPU seconds, peak RSS, the binary's size and
#                      the slowest units of --timings
# --keep DIR           build into DIR and keep it (default: a scratch dir, deleted at the end)
#
# Wall time depends on what else the machine runs; the CPU seconds (user + system) less so.
# Read the load average the line carries before comparing wall times of two runs.
set -euo pipefail
cd "$(dirname "$0")/.."

PROFILE=release FEATURES=(--no-default-features --features bridge) FEATURE_NAME=bridge UNITS="" REBUILD=0 OUT="" KEEP=""
while [ $# -gt 0 ]; do
  case $1 in
    --profile) PROFILE=${2:?--profile needs release or dist}; shift 2 ;;
    --default-features) FEATURES=(); FEATURE_NAME=default; shift ;;
    --mcpwire-units) UNITS=${2:?--mcpwire-units needs a number}; shift 2 ;;
    --rebuild) REBUILD=1; shift ;;
    --out) OUT=${2:?--out needs a file}; shift 2 ;;
    --keep) KEEP=${2:?--keep needs a directory}; shift 2 ;;
    -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-benches/results/build-$(date +%F).jsonl}
mkdir -p "$(dirname "$OUT")"

if [ -n "$KEEP" ]; then
  TARGET=$KEEP
  rm -rf "$TARGET"
else
  TARGET=$(mktemp -d)
  trap 'rm -rf "$TARGET"' EXIT
fi
CONFIG=()
[ -n "$UNITS" ] && CONFIG=(--config "profile.$PROFILE.package.mcpwire.codegen-units=$UNITS")

# One build: cargo under /usr/bin/time, then a JSON line from its report and --timings.
measure() {
  local kind=$1 report
  report=$(mktemp)
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  CARGO_TARGET_DIR=$TARGET /usr/bin/time -v -o "$report" \
    cargo build --locked --profile "$PROFILE" "${FEATURES[@]}" "${CONFIG[@]}" --bin mcp-bridge --timings >&2
  local bin=$TARGET/$PROFILE/mcp-bridge
  local timings
  timings=$(ls -t "$TARGET"/cargo-timings/cargo-timing-*.html | head -1)
  python3 - "$report" "$timings" "$bin" "$kind" "$PROFILE" "$FEATURE_NAME" "$UNITS" "$load" "$(git rev-parse --short HEAD)" <<'PY' >>"$OUT"
import json, os, re, sys, tomllib
report, timings, binary, kind, profile, features, units, load, commit = sys.argv[1:]
if not units:
    # Cargo.toml's: the package override, else the profile's (dist inherits release).
    profiles = tomllib.load(open("Cargo.toml", "rb"))["profile"]
    name = profile
    while not units:
        p = profiles.get(name, {})
        units = p.get("package", {}).get("mcpwire", {}).get("codegen-units") or p.get("codegen-units")
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
    "bench": "build", "kind": kind, "profile": profile, "features": features, "mcpwire_units": int(units),
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
