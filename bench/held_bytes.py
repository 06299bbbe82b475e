#!/usr/bin/env python3
"""RSS under --max-held-bytes (issue 30 §3): the same binary with the bound off (0)
and on, for shapes whose counts are small but whose bytes are not, against the
Artsy demo server on loopback (REST backend).

usage: python3 bench/held_bytes.py [BINARY] [RUNS]

  page     one list page of 200,000 tiny items (fetchList)
  details  30 artists shown (setInterfaceState visible, so preloaded) whose detail
           is 1.3 MB each, then hidden again (nothing holds them)

Idle eviction is off (--entity-idle-ms 0, --list-idle-ms 0) so that only the bound
evicts. Prints, per shape and bound, the median over RUNS fresh servers of ΔRSS (after −
before, MB), stats.heldBytes, and the list's state.
"""
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "Tests" / "interop"))
import rpcio  # noqa: E402
from test_rest import Artsy  # noqa: E402

BINARY = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / ".build/release/netmodel")
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
BOUNDS = [0, 16 << 20]
FEED = {"feed": {
    "method": "GET", "path": "/api/v1/me/follow/artists",
    "paging": {"style": "cursor", "parameter": "cursor", "next": "/next"}, "items": "/items",
    "item": {"kind": "artist", "id": "/artist/id", "following": True, "attributes": "/artist"},
    "dependsOn": ["artist"]}}


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def wait(c, predicate, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = c.result("stats", {}, timeout=60)
        if predicate(s):
            return s
        time.sleep(0.1)
    raise SystemExit("not reached")


def one(shape, bound, root):
    api = Artsy(root)
    try:
        config = api.config(lists=FEED)
        path = root / "config.json"
        path.write_text(json.dumps(config))
        state = tempfile.mkdtemp(dir=root)
        server = rpcio.ServerProc(
            [BINARY, "serve", "--backend", "rest", "--config", str(path), "--state-dir", state,
             "--max-held-bytes", str(bound), "--entity-idle-ms", "0", "--list-idle-ms", "0"], dict(os.environ), root / "stderr.txt")
        c = server.conn
        c.result("stats", {})
        before = rss(server.pid)
        outcome = ""
        if shape == "page":
            items = [{"id": f"f{n}", "artist": {"id": f"a{n}"}} for n in range(200_000)]
            api.faults({"path": "follow/artists$", "status": 200, "times": None,
                        "body": {"items": items, "next": ""}})
            outcome = c.result("fetchList", {"list": "feed", "await": True}, timeout=120)["state"]
        else:
            blob = "x" * 1_300_000
            api.faults({"path": "artist/[^/]+$", "method": "GET", "status": 200, "times": None,
                        "body": {"id": "a", "bio": blob}})
            items = [{"kind": "artist", "id": f"d{n}"} for n in range(30)]
            c.result("setInterfaceState", {"items": items, "state": "visible"})
            wait(c, lambda s: s["preload"]["detailCalls"] >= 30 and s["preload"]["inFlight"] == 0)
            c.result("setInterfaceState", {"items": items, "state": "none"})
            # Released, they go at the eviction clock's next tick (15 s without an idle time).
            if bound:
                wait(c, lambda s: s["heldBytes"] <= bound, timeout=40)
            else:
                time.sleep(16)
        stats = c.result("stats", {})
        after = rss(server.pid)
        server.proc.terminate()
        server.proc.wait(10)
        return (after - before) / 1e6, stats["heldBytes"], outcome
    finally:
        api.stop()


def main():
    root = Path(tempfile.mkdtemp(prefix="nm-held-"))
    print(f"binary {BINARY}; {RUNS} runs each; medians")
    print("| shape | --max-held-bytes | ΔRSS MB | stats.heldBytes | list |")
    print("|---|---|---|---|---|")
    for shape in ("page", "details"):
        for bound in BOUNDS:
            runs = [one(shape, bound, root) for _ in range(RUNS)]
            print(f"| {shape} | {bound} | {statistics.median(r[0] for r in runs):.1f} | "
                  f"{statistics.median(r[1] for r in runs)} | {runs[-1][2]} |", flush=True)


main()
