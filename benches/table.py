"""Turns benches/matrix.sh results into the tables of docs/benchmarks.md (calls/s, client x server)."""
import json
import sys
from collections import defaultdict

rows = [json.loads(line) for line in open(sys.argv[1])]
cells = defaultdict(dict)
rss = {}
for r in rows:
    if r.get("scenario") == "echo":
        key = (r["transport"], r["payload_bytes"], r["concurrency"])
        cells[key][(r["client"], r["server"])] = r["calls_per_s"]
    elif r.get("scenario") == "server_peak_rss":
        rss[(r["server"], r.get("transport", "stdio"))] = r["kb"]

def fmt(v):
    return "-" if v is None else (f"{v/1000:.1f}k" if v >= 1000 else f"{v:.0f}")

for transport in ["stdio", "inproc-channel", "inproc-duplex", "http-sessions", "http-stateless", "h2c-sessions", "h2c-stateless", "http-floor"]:
    keys = sorted(k for k in cells if k[0] == transport)
    if not keys:
        continue
    pairs = sorted({p for k in keys for p in cells[k]})
    print(f"\n### {transport} (calls/s, client ↔ server)\n")
    print("| client ↔ server | " + " | ".join(f"{b} B × {c}" for _, b, c in keys) + " |")
    print("|---|" + "---:|" * len(keys))
    for client, server in pairs:
        print(f"| {client} ↔ {server} | " + " | ".join(fmt(cells[k].get((client, server))) for k in keys) + " |")

if rss:
    print("\n### server peak RSS (KiB)\n")
    print("| server | transport | peak RSS |")
    print("|---|---|---:|")
    for (server, transport), kb in sorted(rss.items()):
        print(f"| {server} | {transport} | {kb} |")
