"""The REST backend through the real binary against examples/mastodon/server.py, which
imitates Mastodon's follow API: follows of locked accounts become requests (never shown
as confirmed follows), requests are approved later, relationships are read in batches,
and the user's own following list (`{me}`) is paged by Link to the end.

Every round trip is checked in the demo server's own state (GET /_control/state), and
call counts are read from the server.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from demo import DemoServer, error_of, pipeline
from jsonschema import Draft202012Validator

pytestmark = pytest.mark.timeout(90)

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples" / "mastodon" / "config.json"
TOKEN = "demo-token"
UNAVAILABLE, REJECTED, UNAUTHORIZED, INVALID_PARAMS = -32001, -32002, -32003, -32602
RELATIONSHIPS = "GET /api/v1/accounts/relationships"


class Mastodon(DemoServer):
    """examples/mastodon/server.py on a free port, with its control API."""

    api = "mastodon"

    def state(self) -> dict:
        return self.control("GET", "state")


@pytest.fixture
def mastodon(demo):
    return demo(Mastodon)


@pytest.fixture
def netmodel(serve_rest, mastodon):
    """netmodel(env=…, **config_overrides) -> ServerProc on examples/mastodon/config.json."""

    def _start(env=None, **overrides):
        environment = {"MASTODON_TOKEN": TOKEN, "MASTODON_ACCOUNT_ID": "1"}
        environment.update(env or {})
        return serve_rest(mastodon.config(**overrides), state="state-mastodon", env=environment)

    return _start


def entity_state_validator():
    """schema/openrpc.json's EntityState, to check the requested state against."""
    document = json.loads((REPO / "schema" / "openrpc.json").read_text())
    return Draft202012Validator({"$ref": "#/components/schemas/EntityState", "components": document["components"]})


def account(account_id: str) -> dict:
    return {"kind": "account", "id": account_id}


def wait_for(predicate, timeout=10.0, what="the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"{what} not met in {timeout}s")


def test_follow_and_unfollow_round_trip_in_the_servers_state(mastodon, netmodel):
    c = netmodel().conn
    state = c.result("follow", {**account("5"), "await": True})
    assert state["confirmed"] is True and state["following"] is True and "requested" not in state, state
    assert "5" in mastodon.state()["following"]
    state = c.result("unfollow", {**account("5"), "await": True})
    assert state["confirmed"] is False and state["error"] is None, state
    assert "5" not in mastodon.state()["following"]


def test_a_locked_accounts_follow_is_requested_never_confirmed(mastodon, netmodel):
    c = netmodel().conn
    c.result("subscribe", {"topics": [{"type": "entity", **account("7")}]})
    state = c.result("follow", {**account("7"), "await": True})
    assert state["requested"] is True and state["following"] is False and state["confirmed"] is False, state
    assert state["pending"] is False and state["error"] is None, state
    entity_state_validator().validate(state)
    assert mastodon.state() == {"following": ["3", "2"], "requested": ["7"]}
    # A second follow sends nothing: the server would answer the same request.
    assert c.result("follow", {**account("7"), "await": True})["requested"] is True
    assert mastodon.route("POST /api/v1/accounts/:id/follow") == 1
    # The cached state says requested; nothing on the way ever said confirmed.
    assert c.result("getFollowState", account("7"))["requested"] is True
    seen = []
    while c.stash:
        message = c.recv(timeout=1)
        if message.get("method") == "stateChanged":
            seen.append(message["params"]["state"])
    assert seen and all(s["confirmed"] is not True for s in seen), seen
    assert seen[-1]["requested"] is True


def test_an_approval_later_is_seen_by_a_state_read(mastodon, netmodel):
    c = netmodel().conn
    assert c.result("follow", {**account("13"), "await": True})["requested"] is True
    mastodon.control("POST", "approve", {})
    assert "13" in mastodon.state()["following"]
    state = c.result("getFollowState", {**account("13"), "refresh": True})
    assert state["confirmed"] is True and state["following"] is True and "requested" not in state, state


def test_a_rejected_request_is_cleared_by_a_state_read_and_an_unfollow_withdraws_one(mastodon, netmodel):
    c = netmodel().conn
    c.result("follow", {**account("7"), "await": True})
    mastodon.control("POST", "reject", {})
    state = c.result("getFollowState", {**account("7"), "refresh": True})
    assert "requested" not in state and state["confirmed"] is False, state
    c.result("follow", {**account("7"), "await": True})
    assert mastodon.state()["requested"] == ["7"]
    state = c.result("unfollow", {**account("7"), "await": True})
    assert "requested" not in state and state["confirmed"] is False and state["error"] is None, state
    assert mastodon.state()["requested"] == []


def test_batched_reads_cost_fewer_calls_than_ids(mastodon, netmodel):
    mastodon.control("POST", "follows", {"following": ["2", "4"], "requested": ["7"]})
    c = netmodel().conn
    asked = ["2", "3", "4", "5", "6", "7", "8", "9", "10", "11"]
    replies = pipeline(c, [("getFollowState", account(i)) for i in asked])
    states = {r["result"]["id"]: r["result"] for r in replies.values()}
    assert {i for i in asked if states[i]["confirmed"]} == {"2", "4"}
    assert states["7"]["requested"] is True and states["7"]["confirmed"] is False
    assert 1 <= mastodon.route(RELATIONSHIPS) < len(asked)


def test_an_id_the_relationships_answer_leaves_out_is_an_error_not_unfollowed(mastodon, netmodel):
    c = netmodel().conn
    reply = c.call("getFollowState", account("424242"))
    error = error_of(reply, REJECTED)
    assert "no item for id 424242" in error["message"]
    assert error["data"]["state"]["confirmed"] is None


def test_the_users_own_following_list_to_the_end(mastodon, netmodel):
    follows = [str(n) for n in range(100, 190)]
    mastodon.control("POST", "follows", {"following": follows})
    c = netmodel().conn
    page = c.result("fetchList", {"list": "following"})
    while page["hasMore"]:
        page = c.result("fetchList", {"list": "following", "page": "next"})
    assert [item["id"] for item in page["items"]] == mastodon.state()["following"] == follows[::-1]
    assert mastodon.route("GET /api/v1/accounts/:id/following") == 3


def test_me_unset_fails_at_once_then_configure_sets_it(mastodon, netmodel):
    c = netmodel(env={"MASTODON_ACCOUNT_ID": ""}).conn
    page = c.call("fetchList", {"list": "following"})
    text = json.dumps(page)
    assert "{me}" in text and "MASTODON_ACCOUNT_ID" in text, page
    assert mastodon.route("GET /api/v1/accounts/:id/following") == 0
    error = error_of(c.call("configure", {"values": {"you": "1"}}), INVALID_PARAMS)
    assert error["data"]["path"] == "/values/you"
    error = error_of(c.call("configure", {"values": {"me": "1\r\nX-Evil: 1"}}), INVALID_PARAMS)
    assert error["data"]["path"] == "/values/me"
    c.result("configure", {"values": {"me": "1"}})
    page = c.result("fetchList", {"list": "following", "page": "refresh"})
    assert [item["id"] for item in page["items"]] == ["3", "2"]


def test_a_401_until_the_token_is_configured(mastodon, netmodel):
    c = netmodel(env={"MASTODON_TOKEN": "wrong"}).conn
    error = error_of(c.call("follow", {**account("5"), "await": True}), UNAUTHORIZED)
    assert "The access token is invalid" in error["message"]
    # The intent waits for credentials: still pending, sent when a token is configured.
    assert error["data"]["state"]["pending"] is True
    assert "5" not in mastodon.state()["following"]
    c.result("configure", {"authToken": TOKEN})
    wait_for(lambda: "5" in mastodon.state()["following"], what="the follow sent with the new token")


def test_following_yourself_is_a_refusal_with_the_apis_message(mastodon, netmodel):
    # Mastodon answers 403 {"error": "This action is not allowed"}: about the action,
    # not the token, so the follow rolls back instead of waiting for credentials.
    c = netmodel().conn
    error = error_of(c.call("follow", {**account("1"), "await": True}), REJECTED)
    assert "This action is not allowed" in error["message"], error
    state = error["data"]["state"]
    assert state["pending"] is False and state["following"] is not True, state  # rolled back
    assert state["error"]["code"] == REJECTED and "This action is not allowed" in state["error"]["message"], state
    assert c.result("stats")["waitingForCredentials"] == 0
    assert mastodon.route("POST /api/v1/accounts/:id/follow") == 1, "a refusal is not sent again"
    assert "1" not in mastodon.state()["following"]


def test_a_403_about_the_scope_waits_for_credentials(mastodon, netmodel):
    c = netmodel().conn
    mastodon.control("POST", "faults", [{"path": "/follow$", "status": 403,
                                        "body": {"error": "This action is outside the authorized scopes"}}])
    error = error_of(c.call("follow", {**account("5"), "await": True}), UNAUTHORIZED)
    assert "outside the authorized scopes" in error["message"]
    assert error["data"]["state"]["pending"] is True
    c.result("configure", {"authToken": TOKEN})
    wait_for(lambda: "5" in mastodon.state()["following"], what="the follow sent again with a token configured")


def test_a_read_while_an_intent_waits_for_credentials_keeps_its_reason(mastodon, netmodel):
    c = netmodel().conn
    mastodon.control("POST", "faults", [{"path": "/follow$", "status": 401, "body": {"error": "The access token is invalid"}}])
    error_of(c.call("follow", {**account("5"), "await": True}), UNAUTHORIZED)
    reads = mastodon.route(RELATIONSHIPS)
    state = c.result("getFollowState", {**account("5"), "refresh": True})
    assert mastodon.route(RELATIONSHIPS) == reads + 1, "the read went out and was answered"
    assert state["pending"] is True and state["following"] is True and state["confirmed"] is False, state
    assert state["error"] is not None and state["error"]["code"] == UNAUTHORIZED, state
    assert "The access token is invalid" in state["error"]["message"], state
    assert c.result("getFollowState", account("5"))["error"]["code"] == UNAUTHORIZED
    assert c.result("stats")["waitingForCredentials"] == 1


def test_rate_limited_calls_are_retried(mastodon, netmodel):
    c = netmodel(retry={"maxRetries": 4, "baseDelayMs": 20, "maxDelayMs": 100}).conn
    mastodon.control("POST", "ratelimit", {"remaining": 0, "resetSeconds": 1})
    mastodon.control(
        "POST", "faults",
        [{"path": "/follow$", "status": 429, "body": {"error": "Too many requests"}, "times": 2}])
    mastodon.control("POST", "ratelimit", {"remaining": None})
    state = c.result("follow", {**account("6"), "await": True})
    assert state["confirmed"] is True, state
    assert mastodon.route("POST /api/v1/accounts/:id/follow") == 3
    assert "6" in mastodon.state()["following"]


def test_the_configuration_is_valid_for_the_schema_and_check_config(netmodel_bin):
    schema = json.loads((REPO / "schema" / "backend.schema.json").read_text())
    config = json.loads(CONFIG.read_text())
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(config)]
    assert not errors, errors
    proc = subprocess.run([str(netmodel_bin), "check-config", str(CONFIG)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "kinds: account; environments: local, mastodon.social" in proc.stdout


def test_a_429_holds_every_request_until_its_iso_8601_reset_then_the_follow_is_confirmed(mastodon, netmodel):
    from datetime import datetime, timedelta, timezone

    c = netmodel().conn
    reset = datetime.now(timezone.utc) + timedelta(seconds=2)
    mastodon.control("POST", "faults", [{
        "path": "/follow$", "status": 429, "body": {"error": "Too many requests"},
        "headers": {"X-RateLimit-Limit": "300", "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Reset": reset.isoformat(timespec="milliseconds").replace("+00:00", "Z")}}])

    def requests():
        return sum(mastodon.control("GET", "stats")["routes"].values())

    c.send({"jsonrpc": "2.0", "id": 1, "method": "follow", "params": {**account("6"), "await": True}})
    wait_for(lambda: requests() == 1, what="the refused follow")
    c.send({"jsonrpc": "2.0", "id": 2, "method": "getFollowState", "params": {**account("4"), "refresh": True}})
    c.send({"jsonrpc": "2.0", "id": 3, "method": "fetchList", "params": {"list": "following"}})
    # Until the reset, nothing reaches the server: not the follow again, not the read, not the list.
    while datetime.now(timezone.utc) < reset - timedelta(milliseconds=150):
        assert requests() == 1, mastodon.control("GET", "stats")
        time.sleep(0.05)
    got = {}
    while len(got) < 3:
        message = c.recv(timeout=20)
        if "id" in message:
            got[message["id"]] = message
    assert got[1]["result"]["confirmed"] is True, got[1]
    assert got[2]["result"]["confirmed"] is False and got[3]["result"]["state"] == "loaded", got
    assert mastodon.route("POST /api/v1/accounts/:id/follow") == 2
    assert "6" in mastodon.state()["following"]


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
def test_a_request_reaches_a_silent_socket_subscriber_in_either_framing(mastodon, serve_rest, connect, runtime, framing):
    """The same promise on the other transport and framings: a follow made over stdio in
    one framing, pushed to a socket subscriber in the other that sends nothing after
    `subscribe`; every state it is shown says requested, none says confirmed."""
    from rpcio import wait_for_socket

    other = "lsp" if framing == "ndjson" else "ndjson"
    sock = runtime.run / "m.sock"
    server = serve_rest(
        mastodon.config(), f"--socket={sock}", state="state-mastodon", framing=framing,
        env={"MASTODON_TOKEN": TOKEN, "MASTODON_ACCOUNT_ID": "1"})
    wait_for_socket(server, sock)
    watcher = connect(sock, other)
    watcher.result("subscribe", {"topics": [{"type": "entity", **account("7")}]})
    state = server.conn.result("follow", {**account("7"), "await": True})
    assert state["requested"] is True and state["confirmed"] is False, state
    seen = []
    # Up to the version the follow settled in (a read the subscription started may come first).
    while not seen or seen[-1]["version"] < state["version"]:
        message = watcher.recv(timeout=5, what="stateChanged on the silent subscriber")
        if message.get("method") == "stateChanged":
            seen.append(message["params"]["state"])
    assert all(s["confirmed"] is not True for s in seen), seen
    assert seen[-1]["requested"] is True and seen[-1]["following"] is False, seen
