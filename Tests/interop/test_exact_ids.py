"""Ids and list params are bytes (issue 25, item 2), through the real binary.

Swift's `String ==` and hash are Unicode canonical equivalence: `caf\u00e9` (NFC) equals
`cafe\u0301` (NFD), and the Kelvin sign U+212A equals the letter K. The APIs behind
netmodel compare ids by bytes (the demo servers here: Python `str`, compared by code
point), so each spelling is an entity, a request and a list of its own: followed,
read, batched, listed, subscribed and kept across a restart apart from the other.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs, unquote

import pytest

import rpcio
from test_batches import Spotify, configuration as spotify_configuration  # noqa: F401
from test_rest import CONFIG, THING, BY_TAG, Artsy, artsy, rest, request_lines  # noqa: F401  (fixtures)

pytestmark = pytest.mark.timeout(90)

NFC, NFD = "caf\u00e9", "cafe\u0301"
KELVIN = "\u212a"  # canonically equivalent to "K"
PAIRS = [(NFC, NFD), ("K", KELVIN)]
INVALID_PARAMS = -32602


def open_local(spawn, socket_server, connect, runtime, transport, framing):
    state = runtime.root / "sd"
    if transport == "stdio":
        server = spawn("--state-dir", state, framing=framing)
        return server, server.conn
    path = runtime.root / f"nm-{len(list(runtime.root.glob('nm-*')))}.sock"
    server, _ = socket_server(path, "--state-dir", state)
    return server, connect(path, framing, diag=server.diagnostics)


def state(c, id_):
    return c.result("getFollowState", {"kind": "artist", "id": id_})


@pytest.mark.parametrize("transport", ["stdio", "socket"])
@pytest.mark.parametrize("framing", rpcio.FRAMINGS)
@pytest.mark.parametrize("one,other", PAIRS)
def test_the_local_backend_keeps_each_spelling_apart_and_across_a_restart(
    spawn, socket_server, connect, runtime, transport, framing, one, other
):
    server, c = open_local(spawn, socket_server, connect, runtime, transport, framing)
    assert c.result("follow", {"kind": "artist", "id": one, "await": True})["confirmed"] is True
    theirs = state(c, other)
    assert theirs["id"] == other and theirs["following"] is False, theirs
    # Unfollowing the other spelling leaves the first followed.
    c.result("unfollow", {"kind": "artist", "id": other, "await": True})
    assert state(c, one)["following"] is True
    assert c.result("follow", {"kind": "artist", "id": other, "await": True})["following"] is True
    assert c.result("unfollow", {"kind": "artist", "id": one, "await": True})["following"] is False
    assert state(c, other)["following"] is True
    listed = c.result("fetchList", {"list": "following/artist"})
    assert [item["id"] for item in listed["items"]] == [other], listed
    server.stop()
    again, c = open_local(spawn, socket_server, connect, runtime, transport, framing)
    assert state(c, one)["following"] is False and state(c, other)["following"] is True
    assert [i["id"] for i in c.result("fetchList", {"list": "following/artist"})["items"]] == [other]


@pytest.mark.parametrize("one,other", PAIRS)
def test_an_exact_subscription_hears_only_its_own_spelling(spawn, runtime, one, other):
    c = spawn("--state-dir", runtime.root / "sd").conn
    sub = c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": other}]})
    assert [s["id"] for s in sub["snapshot"]] in ([], [other]), sub
    c.result("follow", {"kind": "artist", "id": one, "await": True})
    c.result("follow", {"kind": "artist", "id": other, "await": True})
    notes = rpcio.notes_until(c, lambda state: state["following"] is True)
    assert {n["id"] for n in notes} == {other}, notes
    c.result("unfollow", {"kind": "artist", "id": one, "await": True})
    c.assert_quiet(0.3)


@pytest.fixture
def spotify():
    server = Spotify()
    yield server
    server.server.shutdown()


@pytest.mark.parametrize("one,other", PAIRS)
def test_a_batched_read_asks_for_each_spelling_and_reads_each_answer(spotify, serve_rest, one, other):
    spotify.followed = {one}
    c = serve_rest(spotify_configuration(spotify.url), state="state").conn
    for index, id_ in enumerate([one, other]):
        c.send({"jsonrpc": "2.0", "id": index, "method": "getFollowState", "params": {"kind": "artist", "id": id_}})
    replies = {}
    while len(replies) < 2:
        message = c.recv(timeout=20)
        if "id" in message:
            replies[message["id"]] = message["result"]
    assert (replies[0]["id"], replies[0]["confirmed"]) == (one, True), replies
    assert (replies[1]["id"], replies[1]["following"], replies[1]["confirmed"]) == (other, False, False), replies
    asked = [i for q in spotify.checks() for v in parse_qs(q)["ids"] for i in v.split(",")]
    assert sorted(asked) == sorted([one, other]), spotify.checks()


def thing_server(artsy, rest):
    api = artsy()
    config = json.loads(CONFIG.read_text())
    by_k = {**BY_TAG, "path": "/api/v1/tag/{K}/things", "params": ["K"]}
    lists = {**config["lists"], "byTag": BY_TAG, "byK": by_k}
    return api, rest(api, kinds={**config["kinds"], "thing": THING}, lists=lists)


@pytest.mark.parametrize("one,other", PAIRS)
def test_a_subset_answer_names_only_the_spelling_it_holds(artsy, rest, one, other):
    api, server = thing_server(artsy, rest)
    api.control("POST", "follows", {"artist": [one]})
    c = server.conn
    theirs = c.result("getFollowState", {"kind": "artist", "id": other, "maxAgeMs": 0})
    assert (theirs["id"], theirs["following"]) == (other, False), theirs
    mine = c.result("getFollowState", {"kind": "artist", "id": one, "maxAgeMs": 0})
    assert mine["following"] is True, mine


@pytest.mark.parametrize("one,other", PAIRS)
def test_a_list_param_in_each_spelling_is_a_list_of_its_own(artsy, rest, one, other):
    api, server = thing_server(artsy, rest)
    c = server.conn
    first = c.result("fetchList", {"list": "byTag", "params": {"tag": one}})
    second = c.result("fetchList", {"list": "byTag", "params": {"tag": other}})
    assert json.loads(json.dumps(first["params"])) == {"tag": one}
    assert second["params"] == {"tag": other}, second
    asked = [unquote(line.split()[1]) for line in request_lines(api) if "/tag/" in line]
    assert asked == [f"/api/v1/tag/{one}/things", f"/api/v1/tag/{other}/things"], asked


def test_a_param_name_in_another_spelling_is_not_the_configured_one(artsy, rest):
    api, server = thing_server(artsy, rest)
    c = server.conn
    reply = c.call("fetchList", {"list": "byK", "params": {KELVIN: "x"}})
    assert reply.get("error", {}).get("code") == INVALID_PARAMS, reply
    assert reply["error"]["data"]["path"] == "/params/" + KELVIN, reply
    # Both spellings in one request: refused, whichever comes first.
    for params in ({"K": "x", KELVIN: "y"}, {KELVIN: "y", "K": "x"}):
        reply = c.call("fetchList", {"list": "byK", "params": params})
        assert reply.get("error", {}).get("code") == INVALID_PARAMS, reply
    assert not [line for line in request_lines(api) if "/tag/" in line]
    assert c.result("fetchList", {"list": "byK", "params": {"K": "x"}})["params"] == {"K": "x"}


def test_an_environment_or_value_named_in_another_spelling_is_not_the_configured_one(artsy, rest):
    api = artsy()
    config_environments = {"local": api.url, "K": api.url}
    c = rest(api, environments=config_environments, values={"K": {"value": "x"}}).conn
    for params, path in (({"environment": KELVIN}, "/environment"), ({"values": {KELVIN: "y"}}, "/values/" + KELVIN),
                         ({"values": {KELVIN: None}}, "/values/" + KELVIN)):
        reply = c.call("configure", params)
        assert reply.get("error", {}).get("code") == INVALID_PARAMS, (params, reply)
        assert reply["error"]["data"]["path"] == path, reply
    assert c.result("configure", {"environment": "K"})["environment"] == "K"
    assert c.result("configure", {"values": {"K": "y"}})["environment"] == "K"
