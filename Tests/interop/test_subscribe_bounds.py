"""`subscribe` does bounded work (issue 25 item 9), through the real binary: topics named
more than once are one topic, a
wildcard's snapshot lists each entity once however often it is named, and a snapshot
that would pass `--max-unread-bytes` is refused whole (-32602 naming the limit) instead
of being written.
"""

from __future__ import annotations

import threading
import time

import pytest

import rpcio

pytestmark = pytest.mark.timeout(120)

INVALID_PARAMS = -32602


@pytest.fixture(params=["stdio", "socket"])
def peer(request, spawn, socket_server, connect, runtime):
    """(conn, open_another) on stdio or the socket of a server on the local backend."""

    def start(*extra):
        if request.param == "stdio":
            server = spawn("--state-dir", runtime.root / "sd", *extra)
            return server.conn, None
        server, path = socket_server(None, "--state-dir", runtime.root / "sd", *extra)
        return connect(path), (lambda: connect(path))

    return start


def hold(conn, count, kind="artist"):
    """Reads `count` entities, so the server holds them in memory."""
    for start in range(0, count, 5000):
        batch = [conn.request_obj("getFollowState", {"kind": kind, "id": f"e{n}"})
                 for n in range(start, min(count, start + 5000))]
        conn.send(batch)
        replies = conn.recv_reply(timeout=60, what="a batch of reads")
        assert len(replies) == len(batch) and all("result" in r for r in replies), replies[:2]


def test_topics_named_again_are_one_topic(peer):
    conn, _ = peer()
    hold(conn, 20)
    conn.result("follow", {"kind": "artist", "id": "banksy", "await": True})
    listed = {"type": "list", "list": "following/artist"}
    everything = {"type": "entity"}
    banksy = {"type": "entity", "kind": "artist", "id": "banksy"}
    topics = [listed] * 3000 + [everything] * 1000 + [banksy] * 500 + [{"type": "entity", "kind": "artist"}] * 200
    reply = conn.result("subscribe", {"topics": topics}, timeout=60)
    snapshot = reply["snapshot"]
    lists = [s for s in snapshot if "list" in s]
    entities = [(s["kind"], s["id"]) for s in snapshot if "kind" in s]
    assert len(lists) == 1, f"{len(lists)} ListStates for one list named 3000 times"
    assert len(entities) == len(set(entities)) == 21, entities
    assert ("artist", "banksy") in entities

    # One subscription, one notification per change, however often a topic was named.
    conn.result("unfollow", {"kind": "artist", "id": "banksy"})
    states = rpcio.notes_until(conn, lambda s: s.get("id") == "banksy" and s["pending"] is False
                               and s["confirmed"] is False, timeout=10)
    versions = [s["version"] for s in states if s.get("id") == "banksy"]
    assert len(versions) == len(set(versions)), f"a state pushed twice: {versions}"


def test_a_snapshot_over_the_unread_limit_is_refused_and_subscribes_nothing(peer):
    conn, _ = peer("--max-unread-bytes", 4096)
    hold(conn, 100)
    error = conn.call("subscribe", {"topics": [{"type": "entity"}]})["error"]
    assert error["code"] == INVALID_PARAMS, error
    assert error["data"]["path"] == "/topics" and error["data"]["limit"] == 4096, error
    assert "--max-unread-bytes" in error["message"], error
    assert conn.result("stats", {})["subscriptions"] == 0

    # Many distinct topics add up as well.
    lists = [{"type": "list", "list": "following/artist", "params": {}}]
    many = lists + [{"type": "entity", "kind": "artist", "id": f"e{n}"} for n in range(100)]
    error = conn.call("subscribe", {"topics": many})["error"]
    assert error["code"] == INVALID_PARAMS and error["data"]["limit"] == 4096, error

    # What fits is answered as before.
    small = conn.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "e1"}]})
    assert [s["id"] for s in small["snapshot"]] == ["e1"]
    assert conn.result("stats", {})["subscriptions"] == 1


def test_a_wildcard_named_a_thousand_times_walks_the_store_once(socket_server, connect, runtime):
    """With 20,000 entities held, 1,000 copies of {"type":"entity"}: the snapshot lists
    each once, and another peer's `stats` is answered meanwhile. The delay is printed
    (a figure for the report), never asserted: timing depends on the machine."""
    server, path = socket_server(None, "--state-dir", runtime.root / "sd")
    subscriber, other = connect(path), connect(path)
    hold(subscriber, 20_000)
    waited: list[float] = []

    def ask_stats():
        start = time.monotonic()
        other.result("stats", {}, timeout=60)
        waited.append(time.monotonic() - start)

    asker = threading.Thread(target=ask_stats)
    subscriber.send(subscriber.request_obj("subscribe", {"topics": [{"type": "entity"}] * 1000}))
    asker.start()
    reply = subscriber.recv_reply(timeout=100, what="the subscribe reply")
    asker.join(timeout=100)
    snapshot = reply["result"]["snapshot"]
    assert len(snapshot) == 20_000 and len({s["id"] for s in snapshot}) == 20_000
    print(f"\n[subscribe figures] another peer's stats waited {waited[0] * 1000:.0f} ms")
