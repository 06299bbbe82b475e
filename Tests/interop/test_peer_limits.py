"""What a hostile or broken peer can make the server hold, spin on or wait for
(issue 17 §1, §5, §6, §7), against the real binary:

- replies waiting for a peer are bounded (docs/protocol.md "JSON-RPC, completely": 8 MiB by
  default, `--max-unread-bytes`), for pipelined requests and for batches, whose reply
  is built whole before it is written; so are the requests waiting for the backend
  (10000, `--max-pending-requests`);
- a peer closing with tens of thousands of subscriptions does not stall the others;
- accept() failing with EMFILE backs off instead of spinning, and says so once;
- SIGTERM exits 0 within the shutdown deadline (`--shutdown-timeout-ms`) even when a
  peer never reads, and the clean-shutdown compaction still runs.

Memory is read from /proc (VmHWM, the peak); the limits asserted are several times
what the bounded server needs and several times less than what it held before.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

import rpcio
from rpcio import NDJSON

pytestmark = pytest.mark.timeout(120)

DEFAULT_LIMIT = 8 << 20
MIB = 1 << 20
INVALID_REQUEST = -32600


# --------------------------------------------------------------------------
# helpers


def proc_status(pid: int, key: str) -> int:
    """A /proc/PID/status figure in bytes (VmRSS, VmHWM)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {key} in /proc/{pid}/status")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the whole line (3rd and 4th after "state")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def raw_connect(path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(str(path))
    return s


def send_in_background(s: socket.socket, data: bytes) -> threading.Thread:
    """sendall from a thread: the server stops reading a peer whose replies back up,
    so the send blocks until the peer reads (or the socket is shut down)."""

    def run():
        try:
            s.settimeout(None)
            s.sendall(data)
        except OSError:
            pass

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def discover_requests(n: int, start: int = 0) -> list[dict]:
    return [{"jsonrpc": "2.0", "id": i, "method": "rpc.discover"} for i in range(start, start + n)]


def method_count(observer, method: str) -> int:
    return observer.result("stats")["requests"]["byMethod"].get(method, 0)


def settled_count(observer, method: str, timeout: float = 10.0) -> int:
    """The method's request count once it stopped moving for half a second."""
    deadline = time.monotonic() + timeout
    last = method_count(observer, method)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = method_count(observer, method)
        if now == last:
            return now
        last = now
    raise AssertionError(f"{method} count still moving after {timeout}s ({last})")


def discover_reply_size(conn) -> int:
    """Bytes of one rpc.discover reply on the wire (NDJSON), roughly: UTF-8, as the
    server writes it (escaping non-ASCII would count 6 bytes for a 3-byte character)."""
    reply = conn.call("rpc.discover")
    return len(json.dumps(reply, separators=(",", ":"), ensure_ascii=False).encode())


_readers: dict = {}


def read_replies(s: socket.socket, count: int, timeout: float, framing: str = NDJSON) -> list:
    """Reads `count` replies from a raw socket (one reader thread per socket, made at
    the first call: from then on it takes everything the socket receives)."""
    conn = _readers.get(s)
    if conn is None:
        s.settimeout(None)
        conn = _readers[s] = rpcio.Conn(s.recv, s.sendall, framing, "raw")
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < count:
        out.append(conn.recv_reply(timeout=max(0.1, deadline - time.monotonic())))
    return out


# ==========================================================================
# §1 replies waiting for a peer are bounded, batches included


def check_limited_batch(reply, n: int, limit: int, reply_size: int) -> int:
    """A batch reply under the limit: a prefix of results, then errors naming the
    limit for the requests that were not run. Returns how many ran."""
    assert isinstance(reply, list) and len(reply) == n, str(reply)[:300]
    by_id = {r["id"]: r for r in reply}
    assert sorted(by_id) == list(range(n)), "one reply per request"
    ran = 0
    while ran < n and "result" in by_id[ran]:
        ran += 1
    assert 1 <= ran < n, f"{ran} of {n} ran"
    # What ran fits the limit, give or take one reply.
    assert ran * reply_size <= limit + reply_size, (ran, reply_size, limit)
    assert (ran + 1) * reply_size > limit - reply_size, f"stopped early: {ran} × {reply_size} vs {limit}"
    for i in range(ran, n):
        err = by_id[i].get("error")
        assert err is not None, f"a request after the limit has a result: {str(by_id[i])[:200]}"
        assert err["code"] == INVALID_REQUEST, err
        assert err["data"]["limit"] == limit, err
        assert str(limit) in err["message"] and "--max-unread-bytes" in err["message"], err
    return ran


def test_a_large_batch_reply_is_bounded(socket_server, runtime, connect):
    """Issue 17 §1: a 150 KB batch of rpc.discover held ~390 MiB of reply."""
    server, path = socket_server(runtime.run / "b.sock")
    observer = connect(path, diag=server.diagnostics)
    size = discover_reply_size(observer)
    assert size > 50_000, size
    peak_before = proc_status(server.pid, "VmHWM")

    n = 3000
    s = raw_connect(path)
    try:
        s.sendall(rpcio.frame(discover_requests(n), NDJSON))
        ran_by_stats = settled_count(observer, "rpc.discover") - 1
        growth = proc_status(server.pid, "VmHWM") - peak_before
        assert growth < 100 * MIB, f"the batch made the server hold {growth / MIB:.0f} MiB more"
        [reply] = read_replies(s, 1, 60)
        ran = check_limited_batch(reply, n, DEFAULT_LIMIT, size)
        assert ran == ran_by_stats, (ran, ran_by_stats)
    finally:
        rpcio.close_socket(s)
    assert observer.result("stats")["connections"]["open"] >= 1
    assert server.alive(), server.diagnostics()


def test_batch_limit_follows_the_option_and_notifications_still_run(socket_server, runtime, connect):
    limit = 1 << 20
    server, path = socket_server(runtime.run / "b.sock", "--max-unread-bytes", str(limit))
    c = connect(path, diag=server.diagnostics)
    size = discover_reply_size(c)
    n = 40
    batch = discover_requests(n)
    # A notification after the limit costs no reply: it still runs.
    batch.append({"jsonrpc": "2.0", "method": "follow", "params": {"kind": "artist", "id": "late"}})
    c.send(batch)
    reply = c.recv_reply(timeout=30)
    ran = check_limited_batch(reply, n, limit, size)
    assert ran == limit // size or ran == limit // size + 1, (ran, size)
    assert c.result("getFollowState", {"kind": "artist", "id": "late"})["following"] is True
    # The connection goes on, and a small batch is answered whole.
    small = c.call("stats")
    assert "result" in small
    c.send(discover_requests(2, start=100))
    again = c.recv_reply(timeout=10)
    assert [("result" in r) for r in again] == [True, True], str(again)[:300]


def test_a_batch_of_too_many_elements_is_refused_whole(socket_server, runtime, connect):
    """Tiny elements ([0,0,0,…]) each get an error reply: a batch's element count is
    bounded before anything is parsed or run."""
    server, path = socket_server(runtime.run / "b.sock")
    c = connect(path, diag=server.diagnostics)
    c.result("stats")
    peak_before = proc_status(server.pid, "VmHWM")
    n = 2_000_000
    c.send_raw(b"[" + b"0," * (n - 1) + b"0]\n")
    reply = c.recv_reply(timeout=30)
    assert isinstance(reply, dict), f"one error object for the whole batch: {str(reply)[:300]}"
    assert reply["id"] is None and reply["error"]["code"] == INVALID_REQUEST, reply
    assert reply["error"]["data"]["limit"] == 10000 and reply["error"]["data"]["elements"] == n, reply
    assert "--max-batch" in reply["error"]["message"], reply
    growth = proc_status(server.pid, "VmHWM") - peak_before
    assert growth < 64 * MIB, f"a 4 MB batch made the server hold {growth / MIB:.0f} MiB more"
    # Up to the limit, batches are served.
    c.send([{"jsonrpc": "2.0", "id": i, "method": "stats"} for i in range(3)])
    assert len(c.recv_reply(timeout=10)) == 3


def test_pipelined_requests_stop_at_the_limit(socket_server, runtime, connect):
    """Issue 17 §1: a peer that pipelines requests and does not read made the server
    hold every reply of a read (thousands of small requests per 64 KiB)."""
    server, path = socket_server(runtime.run / "p.sock")
    observer = connect(path, diag=server.diagnostics)
    size = discover_reply_size(observer)
    peak_before = proc_status(server.pid, "VmHWM")
    n = 800
    s = raw_connect(path)
    data = b"".join(rpcio.frame(r, NDJSON) for r in discover_requests(n))
    sender = send_in_background(s, data)
    try:
        ran = settled_count(observer, "rpc.discover") - 1
        # The limit, plus what the kernel's socket buffers took, plus one reply.
        assert ran <= (DEFAULT_LIMIT + 2 * MIB) // size + 1, f"{ran} requests run for a peer that reads nothing"
        growth = proc_status(server.pid, "VmHWM") - peak_before
        assert growth < 64 * MIB, f"a peer that does not read made the server hold {growth / MIB:.0f} MiB more"
        # Other peers are served meanwhile.
        t0 = time.monotonic()
        observer.result("stats", timeout=5)
        assert time.monotonic() - t0 < 1.0
        # Once it reads, every reply comes, in order, none dropped.
        replies = read_replies(s, n, 120)
        assert [r["id"] for r in replies] == list(range(n))
        assert all("result" in r for r in replies)
        sender.join(10)
        assert not sender.is_alive()
    finally:
        rpcio.close_socket(s)
    assert server.alive(), server.diagnostics()


def test_pipelined_requests_stop_at_the_limit_lsp(socket_server, runtime, connect):
    limit = 1 << 20
    server, path = socket_server(runtime.run / "p.sock", "--max-unread-bytes", str(limit))
    observer = connect(path, diag=server.diagnostics)
    size = discover_reply_size(observer)
    n = 200
    s = raw_connect(path)
    data = b"".join(rpcio.frame(r, rpcio.LSP) for r in discover_requests(n))
    sender = send_in_background(s, data)
    try:
        ran = settled_count(observer, "rpc.discover") - 1
        assert ran <= (limit + 2 * MIB) // size + 1, f"{ran} requests run for a peer that reads nothing"
        ids = [r["id"] for r in read_replies(s, n, 30, rpcio.LSP)]
        assert ids == list(range(n))
        sender.join(10)
    finally:
        rpcio.close_socket(s)


def test_stdio_host_that_pipes_everything_then_closes_stdin(netmodel_bin, runtime):
    """A host that writes many requests, closes stdin and reads stdout only later:
    the server stops reading past the limit (the pipe's hang-up must not make it spin),
    then answers every request, in order, and exits 0 at the end of input."""
    n = 300
    err = runtime.logs / "stdio.stderr"
    with open(err, "wb") as errf:
        proc = subprocess.Popen(
            [str(netmodel_bin), "serve", "--state-dir", str(runtime.root)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf, env=runtime.env,
            start_new_session=True,
        )
        try:
            data = b"".join(rpcio.frame(r, NDJSON) for r in discover_requests(n))

            def feed():
                try:
                    proc.stdin.write(data)
                    proc.stdin.close()
                except OSError:
                    pass

            feeder = threading.Thread(target=feed, daemon=True)
            feeder.start()
            time.sleep(1.0)
            cpu_before = cpu_seconds(proc.pid)
            time.sleep(1.5)
            cpu = cpu_seconds(proc.pid) - cpu_before
            assert cpu < 0.3, f"the server used {cpu:.2f}s of CPU in 1.5s waiting for its host to read"
            conn = rpcio.Conn(lambda k: os.read(proc.stdout.fileno(), k), lambda b: None, NDJSON, "stdio")
            ids = [conn.recv_reply(timeout=30)["id"] for _ in range(n)]
            assert ids == list(range(n))
            code = proc.wait(timeout=10)
            feeder.join(5)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
            proc.stdout.close()
    assert code == 0, err.read_text()[-1000:]


def state_reads(n: int) -> bytes:
    """getFollowState of n distinct entities, each needing a backend read."""
    return b"".join(
        rpcio.frame({"jsonrpc": "2.0", "id": i, "method": "getFollowState",
                     "params": {"kind": "artist", "id": f"a{i}", "maxAgeMs": 0}}, NDJSON)
        for i in range(n)
    )


def test_requests_waiting_for_the_backend_are_bounded_per_peer(socket_server, runtime, connect):
    """Requests answered later (after a backend call) hold memory too: a peer that
    pipelines them stops being read once 10000 wait (--max-pending-requests)."""
    server, path = socket_server(runtime.run / "q.sock", "--simulate", "latency=60000,jitter=0,failure=0")
    observer = connect(path, diag=server.diagnostics)
    observer.result("stats")
    peak_before = proc_status(server.pid, "VmHWM")
    s = raw_connect(path)
    sender = send_in_background(s, state_reads(40_000))
    try:
        ran = settled_count(observer, "getFollowState", timeout=30)
        assert ran <= 10_000, f"{ran} requests waiting for the backend"
        growth = proc_status(server.pid, "VmHWM") - peak_before
        assert growth < 64 * MIB, f"pending requests made the server hold {growth / MIB:.0f} MiB more"
        t0 = time.monotonic()
        observer.result("stats", timeout=5)
        assert time.monotonic() - t0 < 1.0
    finally:
        rpcio.close_socket(s)
    sender.join(5)


def test_reading_resumes_as_pending_requests_are_answered(socket_server, runtime, connect):
    server, path = socket_server(runtime.run / "q.sock", "--simulate", "latency=300,jitter=0,failure=0",
                                 "--max-pending-requests", "10")
    observer = connect(path, diag=server.diagnostics)
    n = 40
    s = raw_connect(path)
    s.sendall(state_reads(n))
    try:
        time.sleep(0.15)
        assert method_count(observer, "getFollowState") == 10
        replies = read_replies(s, n, 30)
        assert sorted(r["id"] for r in replies) == list(range(n))
        assert all("result" in r for r in replies), [r for r in replies if "result" not in r][:1]
    finally:
        rpcio.close_socket(s)


# ==========================================================================
# §5 closing a peer costs O(its subscriptions)


def test_closing_a_peer_with_many_subscriptions_stalls_nobody(socket_server, runtime, connect):
    n = 40_000
    server, path = socket_server(runtime.run / "s.sock")
    observer = connect(path, diag=server.diagnostics)
    s = raw_connect(path)
    topics = [
        [{"type": "entity", "kind": "artist"}],
        [{"type": "entity"}],
        [{"type": "list", "list": "following/artist"}],
        [{"type": "entity", "kind": "artist", "id": "same"}],
    ]
    data = b"".join(
        rpcio.frame({"jsonrpc": "2.0", "id": i, "method": "subscribe", "params": {"topics": topics[i % 4]}}, NDJSON)
        for i in range(n)
    )
    sender = send_in_background(s, data)
    try:
        replies = read_replies(s, n, 100)
        assert all("result" in r for r in replies), [r for r in replies if "result" not in r][:1]
        sender.join(10)
        assert observer.result("stats")["subscriptions"] == n
        # A state change reaches all of them (and is written while the peer reads).
    finally:
        rpcio.close_socket(s)
    worst = 0.0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        stats = observer.result("stats", timeout=5)
        worst = max(worst, time.monotonic() - t0)
        if stats["subscriptions"] == 0:
            break
    assert stats["subscriptions"] == 0, stats["subscriptions"]
    assert worst < 1.0, f"a peer closing with {n} subscriptions stalled another for {worst:.1f}s"


def test_unsubscribing_one_by_one_is_fast(socket_server, runtime, connect):
    n = 20_000
    server, path = socket_server(runtime.run / "s.sock")
    s = raw_connect(path)
    sub = b"".join(
        rpcio.frame({"jsonrpc": "2.0", "id": i, "method": "subscribe",
                     "params": {"topics": [{"type": "entity", "kind": "artist"}]}}, NDJSON)
        for i in range(n)
    )
    sender = send_in_background(s, sub)
    try:
        names = [r["result"]["subscription"] for r in read_replies(s, n, 100)]
        sender.join(10)
        unsub = b"".join(
            rpcio.frame({"jsonrpc": "2.0", "id": n + i, "method": "unsubscribe", "params": {"subscription": name}},
                        NDJSON)
            for i, name in enumerate(names)
        )
        t0 = time.monotonic()
        sender = send_in_background(s, unsub)
        replies = read_replies(s, n, 100)
        took = time.monotonic() - t0
        assert all(r.get("result") == {"ok": True} for r in replies)
        sender.join(10)
    finally:
        rpcio.close_socket(s)
    assert took < 5, f"{n} unsubscribes took {took:.1f}s"


# ==========================================================================
# §6 accept() at EMFILE backs off


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def accept_warnings(log: str) -> list[str]:
    return [line for line in log.splitlines() if "accept" in line and line.startswith("netmodel: warn: ")]


def test_accept_at_emfile_backs_off_and_logs_once(socket_server, runtime, connect):
    server, path = socket_server(runtime.run / "e.sock")
    first = connect(path, diag=server.diagnostics)
    first.result("stats")
    used = open_fds(server.pid)
    _, hard = resource.prlimit(server.pid, resource.RLIMIT_NOFILE)
    # Room for exactly one more connection.
    resource.prlimit(server.pid, resource.RLIMIT_NOFILE, (used + 1, hard))
    second = connect(path, diag=server.diagnostics)
    second.result("stats")
    # This one waits in the listen backlog: the server has no descriptor for it.
    waiting = connect(path, diag=server.diagnostics)
    waiting.send(waiting.request_obj("stats", id="waiting"))
    time.sleep(0.3)
    log_before = len(server.stderr())
    cpu_before = cpu_seconds(server.pid)
    time.sleep(2.0)
    cpu = cpu_seconds(server.pid) - cpu_before
    log = server.stderr()
    assert cpu < 0.3, f"the server used {cpu:.2f}s of CPU in 2s while accept() failed"
    assert len(log) - log_before < 1000, f"{len(log) - log_before} bytes of log in 2s: {log[-500:]}"
    episode = accept_warnings(log)
    assert len(episode) == 1, f"one warning per episode, got {len(episode)}: {episode[:5]}"
    assert "Too many open files" in episode[0] or "EMFILE" in episode[0], episode
    # Other peers are served meanwhile.
    assert "connections" in second.result("stats", timeout=5)
    # A peer leaves: the waiting one is served soon.
    rpcio.close_socket(first.sock)
    t0 = time.monotonic()
    reply = waiting.recv_reply(timeout=5)
    assert reply["id"] == "waiting" and "result" in reply, reply
    assert time.monotonic() - t0 < 2.0
    # The episode lasts while the server has no descriptor to spare: no more warnings.
    rpcio.close_socket(second.sock)
    rpcio.close_socket(waiting.sock)
    fourth = connect(path, diag=server.diagnostics)
    assert "connections" in fourth.result("stats", timeout=5)
    assert len(accept_warnings(server.stderr())) == 1, server.stderr()
    # Its end is said at info, once.
    assert len([line for line in server.stderr().splitlines() if "normally again" in line]) == 1, server.stderr()
    # With one descriptor spare again, the next shortage is a new episode: said again, once.
    fifth = connect(path, diag=server.diagnostics)
    assert "connections" in fifth.result("stats", timeout=5)
    sixth = connect(path, diag=server.diagnostics)
    sixth.send(sixth.request_obj("stats", id="sixth"))
    time.sleep(1.5)
    episodes = accept_warnings(server.stderr())
    assert len(episodes) == 2, server.stderr()
    rpcio.close_socket(fourth.sock)
    assert sixth.recv_reply(timeout=5)["id"] == "sixth"
    assert server.alive(), server.diagnostics()


# ==========================================================================
# §7 SIGTERM exits within the deadline, whoever does not read


def test_sigterm_with_a_socket_peer_that_does_not_read(socket_server, runtime, connect):
    state = runtime.root / "sd"
    state.mkdir(mode=0o700)
    server, path = socket_server(runtime.run / "t.sock", "--state-dir", state)
    observer = connect(path, diag=server.diagnostics)
    assert observer.result("follow", {"kind": "artist", "id": "kept"})["following"] is True
    stalled = raw_connect(path)
    data = b"".join(rpcio.frame(r, NDJSON) for r in discover_requests(300))
    sender = send_in_background(stalled, data)
    try:
        settled_count(observer, "rpc.discover")
        t0 = time.monotonic()
        server.signal(signal.SIGTERM)
        code = server.wait(timeout=15)
        took = time.monotonic() - t0
    finally:
        rpcio.close_socket(stalled)
    assert code == 0, server.diagnostics()
    assert took < 3.0 + 2.0, f"exit took {took:.1f}s (deadline 3 s)"
    assert "--shutdown-timeout-ms" in server.stderr(), server.stderr()[-1000:]
    # The clean-shutdown compaction ran: the journal holds one line, the follow.
    assert (state / "journal.log").read_text() == '{"k":"artist","i":"kept","f":true}\n'
    sender.join(5)


def test_sigterm_deadline_follows_the_option(socket_server, runtime, connect):
    server, path = socket_server(runtime.run / "t.sock", "--shutdown-timeout-ms", "300")
    observer = connect(path, diag=server.diagnostics)
    stalled = raw_connect(path)
    sender = send_in_background(stalled, b"".join(rpcio.frame(r, NDJSON) for r in discover_requests(100)))
    try:
        settled_count(observer, "rpc.discover")
        t0 = time.monotonic()
        server.signal(signal.SIGTERM)
        code = server.wait(timeout=10)
        took = time.monotonic() - t0
    finally:
        rpcio.close_socket(stalled)
    assert code == 0, server.diagnostics()
    assert took < 1.5, f"exit took {took:.1f}s (deadline 0.3 s)"
    sender.join(5)


def test_sigterm_with_stdout_not_read(netmodel_bin, runtime):
    """The host that spawned us stops reading stdout (a pipe of 64 KiB)."""
    err = runtime.logs / "stdio.stderr"
    with open(err, "wb") as errf:
        proc = subprocess.Popen(
            [str(netmodel_bin), "serve", "--state-dir", str(runtime.root)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf, env=runtime.env,
            start_new_session=True,
        )
        try:
            proc.stdin.write(b"".join(rpcio.frame(r, NDJSON) for r in discover_requests(20)))
            proc.stdin.flush()
            time.sleep(1.0)
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                code = None
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
            proc.stdout.close()
            proc.stdin.close()
    assert code == 0, f"exit code {code}; stderr: {err.read_text()[-1000:]}"
    assert took < 5.0, f"exit took {took:.1f}s (deadline 3 s)"


def test_sigterm_still_writes_everything_to_a_peer_that_reads(socket_server, runtime, connect):
    """The deadline only cuts a peer that does not read: one that reads gets every
    queued reply before the process exits."""
    server, path = socket_server(runtime.run / "t.sock")
    s = raw_connect(path)
    n = 60
    s.sendall(b"".join(rpcio.frame(r, NDJSON) for r in discover_requests(n)))
    time.sleep(0.5)
    server.signal(signal.SIGTERM)
    replies = read_replies(s, n, 30)
    assert [r["id"] for r in replies] == list(range(n))
    assert server.wait(timeout=10) == 0
    rpcio.close_socket(s)
