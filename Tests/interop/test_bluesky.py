"""The REST backend through the real binary against examples/bluesky/server.py, which
imitates Bluesky's follow API: a follow is a record created in the user's repository,
an unfollow deletes it by its record key (the last segment of an at-uri an answer gave),
and getProfiles says "followed" by that at-uri being there (issue 31 §6).

Every round trip is checked in the demo server's own state (GET /_control/state).
"""

from __future__ import annotations

import json
import subprocess

import pytest
from demo import DemoServer, error_of, pipeline

pytestmark = pytest.mark.timeout(90)

TOKEN = "demo-token"
ME = "did:plc:me000000000000000000000"
FOLLOW = "app.bsky.graph.follow"
GET_PROFILES = "GET /xrpc/app.bsky.actor.getProfiles"
DELETE = "POST /xrpc/com.atproto.repo.deleteRecord"
UNAVAILABLE, REJECTED = -32001, -32002


def did(n: int) -> str:
    return f"did:plc:user{n:022d}"


class Bluesky(DemoServer):
    api = "bluesky"

    def state(self) -> dict:
        return self.control("GET", "state")

    def records(self) -> dict:
        return {r["rkey"]: r["subject"] for r in self.state()["records"]}


@pytest.fixture
def bluesky(demo):
    return demo(Bluesky)


@pytest.fixture
def netmodel(serve_rest, bluesky):
    def _start(config=None, env=None):
        environment = {"BLUESKY_TOKEN": TOKEN, "BLUESKY_DID": ME, **(env or {})}
        return serve_rest(config or bluesky.config(), state="state-bluesky", env=environment)

    return _start


def actor(n: int) -> dict:
    return {"kind": "actor", "id": did(n)}


def test_follow_creates_a_record_and_unfollow_deletes_that_one(bluesky, netmodel):
    c = netmodel().conn
    state = c.result("follow", {**actor(5), "await": True})
    assert state["confirmed"] is True and state["following"] is True, state
    records = bluesky.records()
    assert list(records.values()) == [did(5)]
    [create] = [e for e in bluesky.log() if e["path"] == "/xrpc/com.atproto.repo.createRecord"]
    body = json.loads(create["body"])
    assert body["repo"] == ME and body["collection"] == FOLLOW and body["record"]["subject"] == did(5), body
    state = c.result("unfollow", {**actor(5), "await": True})
    assert state["confirmed"] is False and state["error"] is None, state
    assert bluesky.records() == {}
    [delete] = [e for e in bluesky.log() if e["path"] == "/xrpc/com.atproto.repo.deleteRecord"]
    assert json.loads(delete["body"]) == {"repo": ME, "collection": FOLLOW, "rkey": next(iter(records))}
    # The rkey came from the follow's answer: no state read was needed.
    assert bluesky.route(GET_PROFILES) == 0


def test_unfollow_of_a_follow_made_elsewhere_deletes_the_right_record(bluesky, netmodel):
    # Two follows made by another client; this one never saw their rkeys.
    bluesky.control("POST", "records", {"records": [{"rkey": "3kother000001", "subject": did(7)},
                                                    {"rkey": "3kother000002", "subject": did(8)}]})
    c = netmodel().conn
    state = c.result("unfollow", {**actor(8), "await": True})
    assert state["confirmed"] is False and state["error"] is None, state
    assert bluesky.records() == {"3kother000001": did(7)}
    [delete] = [e for e in bluesky.log() if e["path"] == "/xrpc/com.atproto.repo.deleteRecord"]
    assert json.loads(delete["body"])["rkey"] == "3kother000002"
    assert bluesky.route(GET_PROFILES) == 1


def test_get_follow_state_is_batched_and_read_by_presence(bluesky, netmodel):
    bluesky.control("POST", "records", {"records": [{"rkey": "3kother000001", "subject": did(2)},
                                                    {"rkey": "3kother000004", "subject": did(4)}]})
    c = netmodel().conn
    asked = list(range(1, 11))
    replies = pipeline(c, [("getFollowState", actor(n)) for n in asked])
    states = {r["result"]["id"]: r["result"] for r in replies.values()}
    assert {i for i, s in states.items() if s["following"]} == {did(2), did(4)}
    assert all(s["confirmed"] is not None for s in states.values()), states
    assert 1 <= bluesky.route(GET_PROFILES) < len(asked)
    # The read captured the rkeys: the unfollow goes straight to deleteRecord.
    c.result("unfollow", {**actor(4), "await": True})
    assert bluesky.records() == {"3kother000001": did(2)}
    assert bluesky.route(GET_PROFILES) < len(asked)


def test_a_malformed_at_uri_is_a_failure_with_a_message_and_nothing_is_deleted(bluesky, netmodel):
    # A record key the pattern does not take (a "/" cannot end an at-uri's rkey).
    bluesky.control("POST", "records", {"records": [{"rkey": "", "subject": did(9)}]})
    c = netmodel().conn
    reply = c.call("unfollow", {**actor(9), "await": True})
    error = error_of(reply, REJECTED)
    assert "does not match" in error["message"] and "{rkey}" in error["message"], error
    assert bluesky.route(DELETE) == 0
    assert bluesky.records() == {"": did(9)}


def test_a_follow_answer_without_a_matching_uri_fails_with_a_message(bluesky, netmodel):
    bluesky.faults({"path": "createRecord$", "status": 200, "body": {"uri": "at://x/app.bsky.feed.like/3k", "cid": "c"},
                    "times": None})
    c = netmodel(config={**bluesky.config(), "retry": {"maxRetries": 0}}).conn
    reply = c.call("follow", {**actor(3), "await": True})
    assert "error" in reply, reply
    assert "does not match" in reply["error"]["message"], reply


@pytest.mark.parametrize("pattern", ["^at://.*$", "^(a)(b)$", "(unclosed"])
def test_a_pattern_without_one_group_is_refused_at_start(pattern, bluesky, netmodel_bin, tmp_path):
    config = bluesky.config()
    config["kinds"]["actor"]["follow"]["capture"]["rkey"]["pattern"] = pattern
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    proc = subprocess.run([str(netmodel_bin), "check-config", str(path)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc
    assert "at /kinds/actor/follow/capture/rkey/pattern: " in proc.stderr and "one capture group" in proc.stderr
    proc = subprocess.run([str(netmodel_bin), "serve", "--backend", "rest", "--config", str(path)],
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "/kinds/actor/follow/capture/rkey/pattern" in proc.stderr, proc


def test_unhappy_answers_are_failures_with_the_apis_words(bluesky, netmodel):
    c = netmodel(config={**bluesky.config(), "retry": {"maxRetries": 0}}).conn
    bluesky.control("POST", "expire", {})
    # Bluesky answers an expired token 400, not 401; the configuration language has no
    # way yet to say a 400 means "credentials" (onStatus meanings are done/following/
    # notFollowing/retry), so it is a refusal that names the API's error.
    error = error_of(c.call("follow", {**actor(6), "await": True}), REJECTED)
    assert "ExpiredToken" in error["message"] and error["data"]["state"]["following"] is None, error
    assert bluesky.records() == {}
    bluesky.control("POST", "expire", {"expired": False})
    bluesky.control("POST", "ratelimit", {"remaining": 0, "resetSeconds": 3600})
    reply = c.call("follow", {**actor(6), "await": True})
    error = error_of(reply, UNAVAILABLE)
    assert error["data"]["retryAfterMs"] > 60_000, error


def test_a_hold_learned_from_a_read_fails_a_follow_that_may_not_retry(bluesky, netmodel):
    """With retry.maxRetries 0 a follow sent into a 429 is rolled back at once; one
    made after a read learned of the same hold answers the same, unsent, instead of
    waiting in the queue until the reset (an hour here, just under retry.maxWaitMs)."""
    c = netmodel(config={**bluesky.config(), "retry": {"maxRetries": 0}}).conn
    bluesky.control("POST", "ratelimit", {"remaining": 0, "resetSeconds": 3590})
    error_of(c.call("getFollowState", actor(7)), UNAVAILABLE)
    reply = c.call("follow", {**actor(7), "await": True}, timeout=3)
    error = error_of(reply, UNAVAILABLE)
    assert "retry.maxRetries is 0" in error["message"] and error["data"]["retryAfterMs"] > 3_500_000, error
    assert error["data"]["state"]["following"] is None and error["data"]["state"]["pending"] is False, error
    assert bluesky.route("POST /xrpc/com.atproto.repo.createRecord") == 0


def test_the_users_follows_list_pages_by_cursor_to_the_end(bluesky, netmodel):
    records = [{"rkey": f"3kother{n:06d}", "subject": did(n)} for n in range(1, 56)]
    bluesky.control("POST", "records", {"records": records})
    c = netmodel().conn
    page = c.result("fetchList", {"list": "following"})
    while page["hasMore"]:
        page = c.result("fetchList", {"list": "following", "page": "next"})
    assert [item["id"] for item in page["items"]] == [did(n) for n in range(55, 0, -1)]
    assert bluesky.route("GET /xrpc/app.bsky.graph.getFollows") == 2
