#!/usr/bin/env python3
"""What a reconnect costs a client with many subscriptions (issue 31 §3): the bytes the
server writes and the time to the answer of a `subscribe` of N exact entity topics,
sent whole (no `since`: every state again) and resumed (`since`: only what changed
while the client was away), on the local backend over a Unix socket.

usage: python3 bench/resume.py [BINARY] [N] [CHANGED] [RUNS]

N topics (default 10,000), CHANGED of them followed by another connection while the
first is away (default 10), RUNS fresh servers (default 5); prints medians.
"""
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BINARY = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / ".build/release/netmodel")
N = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
CHANGED = int(sys.argv[3]) if len(sys.argv) > 3 else 10
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 5


class Line:
    """A bare NDJSON connection that counts the bytes it reads."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.buffer, self.read_bytes, self.next_id = b"", 0, 0
        self.through = 0  # the last `through` read: where the view stands

    def call(self, method, params):
        self.next_id += 1
        self.sock.sendall(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                      "params": params}).encode() + b"\n")
        while True:
            while b"\n" not in self.buffer:
                data = self.sock.recv(1 << 20)
                assert data, "the server closed the connection"
                self.read_bytes += len(data)
                self.buffer += data
            line, self.buffer = self.buffer.split(b"\n", 1)
            message = json.loads(line)
            if message.get("method") == "stateChanged" and "through" in message["params"]:
                self.through = message["params"]["through"]
            if message.get("id") == self.next_id:
                assert "result" in message, message
                return message["result"]


def one_run():
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/nm.sock"
        server = subprocess.Popen([BINARY, "serve", "--no-stdio", f"--socket={path}", "--state-dir", folder,
                                   "--log-level", "warn"], stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while not Path(path).exists():
                assert time.monotonic() < deadline and server.poll() is None, "the server did not listen"
                time.sleep(0.01)
            topics = [{"type": "entity", "kind": "artist", "id": f"artist-{n:05d}"} for n in range(N)]
            first = Line(path)
            answer = first.call("subscribe", {"topics": topics})
            assert first.call("sync", {})["waiting"] == []  # the fetched states come before its answer
            since = {"instance": answer["instance"], "version": max(answer["version"], first.through)}
            first.sock.close()
            other = Line(path)
            for n in range(CHANGED):
                other.call("follow", {"kind": "artist", "id": f"artist-{n * (N // max(CHANGED, 1)):05d}", "await": True})
            figures = {}
            for name, params in (("whole", {"topics": topics}), ("resumed", {"topics": topics, "since": since})):
                again = Line(path)
                started = time.perf_counter()
                result = again.call("subscribe", params)
                figures[name] = (again.read_bytes, (time.perf_counter() - started) * 1000, len(result["snapshot"]))
                again.sock.close()
            assert figures["resumed"][2] == CHANGED, figures
            return figures
        finally:
            server.terminate()
            server.wait(10)


def main():
    runs = [one_run() for _ in range(RUNS)]
    print(f"# a reconnect with {N:,} subscriptions, {CHANGED} changed while away; medians of {RUNS} runs")
    print(f"# {BINARY}")
    print("| subscribe | bytes written | ms to the answer | states in the snapshot |")
    print("| --- | ---: | ---: | ---: |")
    for name in ("whole", "resumed"):
        size = statistics.median(r[name][0] for r in runs)
        ms = statistics.median(r[name][1] for r in runs)
        print(f"| {name} | {size:,.0f} | {ms:.1f} | {runs[0][name][2]:,} |")


if __name__ == "__main__":
    main()
