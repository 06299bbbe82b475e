#!/usr/bin/env python3
"""Turns the raw lines written by bench/models.sh into its markdown report.

usage: python3 bench/models_report.py bench/results/models-<date>.raw.txt

Every figure is the median over the runs that were clean (status=ok, no id
mismatches, no malformed replies); failed runs are counted next to the figure
and listed at the end, with what the script saw of the server (a crash, an
exit status other than 0, no exit after SIGTERM).
"""
import statistics, sys
from collections import defaultdict

meta, rows = {}, []
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("#"):
        k, _, v = line[1:].strip().partition("=")
        meta[k] = v
    elif line:
        rows.append(dict(t.split("=", 1) for t in line.split() if "=" in t))

def ok(r):
    return r.get("status") == "ok" and r.get("mismatches", "0") == "0" and r.get("malformed", "0") == "0"

def med(rs, f):
    v = [float(r[f]) for r in rs if ok(r) and r.get(f, "") not in ("", None)]
    return statistics.median(v) if v else None

def fmt(x, nd=1, comma=False):
    if x is None:
        return "—"
    return f"{x:,.0f}" if comma else f"{x:.{nd}f}"

def failed(rs):
    n = sum(1 for r in rs if not ok(r))
    return f" ({n} failed)" if n else ""

fails = [r for r in rows if r.get("part") in ("rpc", "fanout", "memory", "stalled") and not ok(r)]
findings = [r for r in rows if r.get("part") == "server"]

print(f"# Network-model benchmark, {meta.get('date')}\n")
print(f"commit {meta.get('commit')}, binary `{meta.get('netmodel')}`; {meta.get('cpu')}, "
      f"{meta.get('cores')} cores, Linux {meta.get('kernel')}. Medians of {meta.get('runs')} runs "
      f"(memory: {meta.get('mem_runs')}). Load average before {meta.get('load_before')}, "
      f"after {meta.get('load_after')}. State folders: {meta.get('slow_state')} for 1–2 (disk), "
      f"{meta.get('fast_state')} for the tmpfs fan-out and 3–4.\n")

# 1
print("## 1. Cached `getFollowState` against the null server\n")
print(f"Request `getFollowState {{\"kind\":\"artist\",\"id\":\"banksy\"}}`; ping-pong "
      f"{meta.get('pingpong_count')} requests, pipelined {meta.get('pipelined_count')} with "
      f"{meta.get('inflight')} in flight.\n")
cells = defaultdict(list)
for r in rows:
    if r.get("part") == "rpc":
        awake = r.get("awake", "0") if r["mode"] == "pingpong" else "-"
        cells[(r["target"], r["transport"], r["framing"], r["mode"], awake)].append(r)

print("Pipelined:\n")
print("| transport | framing | null req/s | netmodel req/s | ratio (≥ 0.70) | netmodel p50 / p99 µs under load |")
print("| --- | --- | ---: | ---: | ---: | ---: |")
for transport in ("stdio", "socket"):
    for framing in ("lsp", "ndjson"):
        npl, mpl = cells[("null", transport, framing, "pipelined", "-")], cells[("netmodel", transport, framing, "pipelined", "-")]
        nr, mr = med(npl, "rps"), med(mpl, "rps")
        rr = mr / nr if nr and mr else None
        mark = "" if rr is None else (" pass" if rr >= 0.70 else " **FAIL**")
        print(f"| {transport} | {framing} | {fmt(nr, comma=True)}{failed(npl)} | {fmt(mr, comma=True)}{failed(mpl)} "
              f"| {fmt(rr, 2)}{mark} | {fmt(med(mpl, 'p50_us'), 0, comma=True)} / {fmt(med(mpl, 'p99_us'), 0, comma=True)} |")

print("\nPing-pong (one request in flight). \"other vCPU\": idle, or kept busy by a spinning loop; "
      "on a VM an idle vCPU's wake-up can dominate the figure (see bench/README.md):\n")
print("| transport | framing | other vCPU | null p50 µs | netmodel p50 µs | p50 ratio (≤ 1.25) | netmodel − null µs "
      "| null p99 µs | netmodel p99 µs |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
awakes = sorted({k[4] for k in cells if k[3] == "pingpong"})
for awake in awakes:
    for transport in ("stdio", "socket"):
        for framing in ("lsp", "ndjson"):
            npp = cells[("null", transport, framing, "pingpong", awake)]
            mpp = cells[("netmodel", transport, framing, "pingpong", awake)]
            if not npp and not mpp:
                continue
            n50, m50 = med(npp, "p50_us"), med(mpp, "p50_us")
            r50 = m50 / n50 if n50 and m50 else None
            mark = "" if r50 is None else (" pass" if r50 <= 1.25 else " **FAIL**")
            diff = m50 - n50 if n50 and m50 else None
            print(f"| {transport} | {framing} | {'busy' if awake == '1' else 'idle'} | {fmt(n50)}{failed(npp)} "
                  f"| {fmt(m50)}{failed(mpp)} | {fmt(r50, 2)}{mark} | {fmt(diff)} "
                  f"| {fmt(med(npp, 'p99_us'))} | {fmt(med(mpp, 'p99_us'))} |")

sock = [r for r in rows if r.get("part") == "rpc" and r.get("target") == "netmodel" and "cache_hits" in r]
if sock:
    hits = sum(int(r["cache_hits"]) for r in sock)
    reqs = sum(int(r["gfs_requests"]) for r in sock)
    reads = [int(r["backend_reads"]) for r in sock]
    print(f"\nCache proof (socket runs, `stats` after each): {hits:,} of {reqs:,} getFollowState requests "
          f"answered from the cache; backend reads per server: {min(reads)}–{max(reads)}.")
for r in rows:
    if r.get("part") == "stdio_cache":
        print(f"Stdio check: {int(r['cache_hits']):,} of {int(r['requests']):,} requests from the cache, "
              f"{r['backend_reads']} backend read(s).")

# 2
print(f"\n## 2. Fan-out: one `follow` reaching {meta.get('fanout_conns')} subscribers\n")
print("Time from writing `follow` until the last subscribed connection holds a `stateChanged` with "
      f"`following: true`. Each run: a fresh server, {meta.get('fanout_iterations')} toggles.\n")
print("| server (state folder) | subscribers | first follow ms (≤ 10) | range over runs | follow ms, median of toggles "
      "| unfollow ms | median connection ms | subscribe all ms | seq gaps | stale versions |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
names = {"floor": "null fan-out server (floor)", "disk": "netmodel (disk)", "tmpfs": "netmodel (tmpfs)"}
fan = defaultdict(list)
for r in rows:
    if r.get("part") == "fanout":
        fan[(r["storage"], int(r["conns"]))].append(r)
order = {"floor": 0, "disk": 1, "tmpfs": 2}
for (storage, conns), rs in sorted(fan.items(), key=lambda kv: (-kv[0][1], order.get(kv[0][0], 9))):
    first = med(rs, "first_ms")
    target = storage != "floor" and conns >= 1000
    mark = "" if first is None or not target else (" pass" if first <= 10 else " **FAIL**")
    firsts = [float(r["first_ms"]) for r in rs if ok(r)]
    span = f"{min(firsts):.1f}–{max(firsts):.1f}" if firsts else "—"
    gaps = sum(int(r.get("seq_gaps", 0)) for r in rs)
    stale = sum(int(r.get("stale_versions", 0)) for r in rs)
    print(f"| {names.get(storage, storage)} | {conns:,} | {fmt(first, 2)}{mark}{failed(rs)} | {span} | "
          f"{fmt(med(rs, 'follow_ms'), 2)} | {fmt(med(rs, 'unfollow_ms'), 2)} | {fmt(med(rs, 'median_conn_ms'), 2)} | "
          f"{'—' if storage == 'floor' else fmt(med(rs, 'subscribe_ms'), 1)} | {gaps} | {stale} |")

# 3
print("\n## 3. Memory per entity\n")
print("One connection pipelines one request per distinct id (`artist`/`a0000001`…, 256 in flight); "
      "ΔRSS = `stats.residentMemoryBytes` after − before; peak = VmHWM.\n")
print("| requests | entities | ΔRSS MB | bytes/entity (≤ 160) | peak bytes/entity | req/s |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
groups = defaultdict(list)
for r in rows:
    if r.get("part") == "memory":
        groups[(r["method"], int(r["count"]))].append(r)
for (method, count), rs in sorted(groups.items(), key=lambda kv: (kv[0][0] != "getFollowState", -kv[0][1])):
    bpe = med(rs, "bytes_per_entity")
    mark = "" if bpe is None else (" pass" if bpe <= 160 else " **FAIL**")
    d_mb = med([dict(r, d=str((int(r["rss_after"]) - int(r["rss_before"])) / 1e6)) for r in rs], "d")
    ents = med([dict(r, e=str(int(r["entities_after"]) - int(r["entities_before"]))) for r in rs], "e")
    print(f"| {count:,} × `{method}` | {fmt(ents, comma=True)} | {fmt(d_mb)} | {fmt(bpe)}{mark}{failed(rs)} "
          f"| {fmt(med(rs, 'peak_bytes_per_entity'))} | {fmt(med(rs, 'rps'), comma=True)} |")

groups = defaultdict(list)
for r in rows:
    if r.get("part") == "memory_local":
        d = int(r["rss_loaded"]) - int(r["rss_empty"])
        groups[int(r["follows"])].append(dict(r, d=str(d), per=str(d / int(r["follows"]))))
for follows, rs in sorted(groups.items()):
    print(f"| local backend alone: restart with {follows:,} follows in journal.log "
          f"(store: {rs[0]['entities']} entities) | — | {fmt(med(rs, 'd') / 1e6)} | "
          f"{fmt(med(rs, 'per'))} per follow | — | — |")

# 4
print(f"\n## 4. A subscriber that never reads, its entity toggled {meta.get('toggles')} times\n")
print("| toggler window | state changes | notifications sent | coalesced | RSS growth MB (≤ 10) | peak growth MB "
      "| toggles/s | final state delivered |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
groups = defaultdict(list)
for r in rows:
    if r.get("part") == "stalled":
        groups[int(r["inflight"])].append(r)
for window, rs in sorted(groups.items(), reverse=True):
    growth = med(rs, "rss_growth_mb")
    mark = "" if growth is None else (" pass" if growth <= 10 else " **FAIL**")
    changes = med([dict(r, c=str(int(r["coalesced"]) + int(r["sent"]))) for r in rs], "c")
    delivered = sum(int(r.get("final_ok", 0)) for r in rs)
    print(f"| {window} | {fmt(changes, comma=True)} | {fmt(med(rs, 'sent'), comma=True)} | "
          f"{fmt(med(rs, 'coalesced'), comma=True)} | {fmt(growth, 2)}{mark}{failed(rs)} | "
          f"{fmt(med(rs, 'peak_growth_mb'), 2)} | {fmt(med(rs, 'rps'), comma=True)} | {delivered}/{len(rs)} runs |")

if fails or findings:
    print("\n## Failed runs and server findings\n")
    for r in fails:
        print("- " + " ".join(f"{k}={v}" for k, v in r.items()))
    for r in findings:
        print(f"- server: {r['what']}: {r['finding']}")
