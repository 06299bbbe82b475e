#!/usr/bin/env python3
"""HTTP round trips per second through netmodel's REST backend, against the same
loopback server bench/curlmulti.c measures (bench/httpserver.c).

Sends REQUESTS `getFollowState` requests for distinct artists in one write (so
each is one HTTP GET: nothing to share, nothing cached), reads the replies, and
prints one JSON line like curlmulti's: requests, in_flight, seconds, per_second,
connections (netmodel's `stats.backend.http.connectionsOpened`).

  python3 bench/http_netmodel.py --url http://127.0.0.1:PORT --in-flight 16 --requests 50000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--requests", type=int, default=50000)
    parser.add_argument("--bin", default=os.environ.get("NETMODEL_BIN", str(REPO / ".build/release/netmodel")))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nm-httpbench-") as root:
        config = {
            "environments": {"bench": args.url},
            "maxInFlight": args.in_flight,
            "kinds": {"artist": {
                "follow": {"method": "POST", "path": "/v1/me/follow/artist/{id}"},
                "unfollow": {"method": "DELETE", "path": "/v1/me/follow/artist/{id}"},
                "state": {"method": "GET", "path": "/v1/me/follow/artist/{id}", "following": {"pointer": "/following"}},
            }},
        }
        Path(root, "config.json").write_text(json.dumps(config))
        proc = subprocess.Popen(
            [args.bin, "serve", "--backend", "rest", "--config", str(Path(root, "config.json")), "--state-dir", root,
             "--max-api-calls-per-second", "0"],  # the floor is measured unthrottled
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        payload = "".join(
            json.dumps({"jsonrpc": "2.0", "id": n, "method": "getFollowState", "params": {"kind": "artist", "id": f"a{n}"}})
            + "\n" for n in range(args.requests)).encode()
        done = threading.Event()
        errors = [0]

        def read():
            count = 0
            for line in proc.stdout:
                if b'"result"' not in line:
                    errors[0] += 1
                count += 1
                if count == args.requests:
                    done.set()
                    return

        threading.Thread(target=read, daemon=True).start()
        started = time.monotonic()
        proc.stdin.write(payload)
        proc.stdin.flush()
        done.wait(timeout=600)
        seconds = time.monotonic() - started
        proc.stdin.write(b'{"jsonrpc":"2.0","id":"s","method":"stats"}\n')
        proc.stdin.flush()
        stats = json.loads(proc.stdout.readline())["result"]
        proc.stdin.close()
        proc.wait()
    print(json.dumps({
        "requests": args.requests, "in_flight": args.in_flight, "seconds": round(seconds, 4),
        "per_second": round(args.requests / seconds), "connections": stats["backend"]["http"]["connectionsOpened"],
        "errors": errors[0],
    }, separators=(",", ":")))


if __name__ == "__main__":
    main()
