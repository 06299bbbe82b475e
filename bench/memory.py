#!/usr/bin/env python3
"""Memory bounds at scale: 100 connections, 100,000 entities, 1,000 lists.

usage: python3 bench/memory.py [--binary .build/release/netmodel] [--runs 3]
           [--conns 100] [--entities 100000] [--kinds 1000] [--stalled 50]
           [--rounds 3] [--toggled 10000] [--idle-ms 3000] [--out FILE]

Local backend, state folder on tmpfs (/dev/shm), one fresh server per run.
Entities are k<i>/e<j> for 1,000 kinds k0..k999 and 100 ids each; the lists are
following/k0 .. following/k999.  A seeding server first follows e0..e4 of every
kind (5,000 follows) and is stopped, so every list has items and the measured
server starts with its backend loaded and nothing else in memory.

The measured server runs with --max-entities 200000 --max-lists 2000 and
--entity-idle-ms/--list-idle-ms = --idle-ms, so the idle timers, not the
counts, do the evicting at the end.  Stages (RSS = VmRSS from /proc, peak =
VmHWM):

  base        the server started, one stats call answered
  bare        + --conns connections open, nothing asked on them
  entities    + getFollowState of every entity (pipelined on one connection):
              bytes/entity = (entities - bare) / stats.entities
  lists       + fetchList of every list (pipelined): bytes/list
  subscribed  + each connection subscribes to its 1/conns of the entities by
              exact topic and of the lists: bytes/connection with its topics
  round N     --stalled of the connections stop reading; a driver connection
              follows then unfollows --toggled entities (spread over every
              connection's slice; each follow also refetches its kind's list),
              the others drain.  Bounded queues: RSS after round 2, 3 ≈ round 1,
              however many changes the stalled connections missed.
  drained     the stalled connections read everything waiting for them
  closed      every connection closed, then wait until the idle timers evicted
              every entity and list (stats.entities = 0, lists.held = 0):
              RSS should be back near base.

Prints one key=value line per run and a markdown table of the medians.
"""
import argparse
import json
import os
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=".build/release/netmodel")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--conns", type=int, default=100)
    ap.add_argument("--entities", type=int, default=100000)
    ap.add_argument("--kinds", type=int, default=1000)
    ap.add_argument("--seed-follows", type=int, default=5, help="follows per kind before the run")
    ap.add_argument("--stalled", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--toggled", type=int, default=10000, help="entities followed then unfollowed per round")
    ap.add_argument("--idle-ms", type=int, default=3000)
    ap.add_argument("--inflight", type=int, default=256)
    ap.add_argument("--state-root", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--cycles", type=int, default=2, help="the whole load, closed and evicted, this many times in one server")
    ap.add_argument("--gdb-trim", action="store_true",
                    help="diagnosis: after each close, call malloc_trim(0) in the server through gdb")
    ap.add_argument("--out", help="also write the markdown report here")
    return ap.parse_args()


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                k, v = line.split(":")
                out[k] = int(v.split()[0]) * 1024
    return out


class Conn:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""
        self.lines_read = 0
        self.notifications = 0

    def send(self, obj):
        self.sock.sendall(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    def feed(self, data):
        self.buf += data
        *complete, self.buf = self.buf.split(b"\n")
        self.lines_read += len(complete)
        return complete

    def call(self, method, params=None, rid="x", timeout=60.0):
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.sock], [], [], 0.5)
            if not r:
                continue
            data = self.sock.recv(1 << 20)
            if not data:
                raise EOFError(f"server closed the connection during {method}")
            for line in self.feed(data):
                reply = json.loads(line)
                if reply.get("id") == rid:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply["result"]
        raise TimeoutError(f"no reply to {method} within {timeout} s")

    def pipeline(self, requests, inflight, timeout=60.0):
        """Sends the encoded requests (ids 1..N) with at most `inflight` waiting;
        returns the number of error replies."""
        sock = self.sock
        sock.setblocking(False)
        sent = replies = errors = 0
        out = b""
        last = time.monotonic()
        n = len(requests)
        while replies < n:
            while sent < n and sent - replies < inflight:
                out += requests[sent]
                sent += 1
            r, w, _ = select.select([sock], [sock] if out else [], [], 0.5)
            if w:
                try:
                    k = sock.send(out)
                    out = out[k:]
                except BlockingIOError:
                    pass
            if r:
                data = sock.recv(1 << 20)
                if not data:
                    raise EOFError("server closed the pipelining connection")
                for line in self.feed(data):
                    if line.startswith(b'{"jsonrpc":"2.0","method"') or b'"method":"stateChanged"' in line[:60]:
                        continue
                    replies += 1
                    if b'"result":' not in line[:60]:
                        errors += 1
                        if errors <= 3:
                            print(f"memory: error reply: {line[:300]!r}", file=sys.stderr)
                last = time.monotonic()
            elif time.monotonic() - last > timeout:
                raise TimeoutError(f"pipeline stuck at {replies}/{n}")
        sock.setblocking(True)
        return errors


def req(rid, method, params):
    return (json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params},
                       separators=(",", ":")) + "\n").encode()


def entity(n, kinds):
    """Entity number n: kind k(n % kinds), id e(n // kinds)."""
    return {"kind": f"k{n % kinds}", "id": f"e{n // kinds}"}


class Drainer(threading.Thread):
    """Reads and discards everything on the connections marked as reading."""

    def __init__(self, conns):
        super().__init__(daemon=True)
        self.conns = conns
        self.reading = set(range(len(conns)))
        self.stop = False
        self.last_data = time.monotonic()
        self.lock = threading.Lock()

    def run(self):
        while not self.stop:
            with self.lock:
                socks = {self.conns[i].sock: self.conns[i] for i in self.reading}
            if not socks:
                time.sleep(0.05)
                continue
            try:
                r, _, _ = select.select(list(socks), [], [], 0.1)
            except (ValueError, OSError):
                continue
            for s in r:
                try:
                    data = s.recv(1 << 20)
                except OSError:
                    continue
                if data:
                    c = socks[s]
                    c.notifications += data.count(b'"stateChanged"')
                    c.lines_read += data.count(b"\n")
                    self.last_data = time.monotonic()

    def set_reading(self, indices):
        with self.lock:
            self.reading = set(indices)

    def wait_quiet(self, quiet=0.5, limit=60):
        t0 = time.monotonic()
        while time.monotonic() - self.last_data < quiet and time.monotonic() - t0 < limit:
            time.sleep(0.1)


def start_server(binary, sock_path, state_dir, extra):
    log = open(os.path.join(os.path.dirname(sock_path), "server.log"), "ab")
    p = subprocess.Popen([binary, "serve", "--no-stdio", f"--socket={sock_path}",
                          f"--state-dir={state_dir}", "--backend", "local", *extra],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(500):
        if os.path.exists(sock_path):
            try:
                c = Conn(sock_path)
                c.call("stats", rid="up")
                return p, c
            except (ConnectionRefusedError, FileNotFoundError):
                pass
        if p.poll() is not None:
            raise RuntimeError(f"server exited with {p.returncode}")
        time.sleep(0.01)
    raise RuntimeError("server did not start")


def stop_server(p):
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        return "killed"


def settle(c, key="s"):
    """Waits until backend.calls stops growing and the outbox is empty."""
    calls = None
    for i in range(300):
        st = c.call("stats", rid=f"{key}{i}")
        if st["backend"]["calls"] == calls and st["outbox"] == 0 and st["preload"]["inFlight"] == 0:
            return st
        calls = st["backend"]["calls"]
        time.sleep(0.1)
    return st


def one_run(a, run):
    work = tempfile.mkdtemp(prefix="nm-mem-", dir=a.state_root)
    os.chmod(work, 0o700)
    sock_path = os.path.join(work, "nm.sock")
    state = os.path.join(work, "state")
    out = {"run": run}
    try:
        # Seed: F follows per kind, then stop.
        p, c = start_server(a.binary, sock_path, state, [])
        seeds = [req(i + 1, "follow", entity(i, a.kinds)) for i in range(a.kinds * a.seed_follows)]
        out["seed_errors"] = c.pipeline(seeds, a.inflight)
        settle(c)
        c.sock.close()
        out["seed_exit"] = stop_server(p)

        idle = str(a.idle_ms)
        p, ctl = start_server(a.binary, sock_path, state,
                              ["--max-entities", "200000", "--entity-idle-ms", idle,
                               "--max-lists", "2000", "--list-idle-ms", idle])
        pid = p.pid
        samples = {}

        def sample(name, st=None):
            time.sleep(0.2)
            st = st or ctl.call("stats", rid=f"m-{name}")
            ps = proc_status(pid)
            samples[name] = dict(rss=ps["VmRSS"], hwm=ps["VmHWM"], entities=st["entities"],
                                 lists=st["lists"]["held"], subs=st["subscriptions"],
                                 sent=st["notifications"]["sent"],
                                 coalesced=st["notifications"]["coalesced"],
                                 evicted=st["entitiesEvicted"], lists_evicted=st["lists"]["evicted"],
                                 t=time.monotonic())
            return st

        sample("base")
        for cycle in range(1, a.cycles + 1):
            pre = "" if cycle == 1 else f"c{cycle}_"
            conns = [Conn(sock_path) for _ in range(a.conns)]
            for i, cn in enumerate(conns):  # make sure the server has accepted every one
                cn.call("stats", rid=f"hello{i}")
            sample(f"{pre}bare")

            gets = [req(i + 1, "getFollowState", entity(i, a.kinds)) for i in range(a.entities)]
            t0 = time.monotonic()
            out[f"{pre}get_errors"] = conns[0].pipeline(gets, a.inflight)
            out[f"{pre}get_s"] = round(time.monotonic() - t0, 2)
            settle(ctl, "g")
            sample(f"{pre}entities")

            fetches = [req(i + 1, "fetchList", {"list": f"following/k{i}"}) for i in range(a.kinds)]
            out[f"{pre}list_errors"] = conns[0].pipeline(fetches, a.inflight)
            settle(ctl, "l")
            sample(f"{pre}lists")

            # Connection c subscribes to entities n with n % conns == c (so every
            # kind's entities are spread over all connections) and to lists i with
            # i % conns == c.
            t0 = time.monotonic()
            for ci, cn in enumerate(conns):
                topics = [{"type": "entity", **entity(n, a.kinds)} for n in range(ci, a.entities, a.conns)]
                topics += [{"type": "list", "list": f"following/k{i}"} for i in range(ci, a.kinds, a.conns)]
                cn.send({"jsonrpc": "2.0", "id": "sub", "method": "subscribe", "params": {"topics": topics}})
            for cn in conns:  # read each reply
                while True:
                    r, _, _ = select.select([cn.sock], [], [], 60)
                    if not r:
                        raise TimeoutError("subscribe")
                    lines = cn.feed(cn.sock.recv(1 << 22))
                    if any(b'"id":"sub"' in ln for ln in lines):
                        if any(b'"id":"sub"' in ln[:60] and b'"result":' not in ln[:60] for ln in lines):
                            raise RuntimeError("subscribe refused")
                        break
            out[f"{pre}subscribe_s"] = round(time.monotonic() - t0, 2)
            drainer = Drainer(conns)
            drainer.start()
            st = settle(ctl, "u")
            drainer.wait_quiet()
            sample(f"{pre}subscribed")

            # Rounds of changes with the stalled connections not reading.
            stalled = range(a.conns - a.stalled, a.conns)
            drainer.set_reading(range(a.conns - a.stalled))
            driver = Conn(sock_path)
            step = max(1, (a.entities - a.kinds * a.seed_follows) // a.toggled)
            targets = [a.kinds * a.seed_follows + k * step for k in range(a.toggled)]
            targets = [n for n in targets if n < a.entities]
            toggles = 0
            for rnd in range(1, a.rounds + 1):
                rq = []
                for n in targets:
                    rq.append(req(len(rq) + 1, "follow", entity(n, a.kinds)))
                for n in targets:
                    rq.append(req(len(rq) + 1, "unfollow", entity(n, a.kinds)))
                t0 = time.monotonic()
                out[f"{pre}round{rnd}_errors"] = driver.pipeline(rq, a.inflight)
                out[f"{pre}round{rnd}_s"] = round(time.monotonic() - t0, 2)
                toggles += len(rq)
                settle(ctl, f"r{rnd}")
                drainer.wait_quiet()
                sample(f"{pre}round{rnd}")
            out[f"{pre}toggles"] = toggles

            # The stalled connections read what waited for them.
            before = {i: conns[i].lines_read for i in stalled}
            drainer.set_reading(range(a.conns))
            time.sleep(0.3)
            drainer.wait_quiet(1.0)
            out[f"{pre}drained_per_stalled"] = int(statistics.median(conns[i].lines_read - before[i] for i in stalled))
            sample(f"{pre}drained")

            # Close everything; wait for the idle timers.
            drainer.set_reading([])
            drainer.stop = True
            drainer.join()
            for cn in conns:
                cn.sock.close()
            driver.sock.close()
            t0 = time.monotonic()
            while time.monotonic() - t0 < a.idle_ms / 1000 * 3 + 5:
                st = ctl.call("stats", rid="c")
                if st["entities"] == 0 and st["lists"]["held"] == 0 and st["subscriptions"] == 0:
                    break
                time.sleep(0.25)
            out[f"{pre}evict_wait_s"] = round(time.monotonic() - t0, 2)
            time.sleep(0.5)
            sample(f"{pre}closed")
            if a.gdb_trim:  # diagnosis: is what stays freed heap the allocator kept?
                subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (int)malloc_trim(0)"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
                sample(f"{pre}trimmed")
        ctl.sock.close()
        out["exit"] = stop_server(p)
        out["samples"] = samples
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def derive(a, o):
    s = o["samples"]
    mb = lambda x: round(x / 1e6, 2)
    d = {}
    d["base_mb"] = mb(s["base"]["rss"])
    d["per_bare_conn_kb"] = round((s["bare"]["rss"] - s["base"]["rss"]) / a.conns / 1e3, 1)
    ne = s["entities"]["entities"] - s["bare"]["entities"]
    d["entities"] = ne
    d["per_entity_b"] = round((s["entities"]["rss"] - s["bare"]["rss"]) / max(ne, 1), 1)
    d["per_entity_peak_b"] = round((s["entities"]["hwm"] - s["bare"]["rss"]) / max(ne, 1), 1)
    nl = s["lists"]["lists"] - s["entities"]["lists"]
    d["lists"] = nl
    d["per_list_b"] = round((s["lists"]["rss"] - s["entities"]["rss"]) / max(nl, 1), 1)
    d["subs_entities"] = s["subscribed"]["entities"]
    d["per_sub_conn_kb"] = round((s["subscribed"]["rss"] - s["lists"]["rss"]) / a.conns / 1e3, 1)
    d["subscribed_mb"] = mb(s["subscribed"]["rss"])
    for r in range(1, a.rounds + 1):
        k = f"round{r}"
        prev = "subscribed" if r == 1 else f"round{r-1}"
        d[f"{k}_mb"] = mb(s[k]["rss"])
        d[f"{k}_sent"] = s[k]["sent"] - s[prev]["sent"]
        d[f"{k}_coalesced"] = s[k]["coalesced"] - s[prev]["coalesced"]
    d["peak_mb"] = mb(s["drained"]["hwm"])
    d["drained_mb"] = mb(s["drained"]["rss"])
    d["closed_mb"] = mb(s["closed"]["rss"])
    d["closed_minus_base_mb"] = mb(s["closed"]["rss"] - s["base"]["rss"])
    d["closed_entities"] = s["closed"]["entities"]
    d["closed_lists"] = s["closed"]["lists"]
    d["closed_subs"] = s["closed"]["subs"]
    if a.gdb_trim:
        d["gdb_trimmed_minus_base_mb"] = mb(s["trimmed"]["rss"] - s["base"]["rss"])
    for c in range(2, a.cycles + 1):
        d[f"c{c}_subscribed_mb"] = mb(s[f"c{c}_subscribed"]["rss"])
        d[f"c{c}_closed_mb"] = mb(s[f"c{c}_closed"]["rss"])
        d[f"c{c}_closed_minus_base_mb"] = mb(s[f"c{c}_closed"]["rss"] - s["base"]["rss"])
    d["peak_mb"] = mb(max(v["hwm"] for v in s.values()))
    return d


def main():
    a = parse_args()
    if not os.access(a.binary, os.X_OK):
        sys.exit(f"memory: no binary at {a.binary}: swift build -c release --product netmodel")
    results = []
    for run in range(1, a.runs + 1):
        t0 = time.monotonic()
        o = one_run(a, run)
        d = derive(a, o)
        raw = {k: v for k, v in o.items() if k != "samples"}
        print(" ".join(f"{k}={v}" for k, v in {**raw, **d}.items()), flush=True)
        print(f"memory: run {run} took {time.monotonic() - t0:.0f} s", file=sys.stderr)
        results.append(d)
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    rng = {k: (min(r[k] for r in results), max(r[k] for r in results)) for k in results[0]}
    fmt = lambda k: (f"{med[k]:,}" if rng[k][0] == rng[k][1] else f"{med[k]:,} ({rng[k][0]:,}–{rng[k][1]:,})")
    lines = [f"| figure | median of {a.runs} (range) |", "| --- | ---: |"]
    for k in results[0]:
        lines.append(f"| {k} | {fmt(k)} |")
    report = "\n".join(lines)
    print(report)
    if a.out:
        with open(a.out, "w") as f:
            f.write(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
