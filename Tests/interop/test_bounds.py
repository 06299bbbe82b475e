"""Memory and API calls stay bounded (issue 17 §2-§4), through the real binary: entities
and lists nobody uses are evicted, `fetchList` refuses params a list does not take, an
automatic list refetch whose pages make no progress ends with a failure, and the REST
API never sees more calls a second than `--max-api-calls-per-second`.

Memory is read from /proc/PID/status (VmRSS); API calls from the demo server's log.
"""

from __future__ import annotations

import time

import pytest

import rpcio
from test_lists import ids, notes
from test_rest import Artsy, artsy, rest, error_of  # noqa: F401  (fixtures)

pytestmark = pytest.mark.timeout(60)

INVALID_PARAMS = -32602
LIST_ROUTE = "GET /api/v1/me/follow/artists"


def vmrss(pid) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def wait_stats(conn, predicate, timeout=10.0, what="stats"):
    deadline = time.monotonic() + timeout
    while True:
        stats = conn.result("stats", {})
        if predicate(stats):
            return stats
        assert time.monotonic() < deadline, f"{what} not reached in {timeout}s: {stats}"
        time.sleep(0.05)


def keys(snapshot):
    return {(s["kind"], s["id"]) for s in snapshot if "kind" in s}


# --------------------------------------------------------------------------
# §2 entities


def test_idle_entities_are_evicted_and_memory_returns(socket_server, connect, runtime):
    total, cap = 100_000, 1000
    server, path = socket_server(
        None, "--state-dir", runtime.root / "sd", "--max-entities", cap, "--entity-idle-ms", 200)
    observer = connect(path)
    observer.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "kept"}]})
    observer.result("follow", {"kind": "artist", "id": "again", "await": True})
    before = observer.result("getFollowState", {"kind": "artist", "id": "again"})
    rss_start = vmrss(server.pid)

    feed = connect(path)
    for start in range(0, total, 10_000):
        items = [{"kind": "artist", "id": f"feed-{n}"} for n in range(start, start + 10_000)]
        feed.result("setInterfaceState", {"items": items, "state": "visible"}, timeout=30)
    # Shown by a host, they are held: nothing is evicted while it shows them.
    held = wait_stats(observer, lambda s: s["preload"]["started"] >= total and s["preload"]["inFlight"] == 0,
                      timeout=40, what="every item loaded")
    assert held["entities"] >= total and held["entitiesEvicted"] <= 1, held  # "again" may have gone
    rss_peak = vmrss(server.pid)

    rpcio.close_socket(feed.sock)  # the host scrolled away and closed
    after = wait_stats(observer, lambda s: s["entities"] <= cap, what="entities down to the cap")
    time.sleep(1.0)  # the idle time (200 ms) and more
    after = observer.result("stats", {})
    rss_after = vmrss(server.pid)
    figures = (f"RSS start {rss_start >> 20} MiB, peak {rss_peak >> 20} MiB, after {rss_after >> 20} MiB; "
               f"entities {after['entities']}, evicted {after['entitiesEvicted']}")
    print("\n[eviction figures] " + figures)
    # Only what is still needed stays: the exact subscription's entity.
    assert after["entities"] <= 2 and after["entitiesEvicted"] >= total, figures
    wildcard = observer.result("subscribe", {"topics": [{"type": "entity", "kind": "artist"}]})["snapshot"]
    assert ("artist", "kept") in keys(wildcard) and ("artist", "feed-7") not in keys(wildcard), wildcard
    assert rss_after < rss_start + (rss_peak - rss_start) // 2, figures

    # Seen again, an evicted entity is fetched again, and its version never goes back.
    again = observer.result("getFollowState", {"kind": "artist", "id": "again"})
    assert again["confirmed"] is True and again["version"] > before["version"], (before, again)


def test_an_entity_with_a_pending_intent_is_never_evicted(artsy, rest):
    api = artsy(token="secret")  # netmodel starts without it: intents wait for credentials
    server = rest(api, "--entity-idle-ms", 100, "--max-entities", 1)
    c = server.conn
    waiting = c.result("follow", {"kind": "artist", "id": "banksy"})
    assert waiting["pending"] is True
    wait_stats(c, lambda s: s["waitingForCredentials"] == 1)
    api.faults({"method": "POST", "path": "follow/artist$", "delay_ms": 1500})
    c.result("configure", {"authToken": "secret"})
    c.result("follow", {"kind": "artist", "id": "kaws"})  # in flight for 1.5 s
    for n in range(20):  # plain reads: nothing holds these
        c.call("getFollowState", {"kind": "artist", "id": f"nobody-{n}"})
    stats = wait_stats(c, lambda s: s["entitiesEvicted"] >= 20, what="the reads evicted")
    assert stats["entities"] == 2, stats
    done = {}
    deadline = time.monotonic() + 10
    while len(done) < 2 and time.monotonic() < deadline:
        for key in ("banksy", "kaws"):
            state = c.result("getFollowState", {"kind": "artist", "id": key, "maxAgeMs": 60_000})
            if state["confirmed"] is True and not state["pending"]:
                done[key] = state
        time.sleep(0.1)
    assert set(done) == {"banksy", "kaws"}, done
    assert api.route("POST /api/v1/me/follow/artist") >= 2


# --------------------------------------------------------------------------
# §3 lists


def test_fetch_list_refuses_params_the_list_does_not_take(spawn, runtime):
    server = spawn("--state-dir", runtime.root / "sd")
    c = server.conn
    c.result("fetchList", {"list": "following/artist"})
    rss_start = vmrss(server.pid)
    blob = "x" * (1 << 20)
    for n in range(200):
        error = error_of(c.call("fetchList", {"list": "following/artist", "params": {"q": f"{n}{blob}"}}),
                         INVALID_PARAMS)
        assert error["data"]["path"] == "/params/q"
    error = error_of(c.call("subscribe", {"topics": [{"type": "list", "list": "following/gene",
                                                       "params": {"q": 1}}]}), INVALID_PARAMS)
    assert error["data"]["path"] == "/topics/0/params/q"
    stats = c.result("stats", {})
    assert stats["lists"]["held"] == 1, stats["lists"]
    growth = vmrss(server.pid) - rss_start
    assert growth < 64 << 20, f"RSS grew {growth >> 20} MiB"


def test_a_taken_param_is_refused_when_too_long(artsy, rest):
    api = artsy()
    config_lists = {"geneArtists": {
        "method": "GET", "path": "/api/v1/gene/{gene}", "params": ["gene"],
        "item": {"kind": "artist", "id": "/id"}}}
    c = rest(api, lists=config_lists).conn
    error = error_of(c.call("fetchList", {"list": "geneArtists", "params": {"gene": "g" * 1025}}),
                     INVALID_PARAMS)
    assert error["data"]["path"] == "/params/gene"
    error = error_of(c.call("fetchList", {"list": "geneArtists", "params": {"gene": "pop-art", "page": 2}}),
                     INVALID_PARAMS)
    assert error["data"]["path"] == "/params/page"
    assert c.result("fetchList", {"list": "geneArtists", "params": {"gene": "pop-art"}})["state"] != "idle"


def test_lists_nobody_uses_are_evicted(spawn, runtime):
    c = spawn("--state-dir", runtime.root / "sd", "--max-lists", 10, "--list-idle-ms", 200).conn
    c.result("follow", {"kind": "k7", "id": "one", "await": True})
    first = c.result("fetchList", {"list": "following/k7"})
    for n in range(50):
        c.result("fetchList", {"list": f"following/k{n}"})
    stats = wait_stats(c, lambda s: s["lists"]["held"] <= 10, what="lists down to the cap")
    c.result("subscribe", {"topics": [{"type": "list", "list": "following/k3"}]})
    stats = wait_stats(c, lambda s: s["lists"]["held"] == 1, what="idle lists evicted")
    assert stats["lists"]["evicted"] >= 49, stats["lists"]  # all 50 but the subscribed one
    # Asked for again, an evicted list loads again, its version above what it showed.
    again = c.result("fetchList", {"list": "following/k7"})
    assert ids(again) == ["one"] and again["version"] > first["version"], (first, again)


# --------------------------------------------------------------------------
# §4 a refetch whose pages make no progress


def follow_object(slug):
    return {"id": f"f-{slug}", "artist": {"id": slug, "name": slug.title()}, "created_at": "2024-01-01T00:00:00Z"}


CURSOR_FEED = {"artistFeed": {
    "method": "GET", "path": "/api/v1/me/follow/artists",
    "paging": {"style": "cursor", "parameter": "cursor", "next": "/next"}, "items": "/items",
    "item": {"kind": "artist", "id": "/artist/id", "following": True}, "dependsOn": ["artist"]}}
LINK_FEED = {"artistFeed": {
    "method": "GET", "path": "/api/v1/me/follow/artists", "paging": {"style": "link"},
    "item": {"kind": "artist", "id": "/artist/id", "following": True}, "dependsOn": ["artist"]}}


def link_to(page):
    return {"Link": f'</api/v1/me/follow/artists?page={page}>; rel="next"'}


# (config, the two pages first loaded, the answer every later call gets, what the failure says)
RUNAWAYS = {
    "empty pages with new cursors": (
        CURSOR_FEED,
        [{"body": {"items": [follow_object("a"), follow_object("b")], "next": "p2"}},
         {"body": {"items": [follow_object("c")], "next": ""}}],
        {"body": {"items": [], "next": "e{n}"}, "sequence": True}, "stopped after 4 pages"),
    "a cursor that repeats": (
        CURSOR_FEED,
        [{"body": {"items": [follow_object("a")], "next": "p2"}}, {"body": {"items": [follow_object("c")]}}],
        {"body": {"items": [], "next": "same"}}, "fetched before"),
    "a Link next that repeats": (
        LINK_FEED,
        [{"body": [follow_object("a")], "headers": link_to(2)}, {"body": [follow_object("c")]}],
        {"body": [], "headers": link_to(2)}, "fetched before"),
    "a page that repeats": (
        CURSOR_FEED,
        [{"body": {"items": [follow_object("a"), follow_object("b")], "next": "p2"}},
         {"body": {"items": [follow_object("c")]}}],
        {"body": {"items": [follow_object("a"), follow_object("b")], "next": "r{n}"}, "sequence": True},
        # Read first as the head having moved by one page (walked again), then given up.
        "did not advance: page 2 holds the same items as the page before, also when walked again"),
}


@pytest.mark.parametrize("case", list(RUNAWAYS))
def test_a_refetch_without_progress_ends_with_a_failure(artsy, rest, case):
    lists, pages, forever, says = RUNAWAYS[case]
    api = artsy()
    c = rest(api, lists=lists).conn
    api.faults(*({"path": "follow/artists$", "status": 200, **page} for page in pages))
    c.result("subscribe", {"topics": [{"type": "list", "list": "artistFeed"}]})
    notes(c, lambda p: p["state"]["state"] == "loaded")
    loaded = c.result("fetchList", {"list": "artistFeed", "page": "next"})
    assert loaded["hasMore"] is False and len(loaded["items"]) in (2, 3), loaded
    api.faults({"path": "follow/artists$", "status": 200, "times": None, **forever})
    calls = api.route(LIST_ROUTE)
    # A confirmed follow makes the list out of date; with a subscriber it is fetched again.
    c.result("follow", {"kind": "artist", "id": "banksy", "await": True})
    failed = notes(c, lambda p: p["state"]["state"] == "failure", timeout=5)[-1]["state"]
    assert says in failed["error"]["message"], failed
    assert ids(failed) == ids(loaded), "a failed refetch keeps what was shown"
    time.sleep(0.5)
    refetched = api.route(LIST_ROUTE) - calls
    assert refetched <= 4, f"{refetched} pages asked for"
    assert c.result("stats", {})["lists"]["pagingFailures"] == 1


# --------------------------------------------------------------------------
# §4 API calls per second


def test_api_calls_per_second_are_bounded(artsy, rest):
    api = artsy()
    rate = 20
    c = rest(api, "--max-api-calls-per-second", rate).conn
    items = [{"kind": "artist", "id": f"cell-{n}"} for n in range(60)]
    c.result("setInterfaceState", {"items": items, "state": "visible"})
    deadline = time.monotonic() + 15
    while api.route("GET /api/v1/artist/{id}") < 60:
        assert time.monotonic() < deadline, api.stats()["routes"]
        time.sleep(0.1)
    arrivals = sorted(e["at"] for e in api.stats()["log"] if e["path"].startswith("/api/"))
    # A token bucket of `rate` a second after a burst of `rate`: in any second, at most 2 × rate.
    busiest = max(sum(1 for t in arrivals if start <= t < start + 1.0) for start in arrivals)
    span = arrivals[-1] - arrivals[0]
    assert busiest <= 2 * rate + 1, f"{busiest} calls in one second"
    assert span >= (len(arrivals) - rate) / rate * 0.8, f"{len(arrivals)} calls in {span:.2f}s"
