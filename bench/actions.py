#!/usr/bin/env python3
"""Backend calls per user action, and a scroll with preload, through the real
netmodel binary on the REST backend against the Artsy demo server (examples/artsy).

Calls are counted by the server (GET /_control/stats), never by netmodel. Prints a
markdown report; run it with `python3 bench/actions.py [--runs N] [--bin PATH]`.

1. Calls per user action against the physical minimum:
   - 10 quick toggles of one artist (follow/unfollow alternating, no await): the
     minimum is 1 call per direction that must reach the backend (here 1: the last
     intent differs from the first confirmed state by one step, plus at most one in
     flight when the toggles start) — the protocol promises at most 2;
   - 100 concurrent reads of one profile (refresh): minimum 1;
   - 50 concurrent reads of distinct artists (a batchable kind): minimum 1
     (maxIds is 50).
2. Scroll: 1,000 artists, 20 visible and 40 in preload ahead, the window moving 5
   items per 16 ms frame. Backend calls made against the minimum (one detail per item
   that entered the range and one batched state call per 50 such items), and the time
   from an item entering preload until its loaded state is pushed to a subscriber
   (median and p95 over the items that were loaded). Run with the API answering at
   once, with 50 ms a call, and with 300 ms detail calls (the rest at once). Detail
   calls for items out of range: those the server received more than 5 ms after the
   bench had set their item to `none` (the server logs each request's arrival on the
   shared monotonic clock); calls already on the wire arrive before that.

`--max-in-flight N` overrides the configuration's `maxInFlight` (connections).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class Artsy:
    def __init__(self, root: Path):
        port_file = root / "port"
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "examples/artsy/server.py"), "--port", "0", "--port-file", str(port_file), "--quiet"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not (port_file.exists() and port_file.read_text().strip()):
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{port_file.read_text().strip()}"

    def control(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + "/_control/" + path, data=data, method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


class Netmodel:
    """netmodel serve over stdio; replies by id, notifications to a callback."""

    def __init__(self, binary: str, config: Path, state: Path):
        self.proc = subprocess.Popen([binary, "serve", "--backend", "rest", "--config", str(config), "--state-dir", str(state),
                                      "--max-api-calls-per-second", "0"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.replies: dict = {}
        self.cond = threading.Condition()
        self.on_note = lambda params, at: None
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            at = time.monotonic()
            message = json.loads(line)
            if "id" in message:
                with self.cond:
                    self.replies[message["id"]] = message
                    self.cond.notify_all()
            else:
                self.on_note(message["params"], at)

    def send(self, method, params):
        self.next_id += 1
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}) + "\n").encode())
        self.proc.stdin.flush()
        return self.next_id

    def wait(self, ids, timeout=30):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not all(i in self.replies for i in ids):
                if not self.cond.wait(timeout=deadline - time.monotonic()):
                    raise TimeoutError(ids)
        return [self.replies.pop(i) for i in ids]

    def call(self, method, params):
        return self.wait([self.send(method, params)])[0]

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait()


def routes(api):
    return api.control("GET", "stats")["routes"]


SCROLLS = [("all", 0), ("all", 50), ("detail", 300)]  # which calls are slowed, and by how much


def run_once(binary: str, root: Path, max_in_flight: int | None) -> dict:
    api = Artsy(root)
    config = json.loads((REPO / "examples/artsy/config.json").read_text())
    config["environments"]["local"] = api.url
    if max_in_flight:
        config["maxInFlight"] = max_in_flight
    (root / "config.json").write_text(json.dumps(config))
    nm = Netmodel(binary, root / "config.json", root / "state")
    out = {}
    try:
        # 1a. ten quick toggles: banksy is known unfollowed first.
        nm.call("getFollowState", {"kind": "artist", "id": "banksy"})
        api.control("POST", "reset")
        ids = [nm.send("follow" if n % 2 == 0 else "unfollow", {"kind": "artist", "id": "banksy"}) for n in range(10)]
        nm.wait(ids)
        time.sleep(0.5)
        r = routes(api)
        out["toggles"] = r.get("POST /api/v1/me/follow/artist", 0) + r.get("DELETE /api/v1/me/follow/artist/{id}", 0)
        # 1b. 100 concurrent reads of one profile.
        api.control("POST", "reset")
        nm.wait([nm.send("getFollowState", {"kind": "profile", "id": "white-cube", "refresh": True}) for _ in range(100)])
        out["reads_one"] = routes(api).get("GET /api/v1/me/follow/profile/{id}", 0)
        # 1c. 50 concurrent reads of distinct artists.
        api.control("POST", "reset")
        nm.wait([nm.send("getFollowState", {"kind": "artist", "id": f"distinct-{n}"}) for n in range(50)])
        out["reads_distinct"] = routes(api).get("GET /api/v1/me/follow/artists", 0)

        # 2. Scroll, with the API answering at once, with 50 ms per call, with slow details.
        for which, latency in SCROLLS:
            out[f"scroll-{which}-{latency}"] = scroll(api, nm, latency, which)
    finally:
        nm.stop()
        api.stop()
    return out


def scroll(api, nm, latency_ms, which="all"):
    names = [f"scroll-{which}-{latency_ms}-{n:04d}" for n in range(1000)]
    api.control("POST", "reset")
    api.control("POST", "follows", {"artist": names})  # in the catalogue, and followed
    if latency_ms:
        path = {"path": "^/api/v1/artist/"} if which == "detail" else {}
        api.control("POST", "faults", [{"delay_ms": latency_ms, "times": None, **path}])
    before = routes(api)
    entered: dict = {}
    loaded: dict = {}

    def note(params, at):
        state = params["state"]
        if state.get("kind") == "artist" and state["id"] in entered and state["id"] not in loaded:
            if state["confirmed"] is not None and state["attributes"] is not None:
                loaded[state["id"]] = at

    nm.on_note = note
    subscription = nm.call("subscribe", {"topics": [{"type": "entity", "kind": "artist"}]})["result"]["subscription"]
    stats_before = nm.call("stats", {})["result"]["preload"]
    shown: dict = {}
    left_at: dict = {}
    started = time.monotonic()
    frames_with_new = 0
    for frame, top in enumerate(range(0, 941, 5)):
        wanted = {}
        for n in range(top, min(top + 20, 1000)):
            wanted[names[n]] = "visible"
        for n in range(min(top + 20, 1000), min(top + 60, 1000)):
            wanted[names[n]] = "preload"
        left = [i for i in shown if i not in wanted]
        now = time.monotonic()
        changes = {}
        for i, level in wanted.items():
            if shown.get(i) != level:
                changes.setdefault(level, []).append(i)
                if i not in entered:
                    entered[i] = now
        frames_with_new += 1
        if left:
            nm.send("setInterfaceState", {"items": [{"kind": "artist", "id": i} for i in left], "state": "none"})
            for i in left:
                left_at[i] = time.monotonic()
        for level, items in changes.items():
            nm.send("setInterfaceState", {"items": [{"kind": "artist", "id": i} for i in items], "state": level})
        shown = wanted
        sleep = started + (frame + 1) * 0.016 - time.monotonic()
        if sleep > 0:
            time.sleep(sleep)
    nm.send("setInterfaceState", {"items": [{"kind": "artist", "id": i} for i in shown], "state": "none"})
    for i in shown:
        left_at[i] = time.monotonic()
    time.sleep(1.0 + latency_ms / 100)
    while nm.call("stats", {})["result"]["preload"]["inFlight"]:
        time.sleep(0.1)
    api.control("DELETE", "faults")
    stats_api = api.control("GET", "stats")
    after = stats_api["routes"]
    prefix = "/api/v1/artist/"
    detail_log = [(e["path"][len(prefix):], e["at"]) for e in stats_api["log"] if e["path"].startswith(prefix)]
    out_of_range = [i for i, at in detail_log if i in left_at and at > left_at[i] + 0.005]
    stats = nm.call("stats", {})["result"]["preload"]
    nm.call("unsubscribe", {"subscription": subscription})
    latencies = sorted((loaded[i] - entered[i]) * 1000 for i in loaded)
    return dict(
        entered=len(entered), loaded=len(loaded), frames=frames_with_new,
        details=after.get("GET /api/v1/artist/{id}", 0) - before.get("GET /api/v1/artist/{id}", 0),
        states=after.get("GET /api/v1/me/follow/artists", 0) - before.get("GET /api/v1/me/follow/artists", 0),
        started=stats["started"] - stats_before["started"], cancelled=stats["cancelled"] - stats_before["cancelled"],
        out_of_range=len(out_of_range),
        p50=statistics.median(latencies) if latencies else float("nan"),
        p95=latencies[max(0, int(len(latencies) * 0.95) - 1)] if latencies else float("nan"),
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bin", default=os.environ.get("NETMODEL_BIN", str(REPO / ".build/release/netmodel")))
    parser.add_argument("--max-in-flight", type=int, default=None)
    args = parser.parse_args()
    results = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="nm-actions-") as root:
            results.append(run_once(args.bin, Path(root), args.max_in_flight))
    med = lambda key: statistics.median(r[key] for r in results)
    print(f"# Backend calls per user action — {time.strftime('%Y-%m-%d')}\n")
    limit = f" --max-in-flight {args.max_in_flight}" if args.max_in_flight else ""
    print(f"`python3 bench/actions.py --runs {args.runs}{limit}` ({args.bin}); medians of {args.runs} runs; calls counted by the Artsy demo server.\n")
    print("| action | calls | minimum | promised |\n| --- | ---: | ---: | ---: |")
    print(f"| 10 quick toggles of one artist (the first goes out at once; the last differs from what it confirmed) | {med('toggles'):g} | 2 | ≤ 2 |")
    print(f"| 100 concurrent reads of one profile | {med('reads_one'):g} | 1 | 1 |")
    print(f"| 50 concurrent reads of distinct artists (batched) | {med('reads_distinct'):g} | 1 | 1 |")
    for which, latency in SCROLLS:
        med = lambda key: statistics.median(r[f"scroll-{which}-{latency}"][key] for r in results)
        slow = f"API {latency} ms a call" if which == "all" else f"detail calls {latency} ms, the rest at once"
        print(f"\n## Scroll: 1,000 artists, 20 visible + 40 preload, 5 items per 16 ms frame, {slow}\n")
        print("| figure | median |\n| --- | ---: |")
        print(f"| items that entered the range | {med('entered'):g} |")
        print(f"| loads started / cancelled before their turn | {med('started'):g} / {med('cancelled'):g} |")
        print(f"| detail calls (at most one per started load; a call given up before it went out is not made) | {med('details'):g} |")
        print(f"| detail calls received > 5 ms after their item left the range (goal 0) | {med('out_of_range'):g} |")
        print(f"| batched state calls (minimum: one per frame bringing new items, {med('frames'):g}; 20 if all were known at once) | {med('states'):g} |")
        print(f"| items loaded and pushed | {med('loaded'):g} |")
        print(f"| entering the range → loaded state pushed, p50 / p95 | {med('p50'):.1f} ms / {med('p95'):.1f} ms |")
    print("\nraw:", json.dumps(results))


if __name__ == "__main__":
    main()
