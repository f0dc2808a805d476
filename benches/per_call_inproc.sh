#!/usr/bin/env bash
# Where an in-process call's time goes: user-space instructions per `tools/call echo` of 16 B
# through our client and server in one process (`mcp-bench --inproc-channel`: typed messages, no
# bytes, a current-thread runtime), counted by callgrind, and split by what they are spent on:
# copying (memcpy/memmove: futures moved by value), the allocator (malloc, free and their
# callees; the number of allocations), hashing, the arguments' schema check and decoding.
# Instructions do not swing with the VM's modes as calls/s do; one run compares two builds.
#
#   benches/per_call_inproc.sh [MCP_BENCH] [N1 N2]
#   PAIR=inproc-floor benches/per_call_inproc.sh ...   (the floor pair, `mcp-bench --inproc-floor`;
#                                                        or PAIR=inproc-duplex)
#
# MCP_BENCH defaults to target/release/mcp-bench, built with symbols for the split:
#   cargo build --release -p mcpwire-benches --bin mcp-bench --config profile.release.strip=false \
#     --config profile.release.package.mcpwire.strip=false \
#     --config profile.release.package.mcpwire-benches.strip=false
# Each figure is the difference between runs of N2 and N1 calls (default 2000 and 6000) divided
# by the calls between them (startup and warm-up left out); mcp-bench runs N calls at 1 in
# flight then N at C, so a run at C = 1 makes 2N sequential calls and a run at C = 16 gives the
# cost at 16 once the sequential half is taken away. One JSON line per concurrency.
set -euo pipefail
BENCH=${1:-target/release/mcp-bench}; N1=${2:-2000}; N2=${3:-6000}; PAIR=${PAIR:-inproc-channel}
command -v valgrind >/dev/null || { echo "per_call_inproc.sh: needs valgrind" >&2; exit 1; }
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
for c in 1 16; do
  for n in "$N1" "$N2"; do
    valgrind --tool=callgrind --callgrind-out-file="$scratch/$c-$n.out" \
      "$BENCH" "--$PAIR" --n "$n" --concurrency "$c" --sizes 16 --startup-runs 1 >/dev/null 2>&1
    callgrind_annotate --inclusive=yes "$scratch/$c-$n.out" > "$scratch/$c-$n.incl" 2>/dev/null
    callgrind_annotate --tree=caller "$scratch/$c-$n.out" > "$scratch/$c-$n.tree" 2>/dev/null
  done
done
python3 - "$scratch" "$N1" "$N2" "$PAIR" <<'PY'
import json, re, sys
scratch, n1, n2, pair = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
# Inclusive instructions of the functions whose names hold these, summed (none nests in another).
parts = {
    "copying": [r"__memcpy_\w+", r"__memmove_\w+"],
    "allocator": [r"malloc\.c:malloc$", r"malloc\.c:free$", r"malloc\.c:realloc$"],
    "hashing": [r"BuildHasher::hash_one$"],
    "schema_check": [r"mcpwire::server::schema::check_arguments$", r"mcpwire::server::schema::check_output$"],
    "arguments_decode": [r"mcpwire::server::tool::arguments$"],
}
def inclusive(path):
    costs = {}
    for line in open(path):
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*?)(?: \[.*\])?$", line)
        if m:
            name = m.group(2).strip().split(":", 1)[-1] if "???" in m.group(2) else m.group(2).strip()
            costs[name] = costs.get(name, 0) + int(m.group(1).replace(",", ""))
    return costs
def total(path):
    for line in open(path):
        if "PROGRAM TOTALS" in line:
            return int(line.split()[0].replace(",", ""))
def mallocs(path):
    # Calls of malloc: the `*` line of malloc in the caller tree lists each caller with its count.
    callers = []
    for line in open(path):
        if "<" in line and "*" not in line:
            callers.append(line)
        elif re.search(r"\*\s+\S*malloc\.c:malloc \[", line):
            return sum(int(c.replace(",", "")) for c in re.findall(r"\((\d[\d,]*)x\)", "".join(callers)))
        else:
            callers = []
    return 0
def measure(c, n):
    base = f"{scratch}/{c}-{n}"
    costs = inclusive(base + ".incl")
    out = {"instructions": total(base + ".incl"), "allocations": mallocs(base + ".tree")}
    for part, patterns in parts.items():
        out[part] = sum(v for k, v in costs.items() if any(re.search(p, k) for p in patterns))
    return out
runs = {(c, n): measure(c, n) for c in (1, 16) for n in (n1, n2)}
dn = n2 - n1
for conc in (1, 16):
    row = {"pair": ("mcpwire " if pair != "inproc-floor" else "") + pair, "concurrency": conc}
    for key in runs[(1, n1)]:
        seq = (runs[(1, n2)][key] - runs[(1, n1)][key]) / (2 * dn)
        value = seq if conc == 1 else (runs[(16, n2)][key] - runs[(16, n1)][key]) / dn - seq
        row[key + "_per_call"] = round(value, 1)
    print(json.dumps(row))
PY
