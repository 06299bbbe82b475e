"""Batched state reads answered by position, through the real binary.

The API is Spotify-like: "Check If User Follows Artists or Users",
`GET /v1/me/following/contains?type=artist&ids=a,b,c` (at most 50 ids, comma-separated)
answers `[true, false, true]`, one boolean per id in the order asked
(https://developer.spotify.com/documentation/web-api/reference/check-current-user-follows).
A small server in this file plays it; the configuration uses `batch.join` and
`batch.by: "position"`.
"""

from __future__ import annotations

import threading
from urllib.parse import parse_qs

import demoserver  # examples/demoserver.py (demo.py puts examples/ on the path)
import pytest

pytestmark = pytest.mark.timeout(60)

UNAVAILABLE = -32001


class Spotify:
    """Follows of artists, the calls made, and how the next check answers (`answer`)."""

    def __init__(self):
        self.followed: set[str] = set()
        self.calls: list[tuple[str, str]] = []
        self.answer = "right"  # or "short": one boolean fewer than the ids asked
        spotify = self

        class Handler(demoserver.Handler):
            def answer(self, method, url, body):
                spotify.calls.append((method, url.query))
                ids = [i for v in parse_qs(url.query).get("ids", []) for i in v.split(",")]
                if method == "GET" and url.path == "/v1/me/following/contains":
                    flags = [i in spotify.followed for i in ids]
                    return 200, flags[:-1] if spotify.answer == "short" else flags, None
                if method in ("PUT", "DELETE") and url.path == "/v1/me/following":
                    (spotify.followed.update if method == "PUT" else spotify.followed.difference_update)(ids)
                    return 204, None, None
                return 404, {"error": {"status": 404, "message": "Not found."}}, None

        self.server = demoserver.make_server(Handler, quiet=True)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def checks(self) -> list[str]:
        return [q for m, q in self.calls if m == "GET"]


def configuration(url: str) -> dict:
    endpoint = {"path": "/v1/me/following", "query": {"type": "artist", "ids": "{id}"}}
    return {
        "environments": {"local": url},
        "retry": {"maxRetries": 0, "whenExhausted": "rollback"},
        "kinds": {
            "artist": {
                "follow": {"method": "PUT", **endpoint},
                "unfollow": {"method": "DELETE", **endpoint},
                "state": {
                    "method": "GET", "path": "/v1/me/following/contains",
                    "query": {"type": "artist", "ids": "{ids}"},
                    "batch": {"maxIds": 50, "windowMs": 20, "join": ",", "by": "position"},
                },
            }
        },
    }


@pytest.fixture
def spotify():
    server = Spotify()
    yield server
    server.server.shutdown()


@pytest.fixture
def netmodel(serve_rest):
    return lambda api: serve_rest(configuration(api.url), state="state")


def read_all(conn, ids):
    for index, id_ in enumerate(ids):
        conn.send({"jsonrpc": "2.0", "id": index, "method": "getFollowState", "params": {"kind": "artist", "id": id_}})
    replies = {}
    while len(replies) < len(ids):
        message = conn.recv(timeout=20)
        if "id" in message:
            replies[message["id"]] = message
    return [replies[i] for i in range(len(ids))]


def test_sixty_reads_are_two_calls_answered_by_position(spotify, netmodel):
    ids = [f"artist{n:02}" for n in range(60)]
    spotify.followed = {i for n, i in enumerate(ids) if n % 4 == 1}
    c = netmodel(spotify).conn
    replies = read_all(c, ids)
    assert [r["result"]["confirmed"] for r in replies] == [n % 4 == 1 for n in range(60)], replies
    checks = spotify.checks()
    assert len(checks) == 2, checks  # 50 + 10: fewer calls than ids
    asked = [q.split("ids=", 1)[1].split(",") for q in checks]
    assert sorted(len(a) for a in asked) == [10, 50] and sorted(sum(asked, [])) == ids
    assert all(q.startswith("type=artist&ids=") and "&" not in q[len("type=artist&"):] for q in checks)


def test_an_answer_of_the_wrong_length_fails_every_id_of_the_call(spotify, netmodel):
    spotify.followed = {"a"}
    spotify.answer = "short"
    c = netmodel(spotify).conn
    replies = read_all(c, ["a", "b", "c"])
    assert len(spotify.checks()) == 1
    for reply in replies:
        assert reply.get("error", {}).get("code") == UNAVAILABLE, reply
        assert "2 entries" in reply["error"]["message"] and "3 ids" in reply["error"]["message"], reply
    # The right answer afterwards is read as it says.
    spotify.answer = "right"
    replies = read_all(c, ["a", "b", "c"])
    assert [r["result"]["confirmed"] for r in replies] == [True, False, False]


def test_a_follow_then_a_read_round_trips_through_the_server(spotify, netmodel):
    c = netmodel(spotify).conn
    assert c.result("follow", {"kind": "artist", "id": "x y", "await": True})["confirmed"] is True
    assert spotify.followed == {"x y"}
    state = c.result("getFollowState", {"kind": "artist", "id": "x y", "maxAgeMs": 0})
    assert state["confirmed"] is True
    assert spotify.checks()[-1] == "type=artist&ids=x%20y"
