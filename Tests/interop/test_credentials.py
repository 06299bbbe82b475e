"""An accepted intent is never dropped for want of credentials: the real binary
against the Artsy demo server with a token (docs/protocol.md "Mutations", backend schema
`retry.onUnauthorized`). Call counts and follows are read from the server.
"""

from __future__ import annotations

import signal
import time

import pytest

import rpcio
from rpcio import notes_until
from test_rest import Artsy, artsy, rest  # noqa: F401  (fixtures)

pytestmark = pytest.mark.timeout(90)

UNAUTHORIZED = -32003
TOKEN, NEW_TOKEN = "tok-first-5b1e", "tok-second-77c0"
POST_ARTIST = "POST /api/v1/me/follow/artist"


def waiting(state):
    return state["pending"] is True and (state["error"] or {}).get("code") == UNAUTHORIZED


def settled_following(state):
    return state["confirmed"] is True and state["pending"] is False and state["error"] is None


def test_a_replayed_follow_meeting_401_waits_for_configure(artsy, rest):
    api = artsy(token=TOKEN)
    first = rest(api)
    c = first.conn
    c.result("configure", {"authToken": TOKEN})
    api.faults({"method": "POST", "hang": True, "times": None})
    assert c.result("follow", {"kind": "artist", "id": "banksy"})["pending"] is True
    rpcio.wait_for(lambda: api.route(POST_ARTIST) >= 1, 5)
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    api.control("DELETE", "faults")

    # The next start has no token yet: the replay meets 401 and keeps the intent.
    second = rest(api, "--log-level", "info")
    c2 = second.conn
    sub = c2.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "banksy"}]})
    if not waiting(sub["snapshot"][0]):
        notes_until(c2, waiting)
    stats = c2.result("stats")
    assert stats["waitingForCredentials"] == 1 and stats["outbox"] == 1, stats
    time.sleep(0.5)  # nothing is retried without credentials
    posts = api.route(POST_ARTIST)
    assert c2.result("stats")["backend"]["retries"] == 0
    # A read, refused too (the state was never confirmed), shows the same waiting state.
    reply = c2.call("getFollowState", {"kind": "artist", "id": "banksy"})
    state = reply.get("result") or reply["error"]["data"]["state"]
    assert state["following"] is True and waiting(state), state
    assert "banksy" not in api.control("GET", "follows").get("artist", [])

    # The host signs in: the intent goes out at once and settles; subscribers are told.
    c2.result("configure", {"authToken": TOKEN})
    notes_until(c2, settled_following)
    assert api.route(POST_ARTIST) == posts + 1
    assert "banksy" in api.control("GET", "follows")["artist"]
    stats = c2.result("stats")
    assert stats["waitingForCredentials"] == 0 and stats["outbox"] == 0, stats
    assert "waits for credentials" in second.stderr()


def test_an_expired_token_keeps_the_click_until_the_host_signs_in_again(artsy, rest):
    api = artsy(token=TOKEN)
    c = rest(api).conn
    c.result("configure", {"authToken": TOKEN})
    assert c.result("follow", {"kind": "artist", "id": "kaws", "await": True})["confirmed"] is True
    c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist"}]})
    api.control("POST", "token", {"token": NEW_TOKEN})  # the old token expires
    reply = c.call("follow", {"kind": "artist", "id": "banksy", "await": True})
    assert reply["error"]["code"] == UNAUTHORIZED, reply
    state = reply["error"]["data"]["state"]
    assert state["following"] is True and state["pending"] is True, state  # not rolled back
    assert c.result("stats")["waitingForCredentials"] == 1
    # An unfollow of kaws meanwhile waits too; both go once the new token comes.
    c.result("unfollow", {"kind": "artist", "id": "kaws"})
    notes_until(c, lambda s: s["id"] == "kaws" and waiting(s))
    assert c.result("stats")["waitingForCredentials"] == 2
    c.result("configure", {"authToken": NEW_TOKEN})
    done = {}
    notes_until(c, lambda s: done.update({s["id"]: s}) or (
        "banksy" in done and done["banksy"]["pending"] is False and done["banksy"]["confirmed"] is True
        and "kaws" in done and done["kaws"]["pending"] is False and done["kaws"]["confirmed"] is False))
    follows = api.control("GET", "follows")["artist"]
    assert "banksy" in follows and "kaws" not in follows


def test_a_read_answered_401_changes_nothing_and_is_read_again_after_configure(artsy, rest):
    api = artsy(token=TOKEN)
    c = rest(api).conn
    c.result("configure", {"authToken": TOKEN})
    assert c.result("follow", {"kind": "artist", "id": "kaws", "await": True})["confirmed"] is True
    c.result("configure", {"authToken": None})
    reply = c.call("getFollowState", {"kind": "artist", "id": "kaws", "refresh": True})
    assert reply["error"]["code"] == UNAUTHORIZED, reply
    shown = reply["error"]["data"]["state"]
    assert shown["following"] is True and shown["confirmed"] is True and shown["pending"] is False, shown
    reads = api.route("GET /api/v1/me/follow/artists")
    c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "kaws"}]})
    c.result("configure", {"authToken": TOKEN})
    notes_until(c, lambda s: s["error"] is None and s["confirmed"] is True)
    assert api.route("GET /api/v1/me/follow/artists") == reads + 1


def test_rolling_back_on_401_is_an_opt_in(artsy, rest):
    api = artsy(token=TOKEN)
    c = rest(api, retry={"onUnauthorized": "rollback"}).conn
    reply = c.call("follow", {"kind": "artist", "id": "banksy", "await": True})
    assert reply["error"]["code"] == UNAUTHORIZED
    assert reply["error"]["data"]["state"]["pending"] is False, reply
    stats = c.result("stats")
    assert stats["outbox"] == 0 and stats["waitingForCredentials"] == 0, stats
    c.result("configure", {"authToken": TOKEN})
    time.sleep(0.3)
    assert "banksy" not in api.control("GET", "follows").get("artist", [])


@pytest.mark.parametrize("transport", ["stdio", "socket"])
def test_a_second_await_on_an_intent_waiting_for_credentials_is_answered_at_once(
    artsy, rest, connect, runtime, transport
):
    api = artsy(token=TOKEN)
    path = runtime.run / "cred.sock"
    server = rest(api, f"--socket={path}")
    if transport == "socket":
        rpcio.wait_for_socket(server, path)
        c = connect(path)
    else:
        c = server.conn
    follow = {"kind": "artist", "id": "banksy", "await": True}
    first = c.call("follow", follow)
    assert first["error"]["code"] == UNAUTHORIZED, first
    posts = api.route(POST_ARTIST)
    # Before the fix the second one never answered: nothing is sent until credentials change.
    for attempt in range(2):
        again = c.call("follow", follow, timeout=15)
        assert again["error"]["code"] == UNAUTHORIZED, again
        assert again["error"]["data"]["state"]["pending"] is True, again
        assert again["error"]["message"] == first["error"]["message"], again
    assert api.route(POST_ARTIST) == posts
    assert c.result("stats")["waitingForCredentials"] == 1
    # The host signs in: the waiting intent goes out, and an await now settles.
    c.result("configure", {"authToken": TOKEN})
    settled = c.result("follow", follow)
    assert settled["confirmed"] is True and settled["pending"] is False, settled
