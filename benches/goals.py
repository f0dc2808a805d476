"""The ratios table of docs/benchmarks.md from several matrix runs (benches/matrix.sh results):
each cell's ratio is taken within one run, and the median of the runs' ratios is compared
with the goal.

    python3 benches/goals.py RUN1/results.jsonl RUN2/results.jsonl ...
"""
import json, sys, statistics
runs = sys.argv[1:]
def load(p):
    return [json.loads(l) for l in open(p)]
data = [load(p) for p in runs]
def v(rows, client, server, transport, size, conc):
    for r in rows:
        if r.get('scenario')=='echo' and r.get('client')==client and r.get('server')==server and r.get('transport')==transport and r['payload_bytes']==size and r['concurrency']==conc:
            return r['calls_per_s']
cells=[(16,1),(16,16),(65536,1),(65536,16)]
names={ (16,1):"16 B × 1",(16,16):"16 B × 16",(65536,1):"64 KiB × 1",(65536,16):"64 KiB × 16"}
def cell_ratios(a, b, t, s, c, tb=None):
    out=[]
    for rows in data:
        x=v(rows,*a,t,s,c); y=v(rows,*b,tb or t,s,c)
        if x and y: out.append(x/y)
    return out
def fmt(rs, pct=False):
    if not rs: return "-"
    med=statistics.median(rs)
    if pct: return f"{med*100:.0f}% ({', '.join(f'{r*100:.0f}' for r in rs)})"
    return f"{med:.2f}× ({', '.join(f'{r:.2f}' for r in rs)})"
rows_out=[]
def goal(label, a, b, t, cs, threshold, pct=False):
    for s,c in cs:
        rs=cell_ratios(a,b,t,s,c)
        if not rs: continue
        med=statistics.median(rs)
        rows_out.append(f"| {label} | {t} {names[(s,c)]} | {fmt(rs,pct)} | {'yes' if med>=threshold else 'no'} |")
        label=""
goal("our pair ≥ 2× rmcp↔rmcp `--pipes`", ('mcpwire','mcpwire'), ('rmcp','rmcp-pipes'), 'stdio', [(16,1),(16,16)], 2)
goal("our pair ≥ 1.2× rmcp↔rmcp `--pipes`", ('mcpwire','mcpwire'), ('rmcp','rmcp-pipes'), 'stdio', [(65536,1)], 1.2)
goal("our pair ≥ 70% of floor↔floor", ('mcpwire','mcpwire'), ('floor','floor'), 'stdio', [(16,1),(16,16),(65536,1)], 0.7, pct=True)
goal("in-process ≥ 3× rmcp's channel", ('mcpwire','mcpwire'), ('rmcp','rmcp'), 'inproc-channel', cells, 3)
goal("our client beats rmcp's (floor server)", ('mcpwire','floor'), ('rmcp','floor'), 'stdio', cells, 1)
goal("our client beats rmcp's (rmcp `--pipes` server)", ('mcpwire','rmcp-pipes'), ('rmcp','rmcp-pipes'), 'stdio', cells, 1)
goal("our client beats rmcp's (our server)", ('mcpwire','mcpwire'), ('rmcp','mcpwire'), 'stdio', cells, 1)
goal("our server beats rmcp `--pipes` (floor client)", ('floor','mcpwire'), ('floor','rmcp-pipes'), 'stdio', cells[:3], 1)
goal("our server beats rmcp `--pipes` (our client)", ('mcpwire','mcpwire'), ('mcpwire','rmcp-pipes'), 'stdio', cells, 1)
goal("our server beats rmcp `--pipes` (rmcp's client)", ('rmcp','mcpwire'), ('rmcp','rmcp-pipes'), 'stdio', cells, 1)
goal("Streamable HTTP ≥ 3× rmcp (sessions)", ('mcpwire','mcpwire'), ('rmcp','rmcp'), 'http-sessions', cells, 3)
goal("Streamable HTTP ≥ 3× rmcp (stateless)", ('mcpwire','mcpwire'), ('rmcp','rmcp'), 'http-stateless', cells, 3)
goal("HTTP: our client vs rmcp's (rmcp server, sessions)", ('mcpwire','rmcp'), ('rmcp','rmcp'), 'http-sessions', cells, 1)
goal("HTTP: our server vs rmcp's (our client, sessions)", ('mcpwire','mcpwire'), ('mcpwire','rmcp'), 'http-sessions', cells, 1)
goal("HTTP: our server vs rmcp's (our client, stateless)", ('mcpwire','mcpwire'), ('mcpwire','rmcp'), 'http-stateless', cells, 1)
def against_floor(label, a, t):
    for s,c in cells:
        rs=cell_ratios(a,('floor','floor'),t,s,c,'http-floor')
        if rs:
            rows_out.append(f"| {label} | {t} {names[(s,c)]} | {fmt(rs,True)} | (no goal) |")
            label=""
against_floor("HTTP: our pair against the HTTP floor", ('mcpwire','mcpwire'), 'http-sessions')
against_floor("", ('mcpwire','mcpwire'), 'http-stateless')
against_floor("HTTP: rmcp's pair against the HTTP floor", ('rmcp','rmcp'), 'http-sessions')
against_floor("", ('rmcp','rmcp'), 'http-stateless')
print("| goal | cell | median ratio (each run) | met |")
print("|---|---|---:|---|")
print("\n".join(rows_out))
# RSS
print()
print("| server | transport | peak RSS, KiB (each run) |")
print("|---|---|---:|")
keys=[]
for rows in data:
    for r in rows:
        if r.get('scenario')=='server_peak_rss':
            k=(r.get('server'), r.get('transport'))
            if k not in keys: keys.append(k)
for k in sorted(keys, key=lambda k: (str(k[0]), str(k[1]))):
    vals=[]
    for rows in data:
        kbs=[r.get('kb') for r in rows if r.get('scenario')=='server_peak_rss' and (r.get('server'),r.get('transport'))==k and isinstance(r.get('kb'), int)]
        if kbs: vals.append(str(max(kbs)))
    print(f"| {k[0]} | {k[1]} | {', '.join(vals)} |")
