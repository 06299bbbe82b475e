#!/usr/bin/env python3
"""The first read after a restart (issue 31 §4): spawn → the answer of one
`getFollowState` on the REST backend against the Artsy demo server on loopback,
whose state reads take DELAY_MS (a remote API's round trip), with the last run's
states kept (`--max-warm-bytes` default: a warm start, answered stale at once) and
without (`--max-warm-bytes 0`: the read waits for the API). Peers: TanStack Query's
persistQueryClient and Apollo's cache persistence do the same in-process.

usage: python3 bench/warm_start.py [BINARY] [RUNS] [DELAY_MS]
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
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 9
DELAY_MS = int(sys.argv[3]) if len(sys.argv) > 3 else 150


def serve(root, config, state, warm_bytes):
    return rpcio.ServerProc(
        [BINARY, "serve", "--backend", "rest", "--config", str(config), "--state-dir", str(state),
         "--max-warm-bytes", str(warm_bytes), "--log-level", "warn"], dict(os.environ), root / "stderr.txt")


def one(api, root, warm_bytes):
    """ms from spawn to the first read's answer after a run that read 1,000 artists."""
    config = root / "config.json"
    config.write_text(json.dumps(api.config()))
    state = Path(tempfile.mkdtemp(dir=root))
    api.faults()
    first = serve(root, config, state, warm_bytes)
    for n in range(0, 1000, 25):
        first.conn.send([first.conn.request_obj("getFollowState", {"kind": "artist", "id": f"a{n + i}"}, id=i)
                         for i in range(25)])
        first.conn.recv_reply(timeout=30)
    first.stop()
    api.faults({"method": "GET", "path": "follow/artists", "delay_ms": DELAY_MS, "times": None})
    started = time.perf_counter()
    again = serve(root, config, state, warm_bytes)
    state_now = again.conn.result("getFollowState", {"kind": "artist", "id": "a500"}, timeout=30)
    elapsed = (time.perf_counter() - started) * 1000
    again.stop()
    return elapsed, state_now.get("stale", False)


def main():
    root = Path(tempfile.mkdtemp(prefix="nm-warm-"))
    api = Artsy(root)
    try:
        print(f"# first read after a restart; reads of the API take {DELAY_MS} ms; medians of {RUNS}")
        print(f"# {BINARY}")
        print("| start | spawn → first getFollowState ms | answered stale |")
        print("| --- | ---: | --- |")
        for name, warm_bytes in (("cold (--max-warm-bytes 0)", 0), ("warm (default)", 4 << 20)):
            runs = [one(api, root, warm_bytes) for _ in range(RUNS)]
            print(f"| {name} | {statistics.median(r[0] for r in runs):.1f} | {runs[-1][1]} |", flush=True)
    finally:
        api.stop()


main()
