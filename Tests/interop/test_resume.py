"""Resumable subscriptions (issue 31 §3): `subscribe {topics, since: {instance,
version}}` answers only what changed after `version` when this process still knows
that history, and the whole snapshot with `reset: true` otherwise; a notification that
leaves nothing queued says `through`, the version up to which the connection has every
change. On stdio and a socket, both framings, the local backend; a reader that stops
reading, evictions, a restart.
"""

from __future__ import annotations

import json
import socket

import pytest

import rpcio

pytestmark = pytest.mark.timeout(90)
INVALID_PARAMS = -32602


def artists(n: int, prefix: str = "a") -> list[dict]:
    return [{"type": "entity", "kind": "artist", "id": f"{prefix}{i}"} for i in range(n)]


def key(topic: dict) -> dict:
    return {"kind": topic["kind"], "id": topic["id"]}


def start(spawn, runtime, transport: str, framing: str = rpcio.NDJSON, *args):
    if transport == "stdio":
        server = spawn(*args, framing=framing)
        return server, server.conn
    path = runtime.root / "resume.sock"
    server = spawn(f"--socket={path}", "--no-stdio", *args, stdio=False)
    rpcio.wait_for_socket(server, path)
    conn, sock = rpcio.socket_conn(str(path), framing, server.diagnostics)
    server.socket = sock
    return server, conn


def settle(conn) -> dict:
    """Every message up to the reply of a `sync`: the last `through` seen (or None)."""
    conn.send(conn.request_obj("sync", {}, id="settle"))
    through = None
    while True:
        message = conn.recv()
        if message.get("id") == "settle":
            return {"through": through}
        if message.get("method") == "stateChanged" and "through" in message["params"]:
            through = message["params"]["through"]


@pytest.mark.parametrize("transport,framing", [
    ("stdio", rpcio.NDJSON), ("stdio", rpcio.LSP), ("socket", rpcio.NDJSON), ("socket", rpcio.LSP)])
def test_a_resumed_subscribe_answers_only_what_changed(spawn, runtime, transport, framing):
    server, c = start(spawn, runtime, transport, framing)
    topics = artists(20)
    first = c.result("subscribe", {"topics": topics})
    assert first["reset"] is True and len(first["snapshot"]) == 20, first
    watermark = settle(c)["through"]
    assert watermark is not None and watermark >= first["version"], watermark
    for n in (3, 11):
        c.result("follow", {"kind": "artist", "id": f"a{n}", "await": True})
    mark = settle(c)["through"]
    resumed = c.result("subscribe", {"topics": topics, "since": {"instance": first["instance"], "version": watermark}})
    assert resumed["reset"] is False, resumed
    assert sorted(s["id"] for s in resumed["snapshot"]) == ["a11", "a3"], resumed
    assert all(s["following"] is True and s["version"] > watermark for s in resumed["snapshot"]), resumed
    assert resumed["version"] >= mark
    # Nothing changed after the newest watermark: an empty snapshot, still a subscription.
    empty = c.result("subscribe", {"topics": topics, "since": {"instance": first["instance"], "version": mark}})
    assert empty["snapshot"] == [] and empty["reset"] is False, empty
    c.result("unfollow", {"kind": "artist", "id": "a3", "await": True})
    notes = settle(c)
    assert notes["through"] is not None


def test_another_instance_or_a_version_not_reached_gets_the_whole_snapshot(spawn, runtime):
    server, c = start(spawn, runtime, "stdio")
    topics = artists(5)
    first = c.result("subscribe", {"topics": topics})
    settle(c)
    other = c.result("subscribe", {"topics": topics, "since": {"instance": "0000000000000000", "version": 1}})
    assert other["reset"] is True and len(other["snapshot"]) == 5, other
    ahead = first["version"] + 10 ** 6
    future = c.result("subscribe", {"topics": topics, "since": {"instance": first["instance"], "version": ahead}})
    assert future["reset"] is True and len(future["snapshot"]) == 5, future


def test_a_restart_on_the_same_state_folder_is_a_reset_and_versions_still_grow(spawn, runtime):
    state = runtime.root / "state-resume"
    state.mkdir()
    server, c = start(spawn, runtime, "stdio", rpcio.NDJSON, "--state-dir", state)
    topics = artists(4)
    first = c.result("subscribe", {"topics": topics})
    c.result("follow", {"kind": "artist", "id": "a1", "await": True})
    watermark = settle(c)["through"]
    server.stop()
    server, c = start(spawn, runtime, "stdio", rpcio.NDJSON, "--state-dir", state)
    again = c.result("subscribe", {"topics": topics, "since": {"instance": first["instance"], "version": watermark}})
    assert again["instance"] != first["instance"] and again["reset"] is True, again
    assert len(again["snapshot"]) == 4 and all(s["version"] > watermark for s in again["snapshot"]), again


def test_an_eviction_after_the_watermark_resets_a_wildcard_but_not_exact_topics(spawn, runtime):
    server, c = start(spawn, runtime, "stdio", rpcio.NDJSON, "--entity-idle-ms", "300")
    wildcard = [{"type": "entity", "kind": "artist"}]
    first = c.result("subscribe", {"topics": wildcard})
    exact = c.result("subscribe", {"topics": artists(3, "x")})
    watermark = settle(c)["through"]
    c.result("unsubscribe", {"subscription": exact["subscription"]})
    since = {"instance": first["instance"], "version": watermark}
    # Unused and no longer subscribed, the x's go once idle.
    assert rpcio.wait_for(lambda: c.result("stats")["entitiesEvicted"] >= 3, 10, 0.1)
    resumed = c.result("subscribe", {"topics": wildcard, "since": since})
    assert resumed["reset"] is True and resumed["snapshot"] == [], (
        "the client may hold states of evicted entities: the whole snapshot (now empty)", resumed)
    # An exact topic of an evicted entity resumes: held again, it shows a version above
    # the watermark, so the delta carries it, unknown again as the server holds it.
    back = c.result("subscribe", {"topics": artists(3, "x"), "since": since})
    assert back["reset"] is False and sorted(s["id"] for s in back["snapshot"]) == ["x0", "x1", "x2"], back
    assert all(s["version"] > watermark and s["confirmed"] is None for s in back["snapshot"]), back


def test_a_list_topic_resumes_with_the_entities(spawn, runtime):
    server, c = start(spawn, runtime, "stdio")
    topics = [{"type": "list", "list": "following/artist"}, *artists(3)]
    first = c.result("subscribe", {"topics": topics})
    watermark = settle(c)["through"]
    since = {"instance": first["instance"], "version": watermark}
    quiet = c.result("subscribe", {"topics": topics, "since": since})
    assert quiet["snapshot"] == [], quiet
    c.result("follow", {"kind": "artist", "id": "a2", "await": True})
    settle(c)
    resumed = c.result("subscribe", {"topics": topics, "since": since})
    assert {s.get("id") or s.get("list") for s in resumed["snapshot"]} == {"a2", "following/artist"}, resumed


def test_a_reader_that_stops_reading_resumes_from_its_last_through_without_a_gap(spawn, runtime):
    """A subscriber stops reading while another connection changes its entities: its
    queue coalesces (the newest state per entity waits, in the order first queued), so
    a version seen is no watermark; `through` is. Cut off after any message of the
    stream, resuming from the last `through` read loses no change: checked at every cut
    from the final states (a resume answers the states above the watermark), and once
    for real on a new connection."""
    path = runtime.root / "slow.sock"
    server = spawn(f"--socket={path}", "--no-stdio", stdio=False)
    rpcio.wait_for_socket(server, path)
    topics = artists(400, "slow-artist-with-a-long-id-")
    # A bare socket, read by nobody until the end: the test client's reader thread
    # would take everything at once.
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.connect(str(path))
    slow.sendall(json.dumps({"jsonrpc": "2.0", "id": "sub", "method": "subscribe",
                             "params": {"topics": topics}}).encode() + b"\n")
    writer, writer_sock = rpcio.socket_conn(str(path), rpcio.NDJSON, server.diagnostics)
    assert rpcio.wait_for(lambda: writer.result("stats")["subscriptions"] == 1, 10)
    for round_ in range(8):
        batch = [writer.request_obj("follow" if round_ % 2 == 0 else "unfollow", key(t), id=f"{round_}-{i}")
                 for i, t in enumerate(topics)]
        writer.send(batch)
        writer.recv_reply(timeout=30)
    writer.result("sync", {}, timeout=30)
    [queued] = [c["queued"] for c in writer.result("inspect", {})["connections"]["list"] if c["subscriptions"]]
    assert queued > 0, "the reader fell behind: notifications wait, coalesced"
    # Everything that waits for the reader, up to its own sync's reply (which follows them).
    slow.sendall(b'{"jsonrpc":"2.0","id":"drain","method":"sync","params":{}}\n')
    lines = []
    buffer = b""
    slow.settimeout(30)
    while not lines or json.loads(lines[-1]).get("id") != "drain":
        buffer += slow.recv(1 << 16)
        *complete, buffer = buffer.split(b"\n")
        lines.extend(complete)
    messages = [json.loads(line) for line in lines]
    [first] = [m["result"] for m in messages if m.get("id") == "sub"]
    start_states = {s["id"]: s for s in first["snapshot"]}
    stream = [m["params"] for m in messages if m.get("method") == "stateChanged"]
    final = {s["id"]: s for s in writer.result("subscribe", {"topics": topics})["snapshot"]}
    versions = [m["state"]["version"] for m in stream]
    assert versions != sorted(versions), "the stream was coalesced out of version order"
    held = dict(start_states)
    watermark = first["version"]
    for cut, params in enumerate([None, *stream]):
        if params is not None:
            state = params["state"]
            held[state["id"]] = state
            watermark = params.get("through", watermark)
        resumed = {i: s for i, s in final.items() if s["version"] > watermark}
        view = {**held, **resumed}
        stale = [i for i in final if view[i]["version"] != final[i]["version"]]
        assert not stale, f"cut after {cut} messages, watermark {watermark}: {len(stale)} entities missed"
    # One cut for real: the first message that leaves the queue empty after the backlog.
    real = next(i for i, m in enumerate(stream) if "through" in m and i > 0 and "through" not in stream[i - 1])
    watermark = stream[real]["through"]
    again, again_sock = rpcio.socket_conn(str(path), rpcio.NDJSON, server.diagnostics)
    resumed = again.result("subscribe", {"topics": topics, "since": {"instance": first["instance"], "version": watermark}})
    assert resumed["reset"] is False
    assert {s["id"] for s in resumed["snapshot"]} == {i for i, s in final.items() if s["version"] > watermark}
    slow.close()
    for sock in (again_sock, writer_sock):
        rpcio.close_socket(sock)


@pytest.mark.parametrize("since,path", [
    ([1], "/since"),
    ({"version": 3}, "/since/instance"),
    ({"instance": 7, "version": 3}, "/since/instance"),
    ({"instance": "abc"}, "/since/version"),
    ({"instance": "abc", "version": -1}, "/since/version"),
    ({"instance": "abc", "version": 1.5}, "/since/version"),
    ({"instance": "abc", "version": "3"}, "/since/version"),
    ({"instance": "abc", "version": 3, "\u212a": 1}, "/since/\u212a"),
    ({"instance": "abc", "version": 3, "a/b": 1}, "/since/a~1b"),
])
def test_a_malformed_since_is_refused_and_the_connection_goes_on(spawn, runtime, since, path):
    server, c = start(spawn, runtime, "stdio")
    reply = c.call("subscribe", {"topics": artists(1), "since": since})
    assert reply["error"]["code"] == INVALID_PARAMS and reply["error"]["data"]["path"] == path, reply
    assert c.result("stats")["subscriptions"] == 0, "nothing was subscribed"
    assert c.result("subscribe", {"topics": artists(1)})["reset"] is True


def test_a_huge_version_is_refused_or_a_reset_never_a_crash(spawn, runtime):
    server, c = start(spawn, runtime, "stdio")
    c.result("subscribe", {"topics": artists(1)})
    instance = c.result("stats")["instance"]
    for version in (2 ** 53, 2 ** 63 - 1):
        reply = c.result("subscribe", {"topics": artists(1), "since": {"instance": instance, "version": version}})
        assert reply["reset"] is True, reply
    # Beyond what the JSON parser takes as an integer: a parse error, the connection goes on.
    reply = c.call("subscribe", {"topics": artists(1), "since": {"instance": instance, "version": 2 ** 64}})
    assert reply["error"]["code"] in (INVALID_PARAMS, -32700), reply
    assert json.loads(json.dumps(c.result("stats")))["subscriptions"] == 3
