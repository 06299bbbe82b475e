"""A mutation answered "not accepted" is never sent (issue 25, item 1).

When the intent cannot be made durable (the state folder removed while the server
runs, or a full disk: here a file size limit), `follow` is answered -32001 "could not
save the intent" with `retryable: true`. Such an intent must never reach the API,
never show as followed
(no `stateChanged` with `following: true`, no `confirmed: true`), and leave no trace:
the request goes out only once the intent is durable. Checked against the Artsy demo
server (which counts the requests it receives) on stdio and on the socket, with and
without `await`, and on the local backend.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
from pathlib import Path

import pytest

import rpcio
from test_intents import LIMITED
from test_rest import Artsy, artsy  # noqa: F401  (fixture)

pytestmark = pytest.mark.timeout(60)

UNAVAILABLE = -32001
POST_ARTIST = "POST /api/v1/me/follow/artist"
A, B, C = ({"kind": "artist", "id": i} for i in ("banksy", "kaws", "yayoi-kusama"))


def kill9(server):
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(10)


def start(spawn, runtime, transport: str, *args):
    if transport == "stdio":
        server = spawn(*args)
        conn = server.conn
    else:
        path = runtime.root / "refused.sock"
        server = spawn(f"--socket={path}", "--no-stdio", *args, stdio=False)
        rpcio.wait_for_socket(server, path)
        conn, sock = rpcio.socket_conn(str(path), rpcio.NDJSON, server.diagnostics)
        server.socket = sock
    conn.result("stats")  # up and answering
    return server, conn


def refuse(conn, key, awaiting: bool) -> dict:
    params = {**key, "await": True} if awaiting else dict(key)
    reply = conn.call("follow", params)
    assert "error" in reply, f"a mutation whose intent is not durable must not be acknowledged: {reply}"
    error = reply["error"]
    assert error["code"] == UNAVAILABLE and error["data"]["retryable"] is True, error
    assert "could not save the intent" in error["message"], error
    assert error["data"]["state"]["following"] is not True, error
    assert error["data"]["state"]["pending"] is False, error
    return error


def shown_following(notes: list, key) -> list:
    return [s for s in notes if s["id"] == key["id"] and (s["following"] is True or s["confirmed"] is True)]


@pytest.mark.parametrize("transport", ["stdio", "socket"])
@pytest.mark.parametrize("awaiting", [False, True], ids=["reply", "await"])
def test_a_refused_intent_never_reaches_the_api(artsy, spawn, runtime, transport, awaiting):
    api = artsy()
    config = runtime.root / "artsy.json"
    config.write_text(json.dumps(api.config()))
    state = runtime.root / "state-refused"
    state.mkdir(mode=0o700)
    args = ("--backend", "rest", "--config", config, "--state-dir", state)
    server, c = start(spawn, runtime, transport, *args)
    assert c.result("follow", {**A, "await": True})["confirmed"] is True
    assert api.route(POST_ARTIST) == 1
    c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": B["id"]}]})

    shutil.rmtree(state)
    refuse(c, B, awaiting)
    # The folder is back: the next mutation is durable and sent. Its answer comes after
    # any request queued before it, so the API has seen B's by now if it was sent.
    state.mkdir(mode=0o700)
    assert c.result("follow", {**C, "await": True})["confirmed"] is True
    assert api.route(POST_ARTIST) == 2, api.log()
    assert B["id"] not in api.control("GET", "follows").get("artist", [])
    notes = rpcio.notes_until(c, lambda s: s["id"] == B["id"] and s["pending"] is False)
    read = c.result("getFollowState", {**B, "maxAgeMs": 0})
    assert read["following"] is False and read["confirmed"] is False, read
    assert shown_following(notes, B) == [], notes
    kill9(server)

    again, c2 = start(spawn, runtime, transport, *args)
    assert c2.result("stats")["outbox"] == 0
    assert c2.result("getFollowState", {**B, "maxAgeMs": 0})["following"] is False
    assert api.route(POST_ARTIST) == 2, api.log()


# The plain local backend's change is a record of the same commit as the intent, so it
# is taken back with it; behind `--simulate` the change reaches it later, on its own.
@pytest.mark.parametrize("simulate", [[], ["--simulate", "latency=50,failure=0"]], ids=["local", "simulated"])
@pytest.mark.parametrize("awaiting", [False, True], ids=["reply", "await"])
def test_a_refused_intent_leaves_no_follow_on_the_local_backend(spawn, runtime, awaiting, simulate):
    state = runtime.root / "state-refused-local"
    state.mkdir(mode=0o700)
    args = ("--state-dir", state, *simulate)
    server, c = start(spawn, runtime, "stdio", *args)
    assert c.result("follow", {**A, "await": True})["confirmed"] is True
    c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": B["id"]}]})
    shutil.rmtree(state)
    refuse(c, B, awaiting)
    state.mkdir(mode=0o700)
    assert c.result("follow", {**C, "await": True})["confirmed"] is True
    notes = rpcio.notes_until(c, lambda s: s["id"] == B["id"] and s["pending"] is False)
    read = c.result("getFollowState", {**B, "maxAgeMs": 0})
    assert read["following"] is False and read["confirmed"] is False, read
    following = c.result("fetchList", {"list": "following/artist"})
    assert B["id"] not in [item["id"] for item in following["items"]], following
    assert shown_following(notes, B) == [], notes
    kill9(server)
    again, c2 = start(spawn, runtime, "stdio", *args)
    assert [c2.result("getFollowState", k)["following"] for k in (A, B, C)] == [True, False, True]


def test_an_intent_refused_for_a_full_disk_never_reaches_the_api(artsy, netmodel_bin, runtime):
    """A write past RLIMIT_FSIZE fails with EFBIG, as one on a full disk with ENOSPC."""
    api = artsy()
    config = runtime.root / "artsy.json"
    config.write_text(json.dumps(api.config()))
    state = runtime.root / "state-refused-full"
    state.mkdir(mode=0o700)
    argv = [sys.executable, "-c", LIMITED, "300", str(netmodel_bin), "serve", "--backend", "rest",
            "--config", str(config), "--state-dir", str(state)]
    server = rpcio.ServerProc(argv, env=runtime.env, stderr_path=runtime.logs / "refused-full.stderr")
    try:
        c = server.conn
        assert c.result("follow", {**A, "await": True})["confirmed"] is True  # a short line fits
        refused_id = "x" * 250  # its line does not
        reply = c.call("follow", {"kind": "artist", "id": refused_id})
        assert reply.get("error", {}).get("code") == UNAVAILABLE, reply
        assert "File too large" in reply["error"]["message"], reply
        # Another short one after it fits again (the torn line was cut off) and is sent.
        assert c.result("follow", {**C, "await": True})["confirmed"] is True
        posts = [e["body"] for e in api.log() if f"{e['method']} {e['path']}" == POST_ARTIST]
        assert posts == [f"artist_id={A['id']}", f"artist_id={C['id']}"], posts
    finally:
        server.stop()
