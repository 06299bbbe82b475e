"""Preload priority and cancellation reach the HTTP client's own queue (issue 10,
part 2): with `maxInFlight` below the preloader's 16 loads at once, detail calls wait
for a connection; `none` must give them up there and `visible` (and user work) must
overtake them. Real binary, Artsy demo server with slow detail endpoints; the server
says which calls it received and when they arrived (`log[].at`, monotonic seconds).
"""

from __future__ import annotations

import time

import pytest

from test_rest import Artsy, artsy, rest  # noqa: F401  (fixtures)

pytestmark = pytest.mark.timeout(90)

DETAIL_MS = 300
DETAIL = "/api/v1/artist/"


def slow_details(api, names):
    api.control("POST", "follows", {"artist": names})  # in the catalogue, so details answer 200
    api.faults({"method": "GET", "path": "^/api/v1/artist/", "delay_ms": DETAIL_MS, "times": None})


def detail_calls(api):
    """(id, arrival time) of every detail call, in order of arrival."""
    log = api.stats()["log"]
    calls = [(e["path"][len(DETAIL):], e["at"]) for e in log if e["path"].startswith(DETAIL)]
    return sorted(calls, key=lambda call: call[1])


def wait_on_wire(api, count):
    """Until the API has `count` detail calls arrived (counted on arrival; the log has
    them when answered): the first wave is out. A fixed sleep was too short on a loaded
    machine, and a late call of the first wave counted as one that overtook."""
    deadline = time.monotonic() + 10
    while sum(n for route, n in api.stats()["calls"].items() if route.split(" ", 1)[-1].startswith(DETAIL)) < count:
        assert time.monotonic() < deadline, f"fewer than {count} detail calls arrived: {api.stats()['calls']}"
        time.sleep(0.005)


def items(names):
    return [{"kind": "artist", "id": n} for n in names]


def wait_idle(conn, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        preload = conn.result("stats", {})["preload"]
        if preload["inFlight"] == 0 and preload["queued"] == 0:
            return preload
        time.sleep(0.05)
    raise AssertionError(f"preload still busy after {timeout}s: {preload}")


@pytest.mark.parametrize("max_in_flight", [1, 2, 6])
def test_none_cancels_detail_calls_waiting_for_a_connection(artsy, rest, max_in_flight):
    api = artsy()
    names = [f"cancel-{n:02d}" for n in range(40)]
    slow_details(api, names)
    c = rest(api, maxInFlight=max_in_flight).conn
    c.result("setInterfaceState", {"items": items(names), "state": "preload"})
    wait_on_wire(api, max_in_flight)
    left, kept = names[:35], names[35:]
    c.result("setInterfaceState", {"items": items(left), "state": "none"})
    acknowledged = time.monotonic()
    wait_idle(c)
    calls = detail_calls(api)
    for_left = [(n, at) for n, at in calls if n in left]
    late = [(n, round((at - acknowledged) * 1000)) for n, at in for_left if at > acknowledged]
    assert late == [], f"detail calls for cancelled items started after `none` (ms after): {late}"
    assert len(for_left) <= max_in_flight, f"only the calls on the wire may finish: {for_left}"
    assert sorted(n for n, _ in calls if n in kept) == kept, "each item still shown loads once"
    for name in kept:
        assert c.result("getFollowState", {"kind": "artist", "id": name})["attributes"] is not None


@pytest.mark.parametrize("max_in_flight", [1, 2, 6])
def test_visible_items_and_a_follow_overtake_queued_preload_work(artsy, rest, max_in_flight):
    api = artsy()
    preload, visible = [f"pre-{n:02d}" for n in range(30)], ["vis-0", "vis-1", "vis-2"]
    slow_details(api, preload + visible)
    c = rest(api, maxInFlight=max_in_flight).conn
    c.result("setInterfaceState", {"items": items(preload), "state": "preload"})
    wait_on_wire(api, max_in_flight)  # the first preload calls are on the wire, the rest wait
    c.result("follow", {"kind": "artist", "id": "banksy"})  # answered at once; the call waits
    c.result("setInterfaceState", {"items": items(visible), "state": "visible"})
    asked = time.monotonic()
    deadline = asked + 20
    while time.monotonic() < deadline:
        calls = [(n, at) for n, at in detail_calls(api) if at > asked]
        if {n for n, _ in calls} >= set(visible):
            break
        time.sleep(0.05)
    # Calls that go out together (one per connection freed at once) may reach the
    # server's threads in any order: compare waves, which are DETAIL_MS apart.
    order = [n for n, _ in calls]
    last_visible = max(at for n, at in calls if n in visible)
    early = [n for n, at in calls if n in preload and at < last_visible - 0.1]
    assert early == [], f"preload calls went out a wave before a visible one; order after `visible`: {order}"
    started = sorted(round((at - asked) * 1000) for n, at in calls if n in visible)
    # Waiting for the first connection to free is the floor (one detail call, 300 ms).
    assert started[0] < DETAIL_MS + 150, started
    log = api.stats()["log"]
    follow = next(e["at"] for e in log if e["method"] == "POST" and e["path"] == "/api/v1/me/follow/artist")
    preload_after = [at for n, at in detail_calls(api) if n in preload and at > asked]
    assert not preload_after or follow < min(preload_after) + 0.1, "the follow went out with the first free connection"
