"""The follow network model, subscriptions, the outbox and the local backend,
driven through the real binary (docs/protocol.md "EntityState", "Mutations", "Reads",
"Subscriptions", "Outbox and state folder", "Backends").

Every test gets its own state folder (``--state-dir``) under the per-test
runtime folder, every wait is bounded, and each test has a 60 s limit.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

import rpcio

pytestmark = pytest.mark.timeout(60)

INVALID_PARAMS = -32602
BACKEND_UNAVAILABLE = -32001
BACKEND_REJECTED = -32002
UNKNOWN_KIND_OR_LIST = -32004

STATE_KEYS = {"kind", "id", "following", "confirmed", "pending", "error", "attributes", "version"}


# --------------------------------------------------------------------------
# helpers


@pytest.fixture
def state_dir(runtime) -> Path:
    d = runtime.root / "sd"
    d.mkdir(mode=0o700)
    return d


@pytest.fixture
def sock_server(socket_server, state_dir):
    """sock_server(*extra) -> (ServerProc, socket path), with --state-dir."""

    def _start(*extra, path=None):
        return socket_server(path, "--state-dir", str(state_dir), *extra)

    return _start


def check_state(s, kind=None, id=None) -> dict:
    assert isinstance(s, dict) and set(s) == STATE_KEYS, f"not an EntityState: {s!r}"
    assert s["following"] in (True, False, None), s
    assert s["confirmed"] in (True, False, None), s
    assert isinstance(s["pending"], bool), s
    assert isinstance(s["version"], int) and not isinstance(s["version"], bool) and s["version"] >= 0, s
    if s["error"] is not None:
        e = s["error"]
        assert isinstance(e, dict) and isinstance(e.get("code"), int) and isinstance(e.get("message"), str), s
        assert isinstance(e.get("retryable"), bool), s
    if kind is not None:
        assert s["kind"] == kind, s
    if id is not None:
        assert s["id"] == id, s
    return s


def is_state_changed(msg) -> bool:
    return isinstance(msg, dict) and msg.get("method") == "stateChanged" and "id" not in msg


def collect(conn, until, timeout=10.0, what="notifications"):
    """stateChanged notifications from ``conn`` until ``until(state)`` holds for
    the newest one; anything else arriving meanwhile fails the test."""
    got = []
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"[{conn.name}] {what}: condition not met within {timeout}s; got {got!r}\n{conn.diag()}")
        msg = conn.recv(remaining, what=what)
        assert is_state_changed(msg), f"[{conn.name}] expected a stateChanged notification, got {msg!r}"
        got.append(msg)
        if until(msg["params"]["state"]):
            return got


def drain(conn, quiet=0.4):
    """Every frame that arrives until ``quiet`` seconds pass without one."""
    out = []
    while True:
        f = conn.reader.take_frame(conn.framing, quiet)
        if f is None:
            return out
        rpcio.check_response(f.obj)
        out.append(f.obj)


def check_sequence(notes, subscription=None, first_seq=None):
    """seq grows by one per notification on a connection; per entity, versions
    never go down."""
    seqs = [n["params"]["seq"] for n in notes]
    if first_seq is not None and seqs:
        assert seqs[0] == first_seq, f"first seq {seqs[0]}, expected {first_seq}: {seqs}"
    if seqs:
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"seq not consecutive: {seqs}"
    last_version = {}
    for n in notes:
        p = n["params"]
        if subscription is not None:
            assert p["subscription"] == subscription, n
        st = check_state(p["state"])
        key = (st["kind"], st["id"])
        assert st["version"] >= last_version.get(key, -1), f"version went down for {key}: {notes!r}"
        last_version[key] = st["version"]


def error_of(reply, code) -> dict:
    assert isinstance(reply, dict) and "error" in reply, f"expected error {code}, got {reply!r}"
    err = reply["error"]
    assert err["code"] == code, f"expected error {code}, got {reply!r}"
    return err


def settled(following):
    return lambda s: s["following"] is following and s["confirmed"] is following and not s["pending"]


def read_follows(state_dir: Path) -> dict:
    """The local backend's follows as its load sees them: the journal.log lines
    with "f" applied in order. A last line without its newline is ignored, an
    unreadable line skipped. Kinds with no follows are left out; ids are sorted."""
    follows = {}
    journal = state_dir / "journal.log"
    if journal.exists():
        # The part after the last newline is an unfinished write: never confirmed.
        for line in journal.read_bytes().split(b"\n")[:-1]:
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                kind, id_, following = rec["k"], rec["i"], rec["f"]
            except (ValueError, KeyError, TypeError):
                continue
            if following is True:
                follows.setdefault(kind, set()).add(id_)
            elif following is False:
                follows.get(kind, set()).discard(id_)
    return {kind: sorted(ids) for kind, ids in sorted(follows.items()) if ids}


def outbox_intents(state_dir: Path) -> dict:
    """The outbox as replay sees it (journal.log lines with "w"): last line per entity wins."""
    out = {}
    for line in (state_dir / "journal.log").read_bytes().split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if "w" in rec:
            out[(rec.get("k"), rec.get("i"))] = rec.get("w")
    return out


def vmrss(pid) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


# ==========================================================================
# 1. a follow on one connection is pushed to a subscriber on another


def test_follow_pushed_to_other_connection(sock_server, connect):
    server, path = sock_server()
    a = connect(path, diag=server.diagnostics)
    b = connect(path, diag=server.diagnostics)
    sub = a.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "banksy"}]})
    assert isinstance(sub["subscription"], str) and sub["subscription"]
    assert len(sub["snapshot"]) == 1
    snap = check_state(sub["snapshot"][0], "artist", "banksy")
    assert snap["confirmed"] is None or snap["confirmed"] is False, snap

    reply = b.result("follow", {"kind": "artist", "id": "banksy"})
    check_state(reply, "artist", "banksy")
    assert reply["following"] is True, reply

    notes = collect(a, settled(True), what="banksy's settled state")
    check_sequence(notes, sub["subscription"], first_seq=1)
    for n in notes:
        assert n["params"]["state"]["kind"] == "artist" and n["params"]["state"]["id"] == "banksy", n
        assert n["params"]["state"]["version"] >= snap["version"], (snap, n)
    final = notes[-1]["params"]["state"]
    assert final["error"] is None, final
    # Nothing after the settled state, and B (no subscription) hears nothing.
    a.assert_quiet(0.3)
    b.assert_quiet(0.1)
    assert b.result("getFollowState", {"kind": "artist", "id": "banksy"}) == final


# ==========================================================================
# 2. wildcard topics


def test_wildcard_topics(sock_server, connect):
    server, path = sock_server()
    b = connect(path, diag=server.diagnostics)
    b.result("follow", {"kind": "artist", "id": "pre", "await": True})
    b.result("follow", {"kind": "gene", "id": "pre", "await": True})

    by_kind = connect(path, diag=server.diagnostics)
    every = connect(path, diag=server.diagnostics)
    sk = by_kind.result("subscribe", {"topics": [{"type": "entity", "kind": "artist"}]})
    se = every.result("subscribe", {"topics": [{"type": "entity"}]})
    assert [(s["kind"], s["id"]) for s in sk["snapshot"]] == [("artist", "pre")], sk
    assert sorted((s["kind"], s["id"]) for s in se["snapshot"]) == [("artist", "pre"), ("gene", "pre")], se
    for s in sk["snapshot"] + se["snapshot"]:
        assert check_state(s)["following"] is True and s["confirmed"] is True

    b.result("follow", {"kind": "gene", "id": "g1", "await": True})
    b.result("follow", {"kind": "artist", "id": "a1", "await": True})
    b.result("follow", {"kind": "artist", "id": "marker", "await": True})

    def kind_until(s):
        assert s["kind"] == "artist", f"kind-only topic got another kind: {s!r}"
        return s["id"] == "marker" and settled(True)(s)

    notes_k = collect(by_kind, kind_until, what="artist notifications")
    check_sequence(notes_k, sk["subscription"], first_seq=1)
    ids_k = {n["params"]["state"]["id"] for n in notes_k}
    assert ids_k == {"a1", "marker"}, ids_k
    a1 = [n["params"]["state"] for n in notes_k if n["params"]["state"]["id"] == "a1"]
    assert settled(True)(a1[-1]), a1

    notes_e = collect(every, lambda s: s["id"] == "marker" and settled(True)(s), what="all notifications")
    check_sequence(notes_e, se["subscription"], first_seq=1)
    seen = {(n["params"]["state"]["kind"], n["params"]["state"]["id"]) for n in notes_e}
    assert seen == {("gene", "g1"), ("artist", "a1"), ("artist", "marker")}, seen
    by_key = {}
    for n in notes_e:
        st = n["params"]["state"]
        by_key[(st["kind"], st["id"])] = st
    assert settled(True)(by_key[("gene", "g1")]) and settled(True)(by_key[("artist", "a1")]), by_key

    # unsubscribe stops the flow; an unknown subscription is invalid params.
    assert every.result("unsubscribe", {"subscription": se["subscription"]}) == {"ok": True}
    b.result("unfollow", {"kind": "gene", "id": "g1", "await": True})
    every.assert_quiet(0.3)
    err = error_of(every.call("unsubscribe", {"subscription": se["subscription"]}), INVALID_PARAMS)
    assert err.get("data", {}).get("path") == "/subscription", err
    by_kind.assert_quiet(0.1)  # gene/g1 is not its kind


# ==========================================================================
# 3. await: true replies with the settled state


def test_await_returns_settled_state(spawn, state_dir):
    server = spawn("--state-dir", state_dir)
    c = server.conn
    r = check_state(c.result("follow", {"kind": "artist", "id": "banksy", "await": True}), "artist", "banksy")
    assert settled(True)(r) and r["error"] is None, r
    r2 = check_state(c.result("unfollow", {"kind": "artist", "id": "banksy", "await": True}))
    assert settled(False)(r2) and r2["version"] > r["version"], (r, r2)
    r3 = check_state(c.result("setFollowState", {"kind": "artist", "id": "banksy", "following": True, "await": True}))
    assert settled(True)(r3) and r3["version"] > r2["version"], (r2, r3)
    # Already confirmed and wanted: nothing changes, not even the version.
    r4 = check_state(c.result("follow", {"kind": "artist", "id": "banksy", "await": True}))
    assert r4 == r3, (r3, r4)
    assert read_follows(state_dir) == {"artist": ["banksy"]}


# ==========================================================================
# 4. persistence across a clean stop


def test_follow_persists_across_restart(spawn, state_dir):
    s1 = spawn("--state-dir", state_dir)
    r = s1.conn.result("follow", {"kind": "artist", "id": "banksy", "await": True})
    assert settled(True)(r), r
    s1.signal(signal.SIGTERM)
    assert s1.wait(10) == 0, s1.diagnostics()
    assert read_follows(state_dir) == {"artist": ["banksy"]}

    s2 = spawn("--state-dir", state_dir)
    st = check_state(s2.conn.result("getFollowState", {"kind": "artist", "id": "banksy", "refresh": True}))
    assert st["following"] is True and st["confirmed"] is True and st["pending"] is False, st
    other = s2.conn.result("getFollowState", {"kind": "artist", "id": "nobody", "refresh": True})
    assert other["following"] is False and other["confirmed"] is False, other


def test_a_second_server_on_the_same_state_folder_is_refused(spawn, state_dir):
    """Two servers writing one outbox would drop each other's intents: the second
    one stops with a message naming the first, and the first keeps serving."""
    first = spawn("--state-dir", state_dir)
    assert first.conn.result("follow", {"kind": "artist", "id": "banksy", "await": True})["confirmed"] is True
    second = spawn("--state-dir", state_dir)
    assert second.wait(10) == 1, second.diagnostics()
    assert "in use by another netmodel" in second.stderr()
    assert str(first.proc.pid) in second.stderr()
    assert first.conn.result("getFollowState", {"kind": "artist", "id": "banksy"})["following"] is True
    first.signal(signal.SIGTERM)
    assert first.wait(10) == 0
    third = spawn("--state-dir", state_dir)
    assert third.conn.result("getFollowState", {"kind": "artist", "id": "banksy", "refresh": True})["confirmed"] is True


# ==========================================================================
# 5. kill -9 with a mutation in flight: the outbox replays it


def test_outbox_survives_sigkill(spawn, state_dir):
    s1 = spawn("--state-dir", state_dir, "--simulate", "latency=60000")
    r = check_state(s1.conn.result("follow", {"kind": "artist", "id": "banksy"}))
    assert r["following"] is True and r["pending"] is True and r["confirmed"] is None, r
    s1.signal(signal.SIGKILL)
    assert s1.wait(10) == -signal.SIGKILL
    intents = outbox_intents(state_dir)
    assert intents.get(("artist", "banksy")) is True, (state_dir / "journal.log").read_bytes()
    assert read_follows(state_dir) == {}

    s2 = spawn("--state-dir", state_dir)

    def confirmed():
        st = s2.conn.result("getFollowState", {"kind": "artist", "id": "banksy", "refresh": True})
        return st if st["confirmed"] is True and st["pending"] is False else None

    st = rpcio.wait_for(confirmed, timeout=10, interval=0.05)
    assert st, f"the replayed follow was never confirmed\n{s2.diagnostics()}"
    assert st["following"] is True, st
    assert read_follows(state_dir) == {"artist": ["banksy"]}
    # Settled: the outbox no longer holds the intent.
    s2.signal(signal.SIGTERM)
    assert s2.wait(10) == 0
    assert outbox_intents(state_dir).get(("artist", "banksy")) is None


# ==========================================================================
# 6. rollback, retries, offline queue


def test_rejected_follow_rolls_back(sock_server, connect):
    # 200 ms latency: with none, the optimistic state and its rollback can fall in
    # one loop iteration and be coalesced into one notification (which is allowed).
    server, path = sock_server("--simulate", "latency=200,failure=1,status=400")
    b = connect(path, diag=server.diagnostics)

    # await: the error carries the rolled-back state; never fetched → null, not false.
    err = error_of(b.call("follow", {"kind": "artist", "id": "never", "await": True}), BACKEND_REJECTED)
    data = err.get("data") or {}
    assert data.get("status") == 400, err
    assert data.get("retryable") is False, err
    st = check_state(data.get("state"), "artist", "never")
    assert st["following"] is None and st["confirmed"] is None and st["pending"] is False, st
    assert st["error"] is not None and st["error"]["code"] == BACKEND_REJECTED and st["error"]["retryable"] is False, st

    # without await: optimistic reply, then the subscriber sees the rollback.
    a = connect(path, diag=server.diagnostics)
    sub = a.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "x"}]})
    a_notes = drain(a, 0.3)  # the failed initial fetch, if any
    r = check_state(b.result("follow", {"kind": "artist", "id": "x"}), "artist", "x")
    assert r["following"] is True and r["pending"] is True, r
    notes = a_notes + collect(a, lambda s: not s["pending"] and s["following"] is not True, what="the rollback")
    check_sequence(notes, sub["subscription"], first_seq=1)
    states = [n["params"]["state"] for n in notes]
    optimistic = [i for i, s in enumerate(states) if s["following"] is True and s["pending"]]
    assert optimistic, f"the subscriber never saw the optimistic state: {states!r}"
    rolled = states[-1]
    assert optimistic[-1] < len(states) - 1
    assert rolled["following"] is None and rolled["confirmed"] is None, rolled
    assert rolled["error"] is not None and rolled["error"]["code"] == BACKEND_REJECTED, rolled
    assert rolled["version"] > states[optimistic[-1]]["version"], states


def test_unavailable_backend_retries_then_rolls_back(sock_server, connect):
    server, path = sock_server("--simulate", "failure=1")
    a = connect(path, diag=server.diagnostics)
    b = connect(path, diag=server.diagnostics)
    sub = a.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "banksy"}]})
    start = time.monotonic()
    # default policy: 4 retries, base 250 ms, equal jitter → about 1.9 s to 3.8 s.
    reply = b.call("follow", {"kind": "artist", "id": "banksy", "await": True}, timeout=30)
    elapsed = time.monotonic() - start
    err = error_of(reply, BACKEND_UNAVAILABLE)
    data = err.get("data") or {}
    assert data.get("retryable") is True, err
    st = check_state(data.get("state"), "artist", "banksy")
    assert st["following"] is None and st["pending"] is False, st
    assert st["error"] is not None and st["error"]["code"] == BACKEND_UNAVAILABLE and st["error"]["retryable"], st
    assert elapsed >= 1.0, f"gave up after {elapsed:.2f}s: were there retries with backoff?"

    stats = b.result("stats")
    assert stats["backend"]["retries"] >= 1, stats["backend"]
    assert stats["backend"]["mutations"] == stats["backend"]["retries"] + 1, stats["backend"]
    assert stats["backend"]["rollbacks"] == 1, stats["backend"]

    seen_pending = []

    def rolled_back(s):
        if s["pending"] and s["following"] is True:
            seen_pending.append(s)
        return bool(seen_pending) and not s["pending"]

    # (The subscribe's own fetch fails too, and may be told before the follow.)
    notes = collect(a, rolled_back, what="the rollback after retries")
    check_sequence(notes, sub["subscription"], first_seq=1)
    states = [n["params"]["state"] for n in notes]
    assert states[-1]["following"] is None, states
    assert states[-1]["error"] is not None and states[-1]["error"]["code"] == BACKEND_UNAVAILABLE, states


def test_unavailable_backend_with_queue_stays_pending(sock_server, connect):
    server, path = sock_server("--simulate", "failure=1", "--when-exhausted", "queue")
    b = connect(path, diag=server.diagnostics)
    r = check_state(b.result("follow", {"kind": "artist", "id": "banksy"}))
    assert r["following"] is True and r["pending"] is True, r

    # Past the default 4 retries (the 5th comes ≤ 7.75 s after the first call).
    stats = rpcio.wait_for(lambda: (lambda s: s if s["backend"]["retries"] >= 5 else None)(b.result("stats")), 20, 0.2)
    assert stats, f"fewer than 5 retries in 20 s: {b.result('stats')['backend']}"
    assert stats["backend"]["rollbacks"] == 0, stats["backend"]
    assert stats["outbox"] >= 1, stats
    # A repeat of the same intent changes nothing and shows the current state.
    again = check_state(b.result("follow", {"kind": "artist", "id": "banksy"}))
    assert again["following"] is True and again["pending"] is True and again["confirmed"] is None, again
    sub = b.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "banksy"}]})
    snap = sub["snapshot"][0]
    assert snap["following"] is True and snap["pending"] is True, snap


# ==========================================================================
# 7. a reader that never reads costs bounded memory and slows nobody


def _raw_connect(path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(str(path))
    return s


def _read_line(s: socket.socket, buf: bytearray, timeout: float) -> bytes:
    deadline = time.monotonic() + timeout
    while b"\n" not in buf:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no complete line within {timeout}s; have {bytes(buf[:300])!r}"
        s.settimeout(remaining)
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            raise AssertionError(f"no complete line within {timeout}s; have {bytes(buf[:300])!r}") from None
        assert chunk, "server closed the connection"
        buf += chunk
    nl = buf.index(b"\n")
    line = bytes(buf[:nl])
    del buf[: nl + 1]
    return line


def test_stalled_reader_is_coalesced(sock_server, connect):
    TOGGLES = 100_000
    WINDOW = 256
    server, path = sock_server()
    key = {"kind": "artist", "id": "hot"}

    # The stalled reader: subscribes, reads its reply, then never reads again.
    stalled = _raw_connect(path)
    stalled_buf = bytearray()
    stalled.sendall(rpcio.frame({"jsonrpc": "2.0", "id": 1, "method": "subscribe",
                                 "params": {"topics": [{"type": "entity", **key}]}}, rpcio.NDJSON))
    # A turn's state changes are written before its replies: keep what precedes it.
    early_notes = []
    while True:
        msg = json.loads(_read_line(stalled, stalled_buf, 10))
        if msg.get("id") == 1:
            break
        early_notes.append(msg)
    assert "result" in msg, msg
    subscription = msg["result"]["subscription"]
    start_version = msg["result"]["snapshot"][0]["version"]

    observer = connect(path, diag=server.diagnostics)
    observer.result("stats")
    time.sleep(0.2)
    rss_before = vmrss(server.pid)
    stats_before = observer.result("stats")

    # The stats prober: a third connection, while the toggler runs.
    probe_latencies = []
    stop_probe = threading.Event()
    probe_errors = []

    def probe():
        try:
            while not stop_probe.is_set():
                t0 = time.monotonic()
                observer.result("stats", timeout=10)
                probe_latencies.append(time.monotonic() - t0)
                stop_probe.wait(0.1)
        except BaseException as e:  # reported by the main thread
            probe_errors.append(e)

    prober = threading.Thread(target=probe, daemon=True)

    # The toggler: raw NDJSON, pipelined with WINDOW requests in flight.
    t = _raw_connect(path)
    prefix = b'{"jsonrpc":"2.0","method":"setFollowState","params":{"kind":"artist","id":"hot","following":'
    lines = [prefix + (b"true" if i % 2 == 0 else b"false") + b'},"id":%d}\n' % i for i in range(TOGGLES)]
    sent = got = 0
    buf = bytearray()
    rss_peak = rss_before
    errors = []
    t0 = time.monotonic()
    deadline = t0 + 45
    next_sample = t0
    prober.start()
    try:
        while got < TOGGLES:
            if sent < TOGGLES and sent - got < WINDOW:
                upto = min(TOGGLES, got + WINDOW)
                t.settimeout(10)
                t.sendall(b"".join(lines[sent:upto]))
                sent = upto
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"toggler got only {got}/{TOGGLES} replies in 45 s\n{server.diagnostics()}"
            t.settimeout(min(10, remaining))
            try:
                chunk = t.recv(1 << 20)
            except socket.timeout:
                raise AssertionError(f"toggler: no reply for 10 s after {got}/{TOGGLES}\n{server.diagnostics()}")
            assert chunk, f"server closed the toggler after {got} replies\n{server.diagnostics()}"
            buf += chunk
            end = buf.rfind(b"\n")
            if end < 0:
                continue
            for line in bytes(buf[:end]).split(b"\n"):
                if b'"result"' not in line and len(errors) < 5:
                    errors.append(line)
                got += 1
            del buf[: end + 1]
            now = time.monotonic()
            if now >= next_sample:
                rss_peak = max(rss_peak, vmrss(server.pid))
                next_sample = now + 0.25
    finally:
        stop_probe.set()
        prober.join(15)
    run_seconds = time.monotonic() - t0
    assert not errors, f"toggle replies with errors: {errors}"
    assert not probe_errors, f"stats prober failed: {probe_errors[0]!r}"

    # Let the last backend call settle.
    final = rpcio.wait_for(
        lambda: (lambda s: s if not s["pending"] else None)(observer.result("getFollowState", key)), 10, 0.05)
    assert final, "the toggled entity never settled"
    assert final["following"] is (TOGGLES % 2 == 1) and final["confirmed"] is final["following"], final
    rss_after = vmrss(server.pid)
    rss_peak = max(rss_peak, rss_after)

    # While the reader is still stalled, a third connection gets stats in < 100 ms.
    quick = []
    for _ in range(5):
        s0 = time.monotonic()
        stats_after = observer.result("stats", timeout=5)
        quick.append(time.monotonic() - s0)
    changes = final["version"] - start_version
    coalesced = stats_after["notifications"]["coalesced"] - stats_before["notifications"]["coalesced"]
    figures = (
        f"toggles {TOGGLES} in {run_seconds:.1f}s; RSS before {rss_before / 2**20:.1f} MiB, "
        f"peak {rss_peak / 2**20:.1f} MiB, after {rss_after / 2**20:.1f} MiB "
        f"(growth {(rss_peak - rss_before) / 2**20:.2f} MiB); changes {changes}, coalesced {coalesced} "
        f"({100 * coalesced / max(changes, 1):.1f}%), sent {stats_after['notifications']['sent']}; "
        f"stats during run: n={len(probe_latencies)} max {1000 * max(probe_latencies or [0]):.1f} ms "
        f"median {1000 * sorted(probe_latencies or [0])[len(probe_latencies) // 2]:.1f} ms; "
        f"stats after run (reader stalled): max {1000 * max(quick):.1f} ms; "
        f"stats.residentMemoryBytes {stats_after['residentMemoryBytes']}"
    )
    print("\n[stalled-reader figures] " + figures)
    (Path(os.environ.get("NETMODEL_FIGURES_DIR", "/tmp")) / "netmodel-stalled-reader-figures.txt").write_text(figures + "\n")

    assert max(quick) < 0.100, f"stats took ≥ 100 ms with a stalled reader: {figures}"
    assert probe_latencies, "the stats prober never got an answer during the run"
    assert sorted(probe_latencies)[len(probe_latencies) // 2] < 0.100, f"stats slow during the run: {figures}"
    assert rss_peak - rss_before < 10 * 2**20, f"RSS grew by 10 MiB or more: {figures}"
    assert coalesced > 0.9 * changes, f"too little coalescing: {figures}"
    assert stats_after["residentMemoryBytes"] > 0

    # Now the stalled reader reads: its newest notification is the final state.
    notes = list(early_notes)
    stalled_deadline = time.monotonic() + 20
    while True:
        try:
            line = _read_line(stalled, stalled_buf, 1.0)
        except AssertionError:
            break  # quiet for 1 s: drained
        assert time.monotonic() < stalled_deadline, "the stalled reader's backlog never ended"
        msg = json.loads(line)
        rpcio.check_response(msg)
        assert is_state_changed(msg), msg
        notes.append(msg)
    stalled.close()
    t.close()
    assert notes, "the stalled reader got no notifications at all"
    check_sequence(notes, subscription, first_seq=1)
    assert len(notes) < changes / 2, f"{len(notes)} notifications for {changes} changes: not coalesced"
    assert notes[-1]["params"]["state"] == final, (notes[-1], final)
    assert observer.result("getFollowState", key) == final


# ==========================================================================
# 8. params validation


@pytest.mark.parametrize(
    "method,params,code,path",
    [
        ("follow", {"kind": "Artist", "id": "banksy"}, INVALID_PARAMS, "/kind"),
        ("follow", {"kind": "1artist", "id": "banksy"}, INVALID_PARAMS, "/kind"),
        ("follow", {"kind": "a" * 65, "id": "banksy"}, INVALID_PARAMS, "/kind"),
        ("follow", {"id": "banksy"}, INVALID_PARAMS, "/kind"),
        ("follow", {"kind": 7, "id": "banksy"}, INVALID_PARAMS, "/kind"),
        ("unfollow", {"kind": "artist", "id": ""}, INVALID_PARAMS, "/id"),
        ("unfollow", {"kind": "artist"}, INVALID_PARAMS, "/id"),
        ("follow", {"kind": "artist", "id": "a" * 257}, INVALID_PARAMS, "/id"),
        ("follow", {"kind": "artist", "id": "é" * 129}, INVALID_PARAMS, "/id"),  # 258 bytes, 129 characters
        ("follow", {"kind": "artist", "id": "banksy", "await": "yes"}, INVALID_PARAMS, "/await"),
        ("setFollowState", {"kind": "artist", "id": "banksy"}, INVALID_PARAMS, "/following"),
        ("setFollowState", {"kind": "artist", "id": "banksy", "following": "true"}, INVALID_PARAMS, "/following"),
        ("getFollowState", {"kind": "artist", "id": "banksy", "maxAgeMs": -1}, INVALID_PARAMS, "/maxAgeMs"),
        ("getFollowState", {"kind": "artist", "id": "banksy", "refresh": 1}, INVALID_PARAMS, "/refresh"),
        ("subscribe", {"topics": [{"type": "entity", "kind": "artist"}, {"type": "widget"}]}, INVALID_PARAMS,
         "/topics/1/type"),
        ("subscribe", {"topics": [{"type": "entity", "id": "banksy"}]}, INVALID_PARAMS, "/topics/0/kind"),
        ("subscribe", {"topics": [{"type": "entity", "kind": "Artist"}]}, INVALID_PARAMS, "/topics/0/kind"),
        ("subscribe", {"topics": [{"type": "entity", "kind": 5}]}, INVALID_PARAMS, "/topics/0/kind"),
        ("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": ""}]}, INVALID_PARAMS, "/topics/0/id"),
        ("subscribe", {"topics": [{"kind": "artist"}]}, INVALID_PARAMS, "/topics/0/type"),
        ("subscribe", {"topics": []}, INVALID_PARAMS, "/topics"),
        ("subscribe", {}, INVALID_PARAMS, "/topics"),
        ("subscribe", {"topics": [{"type": "list", "list": "noSuchList", "params": {}}]}, UNKNOWN_KIND_OR_LIST, None),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None,
)
def test_params_validation(spawn, state_dir, method, params, code, path):
    server = spawn("--state-dir", state_dir)
    c = server.conn
    err = error_of(c.call(method, params), code)
    data = err.get("data")
    assert isinstance(data, dict), err
    if path is not None:
        assert data.get("path") == path, f"{method} {params!r}: expected data.path {path!r}, got {err!r}"
    # A refused request changed nothing and subscribed nothing.
    stats = c.result("stats")
    assert stats["entities"] == 0 and stats["subscriptions"] == 0 and stats["backend"]["calls"] == 0, stats


def test_id_length_is_counted_in_bytes(spawn, state_dir):
    server = spawn("--state-dir", state_dir)
    c = server.conn
    for ident in ("a" * 256, "é" * 128, "x"):
        r = check_state(c.result("follow", {"kind": "k_9-z", "id": ident, "await": True}))
        assert r["id"] == ident and settled(True)(r), r
    kind64 = "a" + "b" * 63
    assert c.result("getFollowState", {"kind": kind64, "id": "x", "maxAgeMs": 0})["confirmed"] is False


# ==========================================================================
# 9. the auth token is never echoed or logged


def test_auth_token_never_leaks(spawn, state_dir):
    token = "tok-9f3c1e-SECRET-do-not-log"
    server = spawn("--state-dir", state_dir, "--log-level", "debug")
    c = server.conn
    r = c.result("configure", {"environment": "staging", "authToken": token})
    assert r == {"environment": "staging"}, r
    # A refused configure that carries the token must not echo it either.
    err = error_of(c.call("configure", {"environment": "", "authToken": token}), INVALID_PARAMS)
    assert err["data"]["path"] == "/environment", err
    c.result("follow", {"kind": "artist", "id": "banksy", "await": True})
    c.result("configure", {"authToken": None})
    c.result("configure", {"authToken": token})
    stats = c.result("stats")
    assert token not in json.dumps(stats)
    c.result("rpc.discover")
    c.result("initialize", {})
    server.close_stdin()
    assert server.wait(10) == 0
    assert server.conn.reader.wait_eof(5)
    replies = bytes(server.conn.reader.all)
    assert token.encode() not in replies, "the auth token appears in a reply"
    assert b"SECRET" not in replies
    err_text = server.stderr()
    assert "debug" in err_text, f"--log-level debug logged nothing, so this test proves little:\n{err_text[:2000]}"
    assert token not in err_text and "SECRET" not in err_text, "the auth token appears in stderr"
