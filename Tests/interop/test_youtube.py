"""YouTube subscriptions through the real binary: examples/youtube/config.json against
examples/youtube/server.py on loopback (README there cites the API's documentation).

What it shows: the subscription id the follow answers is captured and used by the
unfollow (also after netmodel is killed and started again on the same state folder),
state reads are batched with the channel ids comma-joined in one parameter, the
subscriptions list is read to its end with pageToken / nextPageToken, and the API's
unhappy answers (quotaExceeded, 5xx, a dropped connection) never confirm what did not
happen. Every round trip is checked in the demo server's own state (/_control/).
"""

from __future__ import annotations

import json
import signal

import pytest
import rpcio
from demo import DemoServer, pipeline

pytestmark = pytest.mark.timeout(90)

TOKEN = "ya29.demo-token"
GOOGLE_DEVS = "UC_x5XG1OV2P6uZZ5FSM9Ttw"
ANDROID = "UCVHFbqXqoYvEWM1Ddxl0QDg"
UNAVAILABLE, REJECTED, UNAUTHORIZED = -32001, -32002, -32003
SUBSCRIPTIONS = "/youtube/v3/subscriptions"


class YouTube(DemoServer):
    """examples/youtube/server.py on a free port, with its control API."""

    api = "youtube"

    def subscriptions(self) -> dict:
        """channel id -> subscription id: the server's own state."""
        return self.control("GET", "subscriptions")

    def seed(self, channels) -> dict:
        return self.control("POST", "subscriptions", {"channels": list(channels)})

    def log(self, method: str | None = None) -> list:
        return [e for e in super().log() if method in (None, e["method"])]


@pytest.fixture
def youtube(demo):
    return demo(YouTube, TOKEN)


@pytest.fixture
def netmodel(serve_rest):
    """netmodel(api, state="state") -> ServerProc on examples/youtube/config.json pointed at the
    demo server, its state in runtime.root/<state> (the same folder across restarts)."""

    def _start(api: YouTube, state: str = "state", **overrides):
        return serve_rest(api.config(**overrides), state=state, env={"YOUTUBE_TOKEN": TOKEN})

    return _start


def kill_hard(server) -> None:
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(10)


def channel(id_: str) -> dict:
    return {"kind": "channel", "id": id_}


# --------------------------------------------------------------------------
# captured subscription ids


def test_the_unfollow_deletes_the_subscription_the_follow_made(youtube, netmodel):
    c = netmodel(youtube).conn
    state = c.result("follow", {**channel(GOOGLE_DEVS), "await": True})
    assert state["confirmed"] is True and state["error"] is None, state
    subscription = youtube.subscriptions()[GOOGLE_DEVS]
    [insert] = youtube.log("POST")
    assert insert["query"] == "part=snippet"
    assert json.loads(insert["body"]) == {"snippet": {"resourceId": {"kind": "youtube#channel", "channelId": GOOGLE_DEVS}}}
    state = c.result("unfollow", {**channel(GOOGLE_DEVS), "await": True})
    assert state["confirmed"] is False and state["error"] is None and not state["pending"], state
    assert youtube.subscriptions() == {}
    # The subscription's id, not the channel's, and no state read was needed for it.
    assert [e["query"] for e in youtube.log("DELETE")] == [f"id={subscription}"]
    assert youtube.log("GET") == []


def test_the_unfollow_after_a_kill_and_restart_uses_the_captured_id(youtube, netmodel):
    first = netmodel(youtube)
    assert first.conn.result("follow", {**channel(ANDROID), "await": True})["confirmed"] is True
    subscription = youtube.subscriptions()[ANDROID]
    kill_hard(first)
    calls_before = len(youtube.log())

    second = netmodel(youtube)  # the same state folder
    state = second.conn.result("unfollow", {**channel(ANDROID), "await": True})
    assert state["confirmed"] is False and state["error"] is None, state
    assert youtube.subscriptions() == {}
    after = youtube.log()[calls_before:]
    assert [(e["method"], e["query"]) for e in after] == [("DELETE", f"id={subscription}")]


def test_without_the_captured_id_the_unfollow_reads_the_state_first(youtube, netmodel, runtime):
    first = netmodel(youtube)
    assert first.conn.result("follow", {**channel(ANDROID), "await": True})["confirmed"] is True
    subscription = youtube.subscriptions()[ANDROID]
    kill_hard(first)
    (runtime.root / "state" / "rest-captures.json").unlink()  # the captured values are lost
    calls_before = len(youtube.log())

    second = netmodel(youtube)
    state = second.conn.result("unfollow", {**channel(ANDROID), "await": True})
    assert state["confirmed"] is False and state["error"] is None, state
    assert youtube.subscriptions() == {}
    after = [(e["method"], e["query"]) for e in youtube.log()[calls_before:]]
    assert len(after) == 2 and after[0][0] == "GET" and f"forChannelId={ANDROID}" in after[0][1], after
    assert after[1] == ("DELETE", f"id={subscription}")


def test_an_unfollow_of_a_channel_the_state_says_is_not_subscribed_sends_no_delete(youtube, netmodel):
    c = netmodel(youtube).conn
    state = c.result("unfollow", {**channel(GOOGLE_DEVS), "await": True})
    assert state["confirmed"] is False and state["error"] is None, state
    assert [e["method"] for e in youtube.log()] == ["GET"]


# --------------------------------------------------------------------------
# batched state reads


def test_state_reads_are_batched_with_the_channel_ids_joined(youtube, netmodel):
    channels = [f"UCbatch{n:02}" for n in range(12)]
    youtube.seed(channels[::3])  # every third one is subscribed
    c = netmodel(youtube).conn
    replies = pipeline(c, [("getFollowState", channel(ch)) for ch in channels])
    assert all(r["result"]["error"] is None for r in replies.values()), replies
    assert [replies[i]["result"]["confirmed"] for i in range(12)] == [n % 3 == 0 for n in range(12)]
    gets = youtube.log("GET")
    assert 1 <= len(gets) < len(channels), [g["query"] for g in gets]
    asked = []
    for get in gets:
        (value,) = [p.split("=", 1)[1] for p in get["query"].split("&") if p.startswith("forChannelId=")]
        asked += value.split(",")  # one parameter, the ids comma-joined
        assert "maxResults=50" in get["query"] and "mine=true" in get["query"]
    assert sorted(asked) == sorted(channels)
    # The read captured each subscription's id: the unfollow needs no second read.
    subscription = youtube.subscriptions()[channels[3]]
    calls_before = len(youtube.log())
    assert c.result("unfollow", {**channel(channels[3]), "await": True})["error"] is None
    assert [(e["method"], e["query"]) for e in youtube.log()[calls_before:]] == [("DELETE", f"id={subscription}")]


# --------------------------------------------------------------------------
# the subscriptions list


def test_the_subscriptions_list_is_read_to_its_end(youtube, netmodel):
    channels = [f"UClist{n:03}" for n in range(120)]
    youtube.seed(channels)
    c = netmodel(youtube).conn
    page = c.result("fetchList", {"list": "subscriptions"})
    pages = 1
    while page["hasMore"]:
        page = c.result("fetchList", {"list": "subscriptions", "page": "next"})
        pages += 1
        assert pages <= 5, "the list does not end"
    assert [item["id"] for item in page["items"]] == list(reversed(channels))
    assert all(item["following"] is True for item in page["items"])
    gets = youtube.log("GET")
    assert len(gets) == 3
    assert "pageToken" not in gets[0]["query"] and all("pageToken=" in g["query"] for g in gets[1:])
    assert all("maxResults=50" in g["query"] for g in gets)


# --------------------------------------------------------------------------
# faults: nothing is confirmed that did not happen


def test_5xx_and_a_dropped_connection_are_retried_then_the_follow_is_kept(youtube, netmodel):
    youtube.faults({"method": "POST", "status": 503, "times": 1}, {"method": "POST", "drop": True, "times": 1})
    c = netmodel(youtube).conn
    state = c.result("follow", {**channel(GOOGLE_DEVS), "await": True}, timeout=30)
    assert state["confirmed"] is True and state["error"] is None, state
    assert [e["status"] for e in youtube.log("POST")] == [503, None, 200]
    subscription = youtube.subscriptions()[GOOGLE_DEVS]
    assert c.result("unfollow", {**channel(GOOGLE_DEVS), "await": True})["error"] is None
    assert [e["query"] for e in youtube.log("DELETE")] == [f"id={subscription}"]


def test_quota_exceeded_is_retried_then_rolled_back_and_never_waits_for_a_token(youtube, netmodel):
    # The 403's reason (/error/errors/0/reason) is quotaExceeded: a quota, retried with
    # backoff (it resets at midnight Pacific time; no header says when), not a
    # credentials problem. A 403 with another reason is still one (the last lines).
    youtube.faults({"method": "POST", "error": "quotaExceeded", "times": None})
    c = netmodel(youtube, retry={"maxRetries": 2, "baseDelayMs": 50, "maxDelayMs": 100}).conn
    reply = c.call("follow", {**channel(GOOGLE_DEVS), "await": True}, timeout=30)
    error = reply["error"]
    assert error["code"] == UNAVAILABLE and "exceeded your quota" in error["message"], reply
    assert error["data"]["retryable"] is True
    rolled_back = error["data"]["state"]
    assert rolled_back["confirmed"] is not True and rolled_back["pending"] is False, rolled_back
    assert [e["status"] for e in youtube.log("POST")] == [403, 403, 403]
    assert youtube.subscriptions() == {}
    # Once the quota is back, a follow goes through with the same token.
    youtube.control("DELETE", "faults")
    assert c.result("follow", {**channel(GOOGLE_DEVS), "await": True})["confirmed"] is True
    assert GOOGLE_DEVS in youtube.subscriptions()
    youtube.faults({"method": "POST", "status": 403, "body": {"error": {
        "code": 403, "message": "Forbidden", "errors": [{"domain": "global", "reason": "forbidden"}]}}})
    reply = c.call("follow", {**channel(ANDROID), "await": True}, timeout=30)
    assert reply["error"]["code"] == UNAUTHORIZED and reply["error"]["data"]["status"] == 403, reply


def test_a_follow_whose_answer_was_lost_is_confirmed_by_its_duplicate_and_the_unfollow_reads_its_id(youtube, netmodel):
    # The insert happens but its answer is lost: the retry meets 400 subscriptionDuplicate,
    # which says the subscription exists: the follow is confirmed. Its id was never
    # answered, so the unfollow reads the state first (which captures it), then deletes.
    youtube.faults({"method": "POST", "drop": True, "applied": True})
    c = netmodel(youtube).conn
    state = c.result("follow", {**channel(GOOGLE_DEVS), "await": True}, timeout=30)
    assert state["confirmed"] is True and state["error"] is None, state
    assert [e["status"] for e in youtube.log("POST")] == [None, 400]
    subscription = youtube.subscriptions()[GOOGLE_DEVS]
    calls_before = len(youtube.log())
    assert c.result("unfollow", {**channel(GOOGLE_DEVS), "await": True})["error"] is None
    after = [(e["method"], e["query"]) for e in youtube.log()[calls_before:]]
    assert len(after) == 2 and after[0][0] == "GET" and f"forChannelId={GOOGLE_DEVS}" in after[0][1], after
    assert after[1] == ("DELETE", f"id={subscription}")
    assert youtube.subscriptions() == {}


def test_a_400_with_another_reason_is_still_a_refusal(youtube, netmodel):
    c = netmodel(youtube).conn
    reply = c.call("follow", {**channel("UCdemoSubscriber000000000"), "await": True}, timeout=30)
    assert reply["error"]["code"] == REJECTED and reply["error"]["data"]["status"] == 400, reply
    assert youtube.subscriptions() == {}
