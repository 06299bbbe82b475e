"""The REST backend with examples/github/config.json, through the real binary, against
examples/github/server.py (GitHub's follow and star endpoints with its rate limits).

Round trips are checked in the demo server's own state (GET /_control/state), and what
reached it when in its request log (GET /_control/log), never in netmodel.
"""

from __future__ import annotations

import time

import pytest
from demo import DemoServer, error_of, pipeline
from rpcio import wait_for

pytestmark = pytest.mark.timeout(90)

TOKEN = "ghp_demo"
UNAVAILABLE, UNAUTHORIZED, INVALID_PARAMS = -32001, -32003, -32602


class GitHub(DemoServer):
    """examples/github/server.py on a free port, with its control API."""

    api = "github"

    def control(self, what: str, body=None):  # GET without a body, POST with one
        return self.call_control("GET" if body is None else "POST", what, body)

    def state(self) -> dict:
        return self.control("state")

    def log(self) -> list[dict]:
        return self.control("log")["requests"]


@pytest.fixture
def github(demo):
    return demo(GitHub, TOKEN)


@pytest.fixture
def netmodel(serve_rest, github):
    """netmodel(token=TOKEN, edit=None) -> a connection to `netmodel serve` with the GitHub
    configuration pointed at the demo server (`edit` may change the parsed configuration)."""

    def _start(token=TOKEN, edit=None):
        config = github.config()
        if edit:
            edit(config)
        env = {"GITHUB_TOKEN": token} if token else None
        return serve_rest(config, state="state-github", env=env).conn

    return _start


def send(conn, request_id, method, params):
    conn.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


def replies(conn, count, timeout=30) -> dict:
    got = {}
    while len(got) < count:
        message = conn.recv(timeout=timeout)
        if "id" in message:
            got[message["id"]] = message
    return got


# --------------------------------------------------------------------------
# round trips


def test_follow_check_and_unfollow_a_user(github, netmodel):
    c = netmodel()
    assert c.result("getFollowState", {"kind": "user", "id": "octocat", "refresh": True})["confirmed"] is False
    assert c.result("follow", {"kind": "user", "id": "octocat", "await": True})["confirmed"] is True
    assert github.state()["following"] == ["octocat"]
    assert c.result("getFollowState", {"kind": "user", "id": "octocat", "refresh": True})["confirmed"] is True
    assert c.result("unfollow", {"kind": "user", "id": "octocat", "await": True})["confirmed"] is False
    assert github.state()["following"] == []
    assert [(r["method"], r["path"], r["status"]) for r in github.log()] == [
        ("GET", "/user/following/octocat", 404), ("PUT", "/user/following/octocat", 204),
        ("GET", "/user/following/octocat", 204), ("DELETE", "/user/following/octocat", 204)]


def test_a_repository_id_is_sent_as_two_path_segments(github, netmodel):
    c = netmodel()
    assert c.result("follow", {"kind": "repo", "id": "octocat/hello-world", "await": True})["confirmed"] is True
    assert github.state()["starred"] == ["octocat/hello-world"]
    assert github.log()[-1]["path"] == "/user/starred/octocat/hello-world"
    assert c.result("getFollowState", {"kind": "repo", "id": "torvalds/linux", "refresh": True})["confirmed"] is False
    assert c.result("unfollow", {"kind": "repo", "id": "octocat/hello-world", "await": True})["confirmed"] is False
    assert github.state()["starred"] == []


@pytest.mark.parametrize("bad", ["octocat/..", "./hello-world", "octocat//hello-world", "octocat/", "/x"])
def test_an_id_whose_segments_cannot_be_sent_is_refused_before_anything_is_sent(github, netmodel, bad):
    c = netmodel()
    error = error_of(c.call("follow", {"kind": "repo", "id": bad}), INVALID_PARAMS)
    assert error["data"]["path"] == "/id"
    assert github.log() == [] and github.state()["starred"] == []


# --------------------------------------------------------------------------
# rate limits


def after_first_refusal(github, wait=10):
    """The log's first 403, once it is there."""
    return wait_for(lambda: next((r for r in github.log() if r["status"] == 403), None), wait)


def test_a_primary_rate_limit_holds_every_request_until_its_reset(github, netmodel):
    c = netmodel()
    reset = github.control("primary-limit", {"reset_in": 2})["reset"]
    send(c, 1, "follow", {"kind": "user", "id": "octocat", "await": True})
    refused = after_first_refusal(github)
    assert refused["path"] == "/user/following/octocat" and refused["t"] < reset
    # Other kinds, reads and lists wait for the reset too, instead of being refused again.
    send(c, 2, "follow", {"kind": "repo", "id": "octocat/hello-world", "await": True})
    send(c, 3, "getFollowState", {"kind": "user", "id": "torvalds", "refresh": True})
    send(c, 4, "fetchList", {"list": "starred"})
    got = replies(c, 4)
    assert got[1]["result"]["confirmed"] is True and got[2]["result"]["confirmed"] is True
    assert got[3]["result"]["confirmed"] is False and got[4]["result"]["state"] == "loaded"
    log = github.log()
    assert [r["status"] for r in log].count(403) == 1, log
    assert all(r["t"] >= reset for r in log if r is not log[0]), (reset, log)
    assert github.state() == {"following": ["octocat"], "starred": ["octocat/hello-world"]}


def test_a_secondary_rate_limit_holds_every_request_for_its_retry_after(github, netmodel):
    c = netmodel()
    until = github.control("secondary-limit", {"retry_after": 2})["until"]
    send(c, 1, "follow", {"kind": "repo", "id": "torvalds/linux", "await": True})
    after_first_refusal(github)
    send(c, 2, "follow", {"kind": "user", "id": "gvanrossum", "await": True})
    got = replies(c, 2)
    assert [got[n].get("result", {}).get("confirmed") for n in (1, 2)] == [True, True], (got, github.log())
    log = github.log()
    assert [r["status"] for r in log] == [403, 204, 204], log
    assert all(r["t"] >= until - 0.01 for r in log[1:]), (until, log)


def test_a_reset_beyond_the_retry_budget_is_answered_at_once_with_the_time_left(github, netmodel):
    c = netmodel()
    github.control("primary-limit", {"reset_in": 600})
    started = time.monotonic()
    error = error_of(c.call("follow", {"kind": "user", "id": "octocat", "await": True}), UNAVAILABLE)
    assert error["data"]["retryable"] is True and 590_000 <= error["data"]["retryAfterMs"] <= 600_000, error
    rolled_back = error["data"]["state"]
    assert rolled_back["following"] is rolled_back["confirmed"] is None and rolled_back["pending"] is False
    # Another kind, during the known window: answered without a request.
    error = error_of(c.call("follow", {"kind": "repo", "id": "curl/curl", "await": True}), UNAVAILABLE)
    assert 580_000 <= error["data"]["retryAfterMs"] <= 600_000, error
    assert time.monotonic() - started < 10
    assert len(github.log()) == 1 and github.state() == {"following": [], "starred": []}


def test_reads_a_caller_waits_for_are_not_held_beyond_the_retry_budget(github, netmodel):
    """A read, a list page or a batched read during a known hold longer than
    retry.maxWaitMs is answered at once with the time left (it waited the whole reset,
    ten minutes, in silence); nothing is sent."""
    c = netmodel()
    github.control("primary-limit", {"reset_in": 600})
    error_of(c.call("follow", {"kind": "user", "id": "octocat", "await": True}), UNAVAILABLE)
    started = time.monotonic()
    for method, params in [
        ("getFollowState", {"kind": "user", "id": "torvalds", "refresh": True}),
        ("getFollowState", {"kind": "repo", "id": "curl/curl", "refresh": True}),
    ]:
        error = error_of(c.call(method, params, timeout=10), UNAVAILABLE)
        assert 580_000 <= error["data"]["retryAfterMs"] <= 600_000, (method, error)
        assert "rate limited by the API for another" in error["message"], error
    # A list answers its page's failure in the list's state (docs/protocol.md, fetchList).
    page = c.result("fetchList", {"list": "starred"}, timeout=10)
    assert page["state"] == "failure" and page["error"]["code"] == UNAVAILABLE, page
    assert "rate limited by the API for another" in page["error"]["message"], page
    assert time.monotonic() - started < 10
    assert len(github.log()) == 1, github.log()


def test_a_follow_waiting_behind_the_answer_that_brings_a_long_limit_fails_at_once(github, netmodel):
    """One connection: the follow waits behind a read when the read's answer says the
    limit is spent for ten minutes. It is answered at once with the time left, as one
    sent after that answer would be, and never sent (it waited the ten minutes)."""

    def one_connection(config):
        config["maxInFlight"] = 1
        config["retry"]["maxWaitMs"] = 5000

    c = netmodel(edit=one_connection)
    github.control("primary-limit", {"reset_in": 600})
    github.control("faults", [{"method": "GET", "delay_ms": 300}])
    started = time.monotonic()
    replies = pipeline(c, [
        ("getFollowState", {"kind": "user", "id": "torvalds", "refresh": True}),
        ("follow", {"kind": "user", "id": "octocat", "await": True}),
    ])
    assert time.monotonic() - started < 5, replies
    error = error_of(replies[1], UNAVAILABLE)
    assert 580_000 <= error["data"]["retryAfterMs"] <= 600_000, error
    assert "rate limit holds requests for another" in error["message"], error
    assert [r["method"] for r in github.log()] == ["GET"], github.log()
    assert github.state()["following"] == []


def test_a_403_that_is_no_rate_limit_keeps_meaning_unauthorized(github, netmodel):
    c = netmodel()
    github.control("faults", [{"method": "PUT", "status": 403, "body": {"message": "Must have admin rights"}}])
    error = error_of(c.call("follow", {"kind": "user", "id": "octocat", "await": True}), UNAUTHORIZED)
    assert error["data"]["status"] == 403 and "admin rights" in error["message"]


def test_bad_credentials_wait_for_a_token(github, netmodel):
    c = netmodel(token="wrong")
    error = error_of(c.call("follow", {"kind": "user", "id": "mojombo", "await": True}), UNAUTHORIZED)
    assert error["data"]["status"] == 401 and "Bad credentials" in error["message"]
    assert error["data"]["state"]["pending"] is True
    c.result("configure", {"authToken": TOKEN})
    wait_for(lambda: github.state()["following"] == ["mojombo"], 10)


# --------------------------------------------------------------------------
# lists


def small_pages(config):
    for name in ("following", "starred"):
        config["lists"][name]["query"]["per_page"] = "2"


def test_lists_are_read_to_the_end_through_link_headers(github, netmodel):
    users = ["octocat", "torvalds", "gvanrossum", "mojombo", "defunkt"]
    repos = ["octocat/hello-world", "torvalds/linux", "curl/curl"]
    github.control("state", {"following": users, "starred": repos})
    c = netmodel(edit=small_pages)
    for name, wanted, calls in (("following", users, 3), ("starred", list(reversed(repos)), 2)):
        state = c.result("fetchList", {"list": name})
        while state["hasMore"]:
            state = c.result("fetchList", {"list": name, "page": "next"})
        assert [item["id"] for item in state["items"]] == wanted and state["state"] == "loaded"
        assert all(item["following"] is True for item in state["items"])
        assert len([r for r in github.log() if r["path"] == f"/user/{name}"]) == calls
    assert c.result("getFollowState", {"kind": "repo", "id": "curl/curl"})["following"] is True


# --------------------------------------------------------------------------
# a secondary rate limit that says so only in its message


SECONDARY = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
             "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}


def secondary_wait(ms):
    def edit(config):
        for kind in config["kinds"].values():
            for endpoint in ("follow", "unfollow", "state"):
                for rule in sum((v for v in kind[endpoint]["onStatus"].values() if isinstance(v, list)), []):
                    if "waitMs" in rule:
                        rule["waitMs"] = ms
    return edit


@pytest.mark.parametrize("status", [403, 429])
def test_a_secondary_limit_without_retry_after_holds_every_request_for_the_rules_wait(github, netmodel, status):
    # GitHub: no retry-after, remaining not 0: "wait for at least one minute" (waitMs
    # 60000 in the example; 1500 here to keep the test short).
    c = netmodel(edit=secondary_wait(1500))
    github.control("faults", [{"method": "PUT", "status": status, "body": SECONDARY}])
    send(c, 1, "follow", {"kind": "user", "id": "octocat", "await": True})
    refused = wait_for(lambda: next((r for r in github.log() if r["status"] == status), None), 10)
    send(c, 2, "getFollowState", {"kind": "repo", "id": "curl/curl", "refresh": True})
    got = replies(c, 2)
    assert got[1]["result"]["confirmed"] is True and got[2]["result"]["confirmed"] is False, got
    log = github.log()
    assert [r["status"] for r in log].count(status) == 1, log
    assert log[0] == refused and all(r["t"] >= refused["t"] + 1.5 - 0.01 for r in log[1:]), log
    assert github.state()["following"] == ["octocat"]


def test_the_secondary_limits_minute_beyond_the_retry_budget_fails_at_once_with_the_time_left(github, netmodel):
    def small_budget(config):
        config["retry"]["maxWaitMs"] = 5000

    c = netmodel(edit=small_budget)
    github.control("faults", [{"method": "PUT", "status": 403, "body": SECONDARY}])
    error = error_of(c.call("follow", {"kind": "user", "id": "octocat", "await": True}), UNAVAILABLE)
    assert "secondary rate limit" in error["message"]
    assert error["data"]["retryable"] is True and 55_000 <= error["data"]["retryAfterMs"] <= 60_000, error
    error = error_of(c.call("follow", {"kind": "repo", "id": "curl/curl", "await": True}), UNAVAILABLE)
    assert 50_000 <= error["data"]["retryAfterMs"] <= 60_000, error
    assert len(github.log()) == 1 and github.state() == {"following": [], "starred": []}
