"""Promises of the README checked where they used to break (issue "Every promise
holds end to end"): bad kinds refused at once, requests sent as notifications run,
a restart told apart from a reconnect with versions that never go backwards, and
an awaited mutation cut short by the shutdown answered with its state.
"""

from __future__ import annotations

import signal
import time

import pytest

import rpcio
from test_rest import Artsy, artsy, rest  # noqa: F401  (fixtures)

pytestmark = pytest.mark.timeout(90)

UNKNOWN_KIND, SHUTTING_DOWN = -32004, -32005


# --------------------------------------------------------------------------
# Bad kinds are refused at once


@pytest.mark.parametrize("method,params,path", [
    ("follow", {"kind": "fair", "id": "frieze"}, "/kind"),
    ("unfollow", {"kind": "fair", "id": "frieze"}, "/kind"),
    ("setFollowState", {"kind": "fair", "id": "frieze", "following": True}, "/kind"),
    ("follow", {"kind": "fair", "id": "frieze", "await": True}, "/kind"),
    ("getFollowState", {"kind": "fair", "id": "frieze"}, "/kind"),
    ("getEntity", {"kind": "fair", "id": "frieze"}, "/kind"),
    ("subscribe", {"topics": [{"type": "entity", "kind": "artist"}, {"type": "entity", "kind": "fair"}]},
     "/topics/1/kind"),
    ("setInterfaceState", {"state": "visible", "items": [{"kind": "artist", "id": "banksy"},
                                                         {"kind": "fair", "id": "frieze"}]}, "/items/1/kind"),
])
def test_a_kind_the_configuration_lacks_is_refused_before_anything_changes(artsy, rest, method, params, path):
    api = artsy()
    c = rest(api).conn
    watcher = c.result("subscribe", {"topics": [{"type": "entity"}]})
    before = c.result("stats")
    reply = c.call(method, params)
    assert reply.get("error", {}).get("code") == UNKNOWN_KIND, reply
    assert reply["error"]["data"]["kind"] == "fair" and reply["error"]["data"]["path"] == path, reply
    assert "artist" in reply["error"]["message"], reply  # says which kinds exist
    c.assert_quiet(0.3)  # no notification to the wildcard subscriber
    after = c.result("stats")
    assert after["entities"] == before["entities"] == 0, after
    assert after["outbox"] == 0 and after["backend"]["calls"] == before["backend"]["calls"], after
    assert after["preload"]["queued"] == 0 and after["preload"]["started"] == 0, after
    assert after["subscriptions"] == 1, after  # the refused subscribe made none
    assert sum(api.stats()["routes"].values()) == 0
    assert watcher["snapshot"] == []


def test_the_local_backend_takes_any_wellformed_kind(spawn, runtime):
    c = spawn("--state-dir", runtime.root / "sd").conn
    assert c.result("follow", {"kind": "fair", "id": "frieze", "await": True})["confirmed"] is True


# --------------------------------------------------------------------------
# Notifications are acted on


def test_a_follow_sent_as_a_notification_runs_and_is_never_answered(spawn, runtime):
    server = spawn("--state-dir", runtime.root / "sd")
    c = server.conn
    c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "kaws"}]})
    c.notify("follow", {"kind": "artist", "id": "kaws"})
    seen = []
    deadline = time.monotonic() + 5
    while not (seen and seen[-1]["confirmed"] is True):
        assert time.monotonic() < deadline, seen
        message = c.recv(timeout=5)
        assert "id" not in message, f"a notification was answered: {message}"
        seen.append(message["params"]["state"])
    assert c.result("getFollowState", {"kind": "artist", "id": "kaws"})["following"] is True
    # A bad one: no answer at all, the reason in the log, the connection goes on.
    c.notify("follow", {"kind": "artist"})
    assert c.result("stats")["notificationsReceived"] >= 2
    c.assert_quiet(0.2)
    said = [line for line in server.stderr().splitlines() if "a notification failed" in line]
    assert len(said) == 1 and "method=follow" in said[0] and "id is required" in said[0], server.stderr()
    assert "connection=1" in said[0], said


def test_a_follow_sent_as_a_notification_is_durable(artsy, rest, spawn, runtime):
    """Kill -9 while the API hangs: the next start sends the intent."""
    api = artsy()
    api.faults({"method": "POST", "hang": True, "times": None})
    server = rest(api)
    server.conn.notify("follow", {"kind": "artist", "id": "banksy"})
    rpcio.wait_for(lambda: server.conn.result("stats")["outbox"] == 1, 5)
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(10)
    api.control("DELETE", "faults")
    again = rest(api, "--log-level", "debug")
    state = rpcio.wait_for(
        lambda: (lambda s: s if s["confirmed"] else None)(
            again.conn.result("getFollowState", {"kind": "artist", "id": "banksy", "refresh": True})), 10)
    assert state and state["following"] is True, (state, again.stderr()[-2000:])
    assert "banksy" in api.control("GET", "follows")["artist"]


# --------------------------------------------------------------------------
# A restart is distinguishable from a reconnect


def test_instance_ids_and_versions_across_a_restart(spawn, runtime, socket_server, connect):
    state_dir = runtime.root / "sd"
    server, path = socket_server(None, "--state-dir", state_dir)
    c = connect(path, diag=server.diagnostics)
    first = c.result("initialize")["serverInfo"]["instance"]
    sub = c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "kaws"}]})
    assert sub["instance"] == first and c.result("stats")["instance"] == first
    held = c.result("follow", {"kind": "artist", "id": "kaws", "await": True})["version"]
    # A second connection to the same process: same instance.
    assert connect(path).result("initialize")["serverInfo"]["instance"] == first
    server.signal(signal.SIGTERM)
    assert server.wait() == 0
    server2, _ = socket_server(None, "--state-dir", state_dir)
    c2 = connect(path, diag=server2.diagnostics)
    sub2 = c2.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "kaws"}]})
    assert sub2["instance"] != first and len(sub2["instance"]) == 16
    # Every state of the new run is newer than anything the last run showed.
    assert sub2["snapshot"][0]["version"] > held, (held, sub2)
    fresh = c2.result("follow", {"kind": "artist", "id": "new-one"})
    assert fresh["version"] > held
    listed = c2.result("fetchList", {"list": "following/artist"})
    assert listed["version"] > held
    # And after a kill -9 too.
    top = c2.result("unfollow", {"kind": "artist", "id": "kaws", "await": True})["version"]
    server2.proc.send_signal(signal.SIGKILL)
    server2.proc.wait(10)
    server3, _ = socket_server(None, "--state-dir", state_dir)
    c3 = connect(path, diag=server3.diagnostics)
    assert c3.result("getFollowState", {"kind": "artist", "id": "kaws"})["version"] > top


def test_an_awaited_mutation_cut_short_by_shutdown_carries_its_state(artsy, rest):
    api = artsy()
    api.faults({"method": "POST", "hang": True, "times": None})
    server = rest(api)
    c = server.conn
    c.send(c.request_obj("follow", {"kind": "artist", "id": "banksy", "await": True}, id=5))
    rpcio.wait_for(lambda: api.stats()["routes"].get("POST /api/v1/me/follow/artist", 0) >= 1, 5)
    server.signal(signal.SIGTERM)
    reply = c.recv_reply()
    assert reply["id"] == 5 and reply["error"]["code"] == SHUTTING_DOWN, reply
    state = reply["error"]["data"]["state"]
    assert state["kind"] == "artist" and state["id"] == "banksy" and state["pending"] is True, reply
    assert state["following"] is True and reply["error"]["data"]["retryable"] is True, reply
    assert server.wait() == 0
