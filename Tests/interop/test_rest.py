"""The REST backend through the real binary, against a real HTTP server on
loopback: examples/artsy/server.py, which imitates Artsy's follow API, counts
every call and connection, and injects faults (docs/backends.md "The REST backend").

Call counts are read from the server (GET /_control/stats), never from netmodel.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from demo import DemoServer, error_of, pipeline  # noqa: F401  (error_of and pipeline: for other files)

pytestmark = pytest.mark.timeout(90)

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples" / "artsy" / "config.json"
UNAVAILABLE, REJECTED, UNAUTHORIZED = -32001, -32002, -32003
INVALID_PARAMS = -32602


class Artsy(DemoServer):
    """examples/artsy/server.py on a free port, with its control API."""

    api = "artsy"


@pytest.fixture
def artsy(demo):
    """artsy(token=None) -> the Artsy demo server (requiring X-Access-Token when given)."""
    return lambda token=None: demo(Artsy, token)


@pytest.fixture
def rest(serve_rest):
    """rest(artsy, *args, **config_overrides) -> ServerProc with examples/artsy/config.json
    pointed at the demo server (top-level fields overridden as given)."""

    def _start(server: Artsy, *args, env=None, **overrides):
        return serve_rest(server.config(**overrides), *args, env=env)

    return _start


# --------------------------------------------------------------------------
# quirks as data


def test_each_kind_with_its_own_quirks(artsy, rest):
    api = artsy()
    c = rest(api).conn
    # artist: one GET for many ids answers the followed subset (andy-warhol is seeded).
    assert c.result("getFollowState", {"kind": "artist", "id": "andy-warhol"})["confirmed"] is True
    assert c.result("getFollowState", {"kind": "artist", "id": "banksy"})["confirmed"] is False
    # profile: the state check's 404 means "not following", its 200 "following".
    assert c.result("getFollowState", {"kind": "profile", "id": "white-cube"})["confirmed"] is False
    assert c.result("getFollowState", {"kind": "profile", "id": "gagosian"})["confirmed"] is True
    # profile: unfollowing what is not followed 404s, which means "already done".
    # (pace-gallery was never read: on an unknown state the intent is always sent.)
    r = c.result("unfollow", {"kind": "profile", "id": "pace-gallery", "await": True})
    assert r["confirmed"] is False and r["error"] is None and not r["pending"], r
    # artist: the follow answers the whole artist, which becomes the attributes.
    r = c.result("follow", {"kind": "artist", "id": "banksy", "await": True})
    assert r["confirmed"] is True and r["attributes"]["name"] == "Banksy", r
    assert api.control("GET", "follows")["artist"][0] == "banksy"
    routes = api.stats()["routes"]
    assert routes["GET /api/v1/me/follow/artists"] == 2
    assert routes["GET /api/v1/me/follow/profile/{id}"] == 2
    assert routes["DELETE /api/v1/me/follow/profile/{id}"] == 1
    assert routes["POST /api/v1/me/follow/artist"] == 1
    # artist: eigen treats an unfollow's 404 as a failure, and so does this configuration.
    # (The rollback to an unknown state then reads kaws's state: not counted above.)
    error = error_of(c.call("unfollow", {"kind": "artist", "id": "kaws", "await": True}), REJECTED)
    assert error["data"]["status"] == 404 and "Not Followed" in error["message"], error
    assert api.stats()["routes"]["DELETE /api/v1/me/follow/artist/{id}"] == 1


def test_fifty_reads_of_distinct_ids_are_one_call(artsy, rest):
    api = artsy()
    c = rest(api).conn
    ids = [f"artist-{n}" for n in range(49)] + ["andy-warhol"]
    replies = pipeline(c, [("getFollowState", {"kind": "artist", "id": i}) for i in ids])
    assert [replies[n]["result"]["confirmed"] for n in range(50)] == [False] * 49 + [True]
    assert api.route("GET /api/v1/me/follow/artists") == 1
    log = [e for e in api.stats()["log"] if e["path"] == "/api/v1/me/follow/artists"]
    assert log[0]["query"].count("artists[]=") == 50, log[0]["query"]


def test_a_batched_check_whose_404_means_none_is_followed(artsy, rest):
    """Artsy answers the batched check with 404 when none of the ids is followed (eigen's
    checkFavoriteStatusForArtist reads it as "not following"); the configuration's
    {"404": "notFollowing"} then holds for every id of that call (issue 10)."""
    api = artsy()
    c = rest(api).conn
    replies = pipeline(c, [("getFollowState", {"kind": "artist", "id": i}) for i in ("banksy", "kaws", "nobody")])
    for reply in replies.values():
        state = reply["result"]
        assert state["confirmed"] is False and state["error"] is None, state
    log = [e for e in api.stats()["log"] if e["path"] == "/api/v1/me/follow/artists"]
    assert [e["status"] for e in log] == [404] and log[0]["query"].count("artists[]=") == 3, log
    # Follow then unfollow: the read back after each is right, through the same 404.
    assert c.result("follow", {"kind": "gene", "id": "street-art", "await": True})["confirmed"] is True
    assert c.result("unfollow", {"kind": "gene", "id": "street-art", "await": True})["confirmed"] is False
    assert c.result("getFollowState", {"kind": "gene", "id": "street-art", "refresh": True})["confirmed"] is False
    assert [e["status"] for e in api.stats()["log"] if e["path"] == "/api/v1/me/follow/genes"] == [404]


def test_a_hundred_reads_of_one_id_are_one_call(artsy, rest):
    api = artsy()
    c = rest(api).conn
    api.faults({"path": "/profile/gagosian", "delay_ms": 200, "times": 1})
    replies = pipeline(c, [("getFollowState", {"kind": "profile", "id": "gagosian", "refresh": True})] * 100)
    assert all(r["result"]["confirmed"] is True for r in replies.values())
    assert api.route("GET /api/v1/me/follow/profile/{id}") == 1


def test_connections_are_kept_alive_within_the_in_flight_limit(artsy, rest):
    api = artsy()
    c = rest(api, maxInFlight=4).conn
    api.faults({"path": "/me/follow/profile/", "delay_ms": 20, "times": 40})
    replies = pipeline(c, [("getFollowState", {"kind": "profile", "id": f"p{n}"}) for n in range(100)])
    assert all("result" in r for r in replies.values())
    stats = api.stats()
    assert stats["routes"]["GET /api/v1/me/follow/profile/{id}"] == 100
    assert 1 <= stats["api_connections"] <= 4, stats["api_connections"]
    http = c.result("stats", {})["backend"]["http"]
    assert http["requests"] == http["responses"] == 100 and http["inFlight"] == 0, http
    assert http["connectionsOpened"] == stats["api_connections"], (http, stats["api_connections"])
    assert http["byEndpoint"] == {"profile.state": 100}, http


# --------------------------------------------------------------------------
# failures: retried, rolled back, or unauthorized


@pytest.mark.parametrize(
    "fault",
    [
        {"status": 503},
        {"status": 500, "body": {"error": "boom"}},
        {"drop": True},
        {"hang": True},
    ],
    ids=["503", "500", "dropped", "hang-timeout"],
)
def test_transient_failures_are_retried_then_succeed(artsy, rest, fault):
    api = artsy()
    c = rest(api, timeoutMs=300, retry={"maxRetries": 4, "baseDelayMs": 20, "maxDelayMs": 100}).conn
    api.faults({"method": "POST", "path": "/me/follow/artist", "times": 2, **fault})
    r = c.result("follow", {"kind": "artist", "id": "kaws", "await": True}, timeout=20)
    assert r["confirmed"] is True and r["error"] is None, r
    assert api.stats()["faulted"] == 2
    assert "kaws" in api.control("GET", "follows")["artist"]


def test_429_retry_after_is_honoured(artsy, rest):
    api = artsy()
    c = rest(api, retry={"maxRetries": 3, "baseDelayMs": 10, "maxDelayMs": 20}).conn
    api.faults({"method": "POST", "status": 429, "headers": {"Retry-After": "1"}, "times": 1})
    started = time.monotonic()
    r = c.result("follow", {"kind": "gene", "id": "street-art", "await": True}, timeout=20)
    assert r["confirmed"] is True, r
    assert time.monotonic() - started >= 1.0
    assert api.route("POST /api/v1/me/follow/gene") == 2


def test_400_rolls_back_with_the_error_and_subscribers_see_it(artsy, rest):
    api = artsy()
    c = rest(api).conn
    sub = c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "kaws"}]})
    assert c.result("getFollowState", {"kind": "artist", "id": "kaws"})["confirmed"] is False
    api.faults({"method": "POST", "status": 400, "body": {"error": "artist_id is missing"}})
    error = error_of(c.call("follow", {"kind": "artist", "id": "kaws", "await": True}), REJECTED)
    assert error["data"]["status"] == 400 and "artist_id is missing" in error["message"], error
    state = error["data"]["state"]
    assert state["following"] is False and state["confirmed"] is False and state["error"]["code"] == REJECTED
    # The subscriber's last notification is the rolled-back state.
    deadline, last = time.monotonic() + 5, None
    while time.monotonic() < deadline:
        message = c.recv(timeout=5)
        if message.get("method") == "stateChanged" and message["params"]["subscription"] == sub["subscription"]:
            last = message["params"]["state"]
            if last["version"] >= state["version"]:
                break
    assert last == state, (last, state)
    assert api.route("POST /api/v1/me/follow/artist") == 1  # permanent: not retried


def test_401_then_configure_with_a_token_succeeds(artsy, rest):
    api = artsy(token="s3cret-token")
    c = rest(api).conn
    error = error_of(c.call("follow", {"kind": "artist", "id": "kaws", "await": True}), UNAUTHORIZED)
    assert error["data"]["status"] == 401
    assert c.result("configure", {"authToken": "s3cret-token"}) == {"environment": "local"}
    r = c.result("follow", {"kind": "artist", "id": "kaws", "await": True})
    assert r["confirmed"] is True and r["error"] is None, r


def test_a_hanging_server_times_out_and_nothing_stays_stuck(artsy, rest):
    api = artsy()
    c = rest(api, timeoutMs=200, retry={"maxRetries": 1, "baseDelayMs": 10, "maxDelayMs": 10}).conn
    api.faults({"hang": True, "times": None})
    started = time.monotonic()
    error = error_of(c.call("follow", {"kind": "artist", "id": "kaws", "await": True}, timeout=20), UNAVAILABLE)
    assert error["data"]["retryable"] is True and error["data"]["state"]["pending"] is False
    assert time.monotonic() - started < 10
    api.control("DELETE", "faults")
    r = c.result("follow", {"kind": "artist", "id": "kaws", "await": True}, timeout=20)
    assert r["confirmed"] is True, r


def test_the_token_never_appears_in_a_debug_log_or_a_reply(artsy, rest):
    token = "tok-8c1f0e2b7d"
    api = artsy(token=token)
    server = rest(api, "--log-level", "debug", env={"ARTSY_TOKEN": token})
    c = server.conn
    assert c.result("follow", {"kind": "artist", "id": "kaws", "await": True})["confirmed"] is True
    api.faults({"status": 401, "times": 1})
    replies = [c.call("follow", {"kind": "artist", "id": "banksy", "await": True})]
    replies.append(c.call("stats", {}))
    replies.append(c.call("configure", {"authToken": token}))
    server.close_stdin()
    assert server.wait() == 0
    log = server.stderr_path.read_text()
    assert "HTTP POST" in log, log  # the debug log does describe the requests
    assert token not in log
    assert all(token not in json.dumps(reply) for reply in replies)


# --------------------------------------------------------------------------
# configuration


def test_environments_are_chosen_by_configure(artsy, rest):
    api = artsy()
    c = rest(api).conn
    error = error_of(c.call("configure", {"environment": "nowhere"}), INVALID_PARAMS)
    assert error["data"]["path"] == "/environment" and "local" in error["message"]
    assert c.result("configure", {"environment": "staging"}) == {"environment": "staging"}
    assert c.result("configure", {"environment": "local"}) == {"environment": "local"}
    assert c.result("getFollowState", {"kind": "gene", "id": "pop-art"})["confirmed"] is True


def test_an_unknown_kind_is_refused_without_a_call(artsy, rest):
    api = artsy()
    c = rest(api).conn
    error = error_of(c.call("follow", {"kind": "fair", "id": "x", "await": True}), -32004)
    assert "artist, gene, profile" in error["message"]
    assert api.stats()["requests"] == 0


def test_a_bad_configuration_stops_the_server_with_the_field(netmodel_bin, runtime):
    config = json.loads(CONFIG.read_text())
    config["kinds"]["profile"]["state"]["onStatus"] = {"404": "gone"}
    path = runtime.root / "bad.json"
    path.write_text(json.dumps(config))
    for argv in (["serve", "--backend", "rest", "--config", str(path)], ["check-config", str(path)]):
        done = subprocess.run([str(netmodel_bin), *argv], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
        assert done.returncode == 2, (argv, done)
        assert "/kinds/profile/state/onStatus/404" in done.stderr, done.stderr
    ok = subprocess.run([str(netmodel_bin), "check-config", str(CONFIG)], capture_output=True, text=True, timeout=10)
    assert ok.returncode == 0 and "artist, gene, profile" in ok.stdout, ok


# --------------------------------------------------------------------------
# ids are data, never path syntax (issue 16)

# A kind and a list with every value in a path; the demo server answers 404 to these
# routes, which is fine: what is checked is the request line it received.
THING = {
    "follow": {"method": "PUT", "path": "/api/v1/thing/{id}/follow"},
    "unfollow": {"method": "DELETE", "path": "/api/v1/thing/{id}/follow"},
    "state": {"method": "GET", "path": "/api/v1/thing/{id}/state", "onStatus": {"404": "notFollowing"}},
    "detail": {"method": "GET", "path": "/api/v1/thing/{id}", "attributes": ""},
}
BY_TAG = {"method": "GET", "path": "/api/v1/tag/{tag}/things", "params": ["tag"], "item": {"kind": "thing", "id": "/id"}}

# value -> the path segment that must reach the server
SENT_AS_ONE_SEGMENT = {
    "../..": "..%2F..",
    "a/../..": "a%2F..%2F..",
    "%2e%2e": "%252e%252e",
    "..%2F..": "..%252F..",
    "?x=1": "%3Fx%3D1",
    "#frag": "%23frag",
    "a b": "a%20b",
    "é/ü": "%C3%A9%2F%C3%BC",
    "...": "...",
}


def thing_server(artsy, rest, *args):
    api = artsy()
    config = json.loads(CONFIG.read_text())
    kinds = {**config["kinds"], "thing": THING}
    lists = {**config["lists"], "byTag": BY_TAG}
    return api, rest(api, *args, kinds=kinds, lists=lists)


def request_lines(api):
    return [e["requestline"] for e in api.stats()["log"]]


@pytest.mark.parametrize("value", list(SENT_AS_ONE_SEGMENT))
def test_an_id_reaches_the_server_as_one_segment(artsy, rest, value):
    api, server = thing_server(artsy, rest)
    c = server.conn
    segment = SENT_AS_ONE_SEGMENT[value]
    key = {"kind": "thing", "id": value}
    c.call("unfollow", {**key, "await": True})  # sent: the state is unknown (then read: 404, not following)
    c.call("follow", {**key, "await": True})
    c.call("getFollowState", {**key, "refresh": True})
    c.call("getEntity", {**key, "refresh": True})
    c.call("fetchList", {"list": "byTag", "params": {"tag": value}})
    expected = {
        f"PUT /api/v1/thing/{segment}/follow HTTP/1.1",
        f"DELETE /api/v1/thing/{segment}/follow HTTP/1.1",
        f"GET /api/v1/thing/{segment}/state HTTP/1.1",
        f"GET /api/v1/thing/{segment} HTTP/1.1",
        f"GET /api/v1/tag/{segment}/things HTTP/1.1",
    }
    lines = request_lines(api)
    assert set(lines) == expected, lines


REFUSED_IDS = [".", ".."]


@pytest.mark.parametrize("value", REFUSED_IDS)
def test_a_dot_segment_id_is_refused_before_anything_changes_or_is_sent(artsy, rest, runtime, value):
    api, server = thing_server(artsy, rest)
    c = server.conn
    c.result("subscribe", {"topics": [{"type": "entity", "kind": "thing"}, {"type": "entity", "kind": "artist"}]})
    before = c.result("stats", {})
    key = {"kind": "thing", "id": value}
    calls = [
        ("follow", key, "/id"),
        ("follow", {**key, "await": True}, "/id"),
        ("unfollow", key, "/id"),
        ("setFollowState", {**key, "following": True}, "/id"),
        ("getFollowState", key, "/id"),
        ("getEntity", key, "/id"),
        ("subscribe", {"topics": [{"type": "entity", **key}]}, "/topics/0/id"),
        ("setInterfaceState", {"state": "visible", "items": [{"kind": "thing", "id": "ok"}, key]}, "/items/1/id"),
        ("fetchList", {"list": "byTag", "params": {"tag": value}}, "/params/tag"),
        # The issue's own examples, on the Artsy configuration: the batched state
        # endpoint takes ".." in its query, but unfollow and detail would not.
        ("unfollow", {"kind": "artist", "id": value}, "/id"),
        ("getEntity", {"kind": "artist", "id": value}, "/id"),
        ("follow", {"kind": "artist", "id": value}, "/id"),
    ]
    for method, params, path in calls:
        error = error_of(c.call(method, params), INVALID_PARAMS)
        assert error["data"]["path"] == path, (method, error)
        assert "dot segment" in error["message"] and "RFC 3986" in error["message"], error
    # Nothing was sent, nothing changed: no entity, no version, no notification, no outbox.
    assert api.stats()["requests"] == 0, request_lines(api)
    after = c.result("stats", {})
    assert after["entities"] == before["entities"] == 0, after
    assert after["backend"]["http"]["requests"] == 0, after
    assert after["notifications"]["sent"] == before["notifications"]["sent"], after
    c.assert_quiet()
    server.close_stdin()
    assert server.wait() == 0
    saved = [p for p in (runtime.root / "state-rest").rglob("*") if p.is_file()]
    assert not any(f'"{value}"'.encode() in p.read_bytes() for p in saved), saved


def test_an_empty_list_param_in_a_path_is_refused(artsy, rest):
    api, server = thing_server(artsy, rest)
    error = error_of(server.conn.call("fetchList", {"list": "byTag", "params": {"tag": ""}}), INVALID_PARAMS)
    assert error["data"]["path"] == "/params/tag" and "empty" in error["message"], error
    assert api.stats()["requests"] == 0


def test_the_path_goes_out_as_written(artsy, rest):
    """libcurl resolves "/./" and "/../" unless told not to (CURLOPT_PATH_AS_IS): what
    netmodel built and checked is what the server receives, base URL included."""
    api = artsy()
    server = rest(api, environments={"local": api.url + "/./base/.."})
    server.conn.call("getFollowState", {"kind": "profile", "id": "gagosian"})
    assert request_lines(api) == ["GET /./base/../api/v1/me/follow/profile/gagosian HTTP/1.1"]


def test_a_token_over_plain_http_to_another_host_needs_the_opt_in(artsy, rest, netmodel_bin, runtime):
    """The auth token would travel in clear to 10.0.0.5: refused at start unless
    auth.allowPlainHTTP, which still warns (issue 16)."""
    config = json.loads(CONFIG.read_text())
    config["environments"]["lan"] = "http://10.0.0.5:8080"
    path = runtime.root / "plain.json"
    path.write_text(json.dumps(config))
    argv = [str(netmodel_bin), "serve", "--backend", "rest", "--config", str(path), "--state-dir", str(runtime.root)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "/environments/lan" in done.stderr and "allowPlainHTTP" in done.stderr, done
    api = artsy()
    server = rest(api, environments={**config["environments"], "local": api.url},
                  auth={**config["auth"], "allowPlainHTTP": True})
    assert server.conn.result("getFollowState", {"kind": "gene", "id": "pop-art"})["confirmed"] is True
    server.close_stdin()
    assert server.wait() == 0
    log = server.stderr_path.read_text()
    assert "/environments/lan" in log and "plain http://" in log, log
    assert "/environments/local" not in log and "/environments/staging" not in log, log


def test_the_first_refused_item_or_topic_is_the_error_whatever_is_wrong_with_it(artsy, rest):
    """setInterfaceState and subscribe read every item or topic before the models admit
    any: the error still names the first one that breaks, whether its form or its kind
    is wrong, and nothing is taken."""
    api = artsy()
    c = rest(api).conn
    unknown = {"kind": "fair", "id": "x"}
    malformed = {"kind": "artist"}
    error = error_of(c.call("setInterfaceState", {"state": "visible", "items": [unknown, malformed]}), -32004)
    assert error["data"]["path"] == "/items/0/kind", error
    error = error_of(c.call("setInterfaceState", {"state": "visible", "items": [malformed, unknown]}), INVALID_PARAMS)
    assert error["data"]["path"].startswith("/items/0"), error
    error = error_of(
        c.call("setInterfaceState", {"state": "visible", "items": [{"kind": "artist", "id": "a"}, malformed, unknown]}),
        INVALID_PARAMS,
    )
    assert error["data"]["path"].startswith("/items/1"), error
    topic = {"type": "entity", **unknown}
    error = error_of(c.call("subscribe", {"topics": [topic, {"type": "nope"}]}), -32004)
    assert error["data"]["path"] == "/topics/0/kind", error
    error = error_of(c.call("subscribe", {"topics": [{"type": "nope"}, topic]}), INVALID_PARAMS)
    assert error["data"]["path"] == "/topics/0/type", error
    # A topic named twice is refused where it is first named.
    artist = {"type": "entity", "kind": "artist", "id": "a"}
    error = error_of(c.call("subscribe", {"topics": [artist, topic, artist, topic]}), -32004)
    assert error["data"]["path"] == "/topics/1/kind", error
    assert c.result("stats", {})["entities"] == 0
    assert api.stats()["requests"] == 0
    c.assert_quiet()
