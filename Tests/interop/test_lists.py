"""Lists and preload through the real binary (docs/protocol.md "Lists: `fetchList`" and
"Preload: `setInterfaceState` and `getEntity`"): on the local backend, and on the
REST backend against the Artsy demo server, with call counts read from that server.
"""

from __future__ import annotations

import time

import pytest

from test_rest import Artsy, artsy, rest, error_of, pipeline  # noqa: F401  (fixtures)

pytestmark = pytest.mark.timeout(90)

INVALID_PARAMS, UNKNOWN = -32602, -32004


def notes(conn, until, timeout=10.0):
    """stateChanged params until `until(params)` is true; returns them all."""
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = conn.recv(timeout=max(0.05, deadline - time.monotonic()))
        if message.get("method") == "stateChanged":
            seen.append(message["params"])
            if until(message["params"]):
                return seen
    raise AssertionError(f"not seen in {timeout}s; got {seen[-3:]}")


def ids(state):
    return [item["id"] for item in state["items"]]


# --------------------------------------------------------------------------
# local backend: following/<kind>


def test_local_following_list_pages_and_joins(spawn, runtime):
    server = spawn("--state-dir", runtime.root / "sd")
    c = server.conn
    wanted = [f"a{n:03d}" for n in range(60)]
    pipeline(c, [("follow", {"kind": "artist", "id": i, "await": True}) for i in wanted])
    first = c.result("fetchList", {"list": "following/artist"})
    assert first["state"] == "loaded" and ids(first) == wanted[:50] and first["hasMore"] is True
    second = c.result("fetchList", {"list": "following/artist", "page": "next"})
    assert ids(second) == wanted and second["hasMore"] is False and second["version"] > first["version"]
    assert all(item["following"] is True for item in second["items"])
    # The join: an unfollow shows in the list's items at once.
    sub = c.result("subscribe", {"topics": [{"type": "list", "list": "following/artist"}]})
    assert sub["snapshot"][0]["list"] == "following/artist"
    c.result("unfollow", {"kind": "artist", "id": "a007"})
    seen = notes(c, lambda p: any(i["id"] == "a007" and i["following"] is False for i in p["state"]["items"])
                 or "a007" not in ids(p["state"]))
    # Then the confirmed unfollow makes the list out of date; with a subscriber it is
    # fetched again and a007 leaves it.
    seen = notes(c, lambda p: p["state"]["state"] == "loaded" and "a007" not in ids(p["state"]))
    assert [p["seq"] for p in seen] == sorted(p["seq"] for p in seen)
    stats = c.result("stats", {})["lists"]
    assert stats["invalidations"] >= 1 and stats["pageCalls"] >= 3


def test_concurrent_fetches_share_one_page(spawn, runtime):
    server = spawn("--state-dir", runtime.root / "sd", "--simulate", "latency=100")
    c = server.conn
    replies = pipeline(c, [("fetchList", {"list": "following/gene"})] * 20)
    assert all(r["result"]["state"] == "loaded" for r in replies.values())
    stats = c.result("stats", {})["lists"]
    assert stats["pageCalls"] == 1 and stats["sharedFetches"] == 19


def test_list_errors(spawn, runtime):
    c = spawn("--state-dir", runtime.root / "sd").conn
    reply = c.call("fetchList", {"list": "nope"})
    error = error_of(reply, UNKNOWN)
    assert error["data"]["list"] == "nope"
    # It names the lists there are: on the local backend, following/<any kind>.
    assert error["data"]["lists"] == ["following/{kind}"] and "more" not in error["data"], error
    assert "following/{kind}" in error["message"], error
    error = error_of(c.call("fetchList", {"list": "following/artist", "page": "last"}), INVALID_PARAMS)
    assert error["data"]["path"] == "/page"
    error = error_of(c.call("fetchList", {"list": "following/artist", "params": {"x": [1]}}), INVALID_PARAMS)
    assert error["data"]["path"] == "/params/x"
    error = error_of(c.call("subscribe", {"topics": [{"type": "list", "list": "nope"}]}), UNKNOWN)
    error = error_of(c.call("setInterfaceState", {"items": [{"kind": "artist"}], "state": "visible"}), INVALID_PARAMS)
    assert error["data"]["path"] == "/items/0/id"
    error = error_of(c.call("setInterfaceState", {"items": [], "state": "seen"}), INVALID_PARAMS)
    assert error["data"]["path"] == "/state"


def pointer_tokens(path):
    """RFC 6901's reference tokens of `path`; a `~` not followed by 0 or 1 is no pointer."""
    assert path.startswith("/"), path
    tokens = []
    for raw in path[1:].split("/"):
        token, i = "", 0
        while i < len(raw):
            if raw[i] == "~":
                assert raw[i + 1 : i + 2] in ("0", "1"), f"{path!r} is no JSON Pointer"
                token += "~" if raw[i + 1] == "0" else "/"
                i += 2
            else:
                token += raw[i]
                i += 1
        tokens.append(token)
    return tokens


def test_an_error_path_reads_back_as_the_param_it_names(spawn, runtime):
    """A `~` or `/` followed by a combining mark is one character but still a `~` or `/`:
    the path escapes it, so the pointer reads back as the name (issue 28: one escaper)."""
    c = spawn("--state-dir", runtime.root / "sd").conn
    for name in ("x~\u0301", "a/\u0301b", "p~q/r", "plain"):
        error = error_of(c.call("fetchList", {"list": "following/artist", "params": {name: [1]}}), INVALID_PARAMS)
        assert pointer_tokens(error["data"]["path"]) == ["params", name]


def test_a_failed_page_keeps_the_items_and_is_retried(spawn, runtime):
    # status=503 and failure=1: every call fails — the first page too.
    c = spawn("--state-dir", runtime.root / "sd", "--simulate", "failure=1,status=503", "--seed", "1").conn
    failed = c.result("fetchList", {"list": "following/artist"})
    assert failed["state"] == "failure" and failed["error"]["code"] == -32001 and failed["hasMore"] is True


def test_preload_on_the_local_backend_loads_states(spawn, runtime):
    c = spawn("--state-dir", runtime.root / "sd", "--simulate", "latency=20").conn
    items = [{"kind": "artist", "id": f"p{n}"} for n in range(30)]
    assert c.result("setInterfaceState", {"items": items, "state": "visible"}) == {"accepted": 30}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        stats = c.result("stats", {})
        if stats["preload"]["started"] == 30 and stats["preload"]["inFlight"] == 0:
            break
        time.sleep(0.05)
    assert stats["preload"]["started"] == 30 and stats["backend"]["reads"] == 30
    # Loaded once: cached now, a second pass starts nothing.
    c.result("setInterfaceState", {"items": items, "state": "none"})
    c.result("setInterfaceState", {"items": items, "state": "visible"})
    assert c.result("stats", {})["preload"]["started"] == 30
    state = c.result("getEntity", {"kind": "artist", "id": "p3"})
    assert state["confirmed"] is False and state["attributes"] is None


# --------------------------------------------------------------------------
# REST: the Artsy demo server


def seed_followed_artists(api, count):
    names = [f"artist-{n:02d}" for n in range(count)]
    api.control("POST", "follows", {"artist": names})
    return names


def test_rest_list_pages_to_the_end_with_sections(artsy, rest):
    api = artsy()
    names = seed_followed_artists(api, 45)
    c = rest(api).conn
    state = c.result("fetchList", {"list": "followedArtists"})
    while state["hasMore"]:
        state = c.result("fetchList", {"list": "followedArtists", "page": "next"})
    assert ids(state) == names and state["state"] == "loaded"
    assert api.route("GET /api/v1/me/follow/artists") == 3
    queries = [e["query"] for e in api.stats()["log"] if e["path"] == "/api/v1/me/follow/artists"]
    assert [q for q in queries if "page=3" in q and "size=20" in q], queries
    assert state["sections"] and sum(s["count"] for s in state["sections"]) == 45
    assert set(state["items"][0]["attributes"]) <= {"id", "name", "years", "image_url"}


def test_rest_page_three_fails_then_is_retried(artsy, rest):
    api = artsy()
    seed_followed_artists(api, 45)
    c = rest(api).conn
    c.result("fetchList", {"list": "followedArtists"})
    c.result("fetchList", {"list": "followedArtists", "page": "next"})
    api.faults({"path": "/me/follow/artists$", "status": 500, "times": 1})
    failed = c.result("fetchList", {"list": "followedArtists", "page": "next"})
    assert failed["state"] == "failure" and len(failed["items"]) == 40 and failed["hasMore"] is True
    retried = c.result("fetchList", {"list": "followedArtists", "page": "next"})
    assert retried["state"] == "loaded" and len(retried["items"]) == 45 and retried["hasMore"] is False


def test_rest_refresh_while_loaded_and_invalidation(artsy, rest):
    api = artsy()
    seed_followed_artists(api, 3)
    c = rest(api).conn
    sub = c.result("subscribe", {"topics": [{"type": "list", "list": "followedArtists"}]})
    assert sub["snapshot"][0]["state"] in ("loading", "loaded")
    notes(c, lambda p: p["state"]["state"] == "loaded")
    # A follow through netmodel: confirmed, so the list is fetched again and banksy is in it.
    c.result("follow", {"kind": "artist", "id": "banksy", "await": True})
    seen = notes(c, lambda p: p["state"]["state"] == "loaded" and "banksy" in ids(p["state"]))
    assert seen[-1]["state"]["items"][0]["attributes"]["name"] == "Banksy"
    # A refresh keeps the items while it loads.
    before = api.route("GET /api/v1/me/follow/artists")
    api.faults({"path": "/me/follow/artists$", "delay_ms": 300, "times": 1})
    c.send({"jsonrpc": "2.0", "id": "r", "method": "fetchList", "params": {"list": "followedArtists", "page": "refresh"}})
    loading = notes(c, lambda p: p["state"]["state"] == "loading")[-1]["state"]
    assert len(loading["items"]) == 4
    notes(c, lambda p: p["state"]["state"] == "loaded")
    assert api.route("GET /api/v1/me/follow/artists") == before + 1


def test_rest_preload_loads_details_and_batched_states(artsy, rest):
    api = artsy()
    c = rest(api).conn
    cells = ["banksy", "kaws", "yayoi-kusama", "keith-haring", "cindy-sherman", "ai-weiwei"]
    items = [{"kind": "artist", "id": i} for i in cells]
    c.result("setInterfaceState", {"items": items[:3], "state": "visible"})
    c.result("setInterfaceState", {"items": items[3:], "state": "preload"})
    # Until all six were asked for and answered (not a fixed wait: a loaded machine may
    # take longer than any), then a moment for a duplicate to show up.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        preload = c.result("stats", {})["preload"]
        if (
            preload["started"] >= 6
            and preload["queued"] == 0
            and preload["inFlight"] == 0
            and api.route("GET /api/v1/artist/{id}") >= 6
        ):
            break
        time.sleep(0.05)
    time.sleep(0.3)
    routes = api.stats()["routes"]
    assert routes["GET /api/v1/artist/{id}"] == 6, routes  # one detail each
    assert routes["GET /api/v1/me/follow/artists"] <= 2, routes  # states batched
    state = c.result("getEntity", {"kind": "artist", "id": "kaws"})
    assert state["attributes"]["name"] == "KAWS" or state["attributes"]["id"] == "kaws", state
    assert api.stats()["routes"]["GET /api/v1/artist/{id}"] == 6, "cached: no second detail call"
    fresh = c.result("getEntity", {"kind": "artist", "id": "kaws", "refresh": True})
    assert fresh["attributes"]["id"] == "kaws"
    assert api.stats()["routes"]["GET /api/v1/artist/{id}"] == 7


def test_rest_an_unknown_list_is_answered_with_the_lists_there_are(artsy, rest):
    c = rest(artsy()).conn
    for reply in (c.call("fetchList", {"list": "followedArtist"}),
                  c.call("subscribe", {"topics": [{"type": "list", "list": "followedArtist"}]})):
        error = error_of(reply, UNKNOWN)
        assert error["data"]["lists"] == ["followedArtists", "followedGenes", "followedProfiles"], error
        assert error["message"] == (
            "unknown list followedArtist; the lists are followedArtists, followedGenes, followedProfiles"), error


def test_rest_an_unknown_list_names_at_most_32_lists(artsy, rest):
    api = artsy()
    base = api.config()["lists"]["followedArtists"]
    many = {f"list{n:02d}": base for n in range(40)}
    c = rest(api, lists=many).conn
    error = error_of(c.call("fetchList", {"list": "nope"}), UNKNOWN)
    assert error["data"]["lists"] == [f"list{n:02d}" for n in range(32)] and error["data"]["more"] == 8, error
    assert error["message"].endswith("list31 and 8 more"), error


def test_rest_getentity_of_an_unknown_artist_is_rejected(artsy, rest):
    api = artsy()
    c = rest(api).conn
    error = error_of(c.call("getEntity", {"kind": "artist", "id": "nobody"}), -32002)
    assert error["data"]["status"] == 404 and error["data"]["state"]["attributes"] is None
