#!/usr/bin/env python3
"""A subscriber that never reads, against an entity that changes 100,000 times.

usage: python3 bench/stalled.py --socket PATH [--pid PID] [--toggles 100000]
                                [--inflight 256] [--kind artist] [--id stalled]

1. Connection A subscribes to {type:"entity",kind,id}, reads the reply, and then
   stops reading.
2. Connection B reads `stats` (residentMemoryBytes, notifications) and then
   pipelines --toggles mutations of that entity, follow and unfollow in turn
   (no await), --inflight at a time, and reads every reply.  The toggles can
   only finish if a stalled reader never slows the server.
3. B waits until the backend settled (backend.calls stops growing), reads
   `stats` again, and, with --pid, the server's peak RSS (VmHWM) from /proc.
4. A starts reading: it drains what waited for it (the kernel's socket buffer
   plus the server's queue) until 300 ms pass quietly, and checks that the last
   state it got is the final one (following = the last toggle, highest version).

Prints one line of key=value pairs; rss_growth_mb is after - before from
`stats`, peak_growth_mb is VmHWM - before.  Exit status 0 when the toggles all
got replies and A's last state is the final one.
"""
import argparse
import json
import os
import select
import socket
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--toggles", type=int, default=100000)
    ap.add_argument("--inflight", type=int, default=256)
    ap.add_argument("--kind", default="artist")
    ap.add_argument("--id", default="stalled")
    ap.add_argument("--timeout", type=float, default=30.0)
    return ap.parse_args()


class Conn:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""

    def send(self, obj):
        self.sock.sendall(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    def lines(self, timeout):
        """Complete lines that arrive within `timeout` s (at least one read)."""
        r, _, _ = select.select([self.sock], [], [], timeout)
        if not r:
            return []
        data = self.sock.recv(1 << 20)
        if not data:
            raise EOFError("server closed the connection")
        self.buf += data
        *complete, self.buf = self.buf.split(b"\n")
        return complete

    def call(self, method, params=None, rid="x", timeout=30.0):
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines(0.5):
                reply = json.loads(line)
                if reply.get("id") == rid:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply["result"]
        raise TimeoutError(f"no reply to {method} within {timeout} s")


def peak_rss(pid):
    if not pid:
        return None
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def main():
    a = parse_args()
    entity = {"kind": a.kind, "id": a.id}
    out = {"mode": "stalled", "toggles": a.toggles, "inflight": a.inflight}

    stalled = Conn(a.socket)
    sub = stalled.call("subscribe", {"topics": [{"type": "entity", **entity}]}, rid=1)
    out["subscription"] = sub["subscription"]
    # From here on, A reads nothing until step 4.

    toggler = Conn(a.socket)
    before = toggler.call("stats", rid="s0")
    rss_before = before["residentMemoryBytes"]

    # Step 2: the toggles, pipelined.  Request ids are integers 1..N.
    t0 = time.monotonic()
    sent = replies = errors = 0
    last_progress = t0
    sock = toggler.sock
    sock.setblocking(False)
    pending_out = b""
    while replies < a.toggles:
        while sent < a.toggles and sent - replies < a.inflight:
            sent += 1
            method = "follow" if sent % 2 == 1 else "unfollow"
            pending_out += (
                b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"kind":"%s","id":"%s"}}\n'
                % (sent, method.encode(), a.kind.encode(), a.id.encode())
            )
        want_write = [sock] if pending_out else []
        r, w, _ = select.select([sock], want_write, [], 0.5)
        if w:
            try:
                n = sock.send(pending_out)
                pending_out = pending_out[n:]
            except BlockingIOError:
                pass
        if r:
            data = sock.recv(1 << 20)
            if not data:
                raise EOFError("server closed the toggling connection")
            toggler.buf += data
            *complete, toggler.buf = toggler.buf.split(b"\n")
            for line in complete:
                if b'"method"' in line[:40]:
                    continue  # not subscribed: none expected
                replies += 1
                if b'"result":' not in line:
                    errors += 1
                    if errors <= 3:
                        print(f"stalled: error reply: {line[:200]!r}", file=sys.stderr)
            last_progress = time.monotonic()
        elif time.monotonic() - last_progress > a.timeout:
            out["status"] = "timeout"
            break
    elapsed = time.monotonic() - t0
    sock.setblocking(True)
    out.update(replies=replies, errors=errors, elapsed_s=round(elapsed, 3),
               rps=round(replies / elapsed) if elapsed > 0 else 0)
    final_following = a.toggles % 2 == 1  # odd count: the last one was a follow

    # Step 3: settle, then measure.
    calls = None
    for _ in range(100):
        stats = toggler.call("stats", rid="s1")
        if stats["backend"]["calls"] == calls:
            break
        calls = stats["backend"]["calls"]
        time.sleep(0.1)
    rss_after = stats["residentMemoryBytes"]
    hwm = peak_rss(a.pid)
    if hwm is not None:
        hwm = max(hwm, rss_after)  # the kernel's counters are updated lazily
    out.update(
        rss_before=rss_before,
        rss_after=rss_after,
        rss_growth_mb=round((rss_after - rss_before) / 1e6, 2),
        peak_growth_mb=round((hwm - rss_before) / 1e6, 2) if hwm else "",
        coalesced=stats["notifications"]["coalesced"] - before["notifications"]["coalesced"],
        sent=stats["notifications"]["sent"] - before["notifications"]["sent"],
        backend_mutations=stats["backend"]["mutations"] - before["backend"]["mutations"],
    )

    # Step 4: A drains what waited for it.
    drained = 0
    last_state = None
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 0.3:
        got = stalled.lines(0.05)
        if got:
            quiet_since = time.monotonic()
        for line in got:
            msg = json.loads(line)
            if msg.get("method") == "stateChanged":
                drained += 1
                state = msg["params"]["state"]
                if last_state is None or state["version"] >= last_state["version"]:
                    last_state = state
    final = toggler.call("getFollowState", entity, rid="g")
    ok_final = (last_state is not None and last_state["following"] == final_following
                and last_state["version"] == final["version"])
    out.update(drained=drained,
               last_following=last_state["following"] if last_state else "",
               last_version=last_state["version"] if last_state else "",
               final_version=final["version"],
               final_ok=int(ok_final))
    out.setdefault("status", "ok" if replies == a.toggles and ok_final else "fail")
    print(" ".join(f"{k}={v}" for k, v in out.items()))
    return 0 if out["status"] == "ok" and errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
