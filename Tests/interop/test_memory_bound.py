"""Bytes held are bounded (issue 30 §3), through the real binary and the Artsy demo
server: `--max-held-bytes` evicts the least recently used lists nobody subscribes to,
a subscribed list keeps its state, a page larger than the bound alone is a failure
with a message (answer, log, inspect), the option is read from netmodel.json, and a
bad value is refused.
"""

from __future__ import annotations

import pytest

from test_bounds import wait_stats
from test_lists import ids, notes
from test_rest import Artsy, artsy, rest  # noqa: F401  (fixtures)
from test_serve_config import run, write_options

pytestmark = pytest.mark.timeout(60)


def feed(name):
    return {name: {
        "method": "GET", "path": "/api/v1/me/follow/artists",
        "paging": {"style": "cursor", "parameter": "cursor", "next": "/next"}, "items": "/items",
        "item": {"kind": "artist", "id": "/artist/id", "following": True, "attributes": "/artist"},
        "dependsOn": ["artist"]}}


FEEDS = {**feed("feedA"), **feed("feedB"), **feed("feedC"), **feed("feedD")}


def page(count, size=100):
    """One page of `count` artists whose detail is about `size` bytes."""
    items = [{"id": f"f-{n}", "artist": {"id": f"a{n}", "name": "n" * size}} for n in range(count)]
    return {"path": "follow/artists$", "status": 200, "times": None, "body": {"items": items, "next": ""}}


def test_lists_over_the_bound_are_evicted_but_a_subscribed_one_stays(artsy, rest):
    api = artsy()
    # Each page of 40 items: about 40 × (96 + 8 + 130) ≈ 9 KB; three fit in 30 000, four do not.
    c = rest(api, "--max-held-bytes", 30_000, lists=FEEDS).conn
    api.faults(page(40))
    c.result("subscribe", {"topics": [{"type": "list", "list": "feedA"}]})
    kept = notes(c, lambda p: p["state"]["state"] == "loaded")[-1]["state"]
    for name in ("feedB", "feedC", "feedD"):
        c.result("fetchList", {"list": name, "await": True})
    # The eviction runs after the turn that kept the page: the bytes are over the bound until then.
    stats = wait_stats(c, lambda s: s["lists"]["evicted"] >= 1 and s["heldBytes"] <= 30_000,
                       what="a list evicted for bytes")
    assert stats["lists"]["held"] <= 3 and stats["maxHeldBytes"] == 30_000, stats
    again = c.result("fetchList", {"list": "feedA"})
    assert again["state"] == "loaded" and again["version"] == kept["version"], (kept, again)
    assert len(ids(again)) == 40


def test_a_page_larger_than_the_bound_is_a_failure_with_a_message(artsy, rest):
    api = artsy()
    server = rest(api, "--max-held-bytes", 5_000, lists=FEEDS)
    c = server.conn
    api.faults(page(100))
    failed = c.result("fetchList", {"list": "feedA", "await": True})
    assert failed["state"] == "failure", failed
    message = failed["error"]["message"]
    assert "100 items" in message and "--max-held-bytes (5000)" in message, message
    assert failed["items"] == []
    assert c.result("stats", {})["lists"]["evicted"] == 0
    inspected = str(c.result("inspect", {}))
    assert "--max-held-bytes (5000)" in inspected, inspected
    log = server.stderr()
    assert "a list page is larger than --max-held-bytes" in log and "limit=5000" in log, log


def test_the_bound_from_netmodel_json(artsy, rest, runtime):
    write_options(runtime, {"max-held-bytes": 4_000})
    api = artsy()
    c = rest(api, lists=FEEDS).conn
    api.faults(page(100))
    failed = c.result("fetchList", {"list": "feedA", "await": True})
    assert "--max-held-bytes (4000)" in failed["error"]["message"], failed


@pytest.mark.parametrize("value", ["-1", "lots", "1.5"])
def test_a_bad_value_is_a_clear_error(netmodel_bin, runtime, value):
    result = run(netmodel_bin, "serve", "--max-held-bytes", value, "--print-config", env=runtime.env)
    assert result.returncode == 2, result
    assert "--max-held-bytes" in result.stderr and "whole number" in result.stderr, result.stderr
