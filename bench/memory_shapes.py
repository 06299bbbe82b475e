#!/usr/bin/env python3
"""One load shape at a time, three times in one server: does RSS come back?

usage: python3 bench/memory_shapes.py SHAPE [BINARY]

The companion of bench/memory.py, for finding which load leaves memory behind.
Same seeding (5,000 follows over kinds k0..k999) and server flags (idle eviction
after 1 s).  SHAPE is any of these letters, done on fresh connections per cycle:

  e  getFollowState of 100,000 entities (pipelined)
  l  fetchList of following/k0..k999
  s  one subscription to 1,000 exact entity topics
  S  one subscription to all 100,000 entities (one request)
  L  one subscription to the 1,000 lists
  C  100 connections, each subscribed to 1,000 of the entities

then the connections close and the script waits until stats.entities and
lists.held are 0.  Prints per cycle: RSS at the start, at the peak (after the
load), after eviction, and the difference.
"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memory as m  # noqa: E402

mode = sys.argv[1]
BINARY = sys.argv[2] if len(sys.argv) > 2 else ".build/release/netmodel"
work = tempfile.mkdtemp(prefix="nm-shapes-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None); os.chmod(work, 0o700)
sp = os.path.join(work, "nm.sock"); state = os.path.join(work, "state")
p, c = m.start_server(BINARY, sp, state, [])
c.pipeline([m.req(i+1, "follow", m.entity(i, 1000)) for i in range(5000)], 256); m.settle(c); c.sock.close(); m.stop_server(p)
p, c = m.start_server(BINARY, sp, state, ["--max-entities","200000","--entity-idle-ms","1000","--max-lists","2000","--list-idle-ms","1000"])
time.sleep(0.3)
def rss(): return m.proc_status(p.pid)["VmRSS"]/1e6
b = rss()
for cyc in range(3):
    d = m.Conn(sp)
    if "e" in mode: d.pipeline([m.req(i+1, "getFollowState", m.entity(i, 1000)) for i in range(100000)], 256)
    if "l" in mode: d.pipeline([m.req(i+1, "fetchList", {"list": f"following/k{i}"}) for i in range(1000)], 256)
    if "s" in mode:
        topics = [{"type":"entity", **m.entity(n,1000)} for n in range(0,100000,100)]
        d.call("subscribe", {"topics": topics}, rid="sub")
    extra = []
    if "S" in mode:
        d.call("subscribe", {"topics": [{"type":"entity", **m.entity(n,1000)} for n in range(100000)]}, rid="S", timeout=120)
    if "L" in mode:
        d.call("subscribe", {"topics": [{"type":"list","list":f"following/k{i}"} for i in range(1000)]}, rid="L", timeout=120)
    if "C" in mode:
        for ci in range(100):
            x = m.Conn(sp); extra.append(x)
            x.call("subscribe", {"topics": [{"type":"entity", **m.entity(n,1000)} for n in range(ci,100000,100)]}, rid="C", timeout=120)
    peak = rss()
    for x in extra: x.sock.close()
    d.sock.close()
    for i in range(40):
        st = c.call("stats", rid="s")
        if st["entities"]==0 and st["lists"]["held"]==0: break
        time.sleep(0.25)
    time.sleep(0.5)
    print(mode, "cycle", cyc, "base", round(b,2), "peak", round(peak,2), "after", round(rss(),2), "delta", round(rss()-b,2), st["entities"], st["lists"]["held"])
m.stop_server(p)
shutil.rmtree(work, ignore_errors=True)
