"""`inspect` (schema/openrpc.json) and `netmodel call`'s waiting line, against the real
binary: the entities behind `stats`' counters, bounded by `limit`; the connections by
client name; the HTTP client's rate-limit hold naming the header that set it, against
the Artsy demo API (examples/artsy/server.py) answering 429 with `x-ratelimit-reset`;
and a `call` that waits for that hold saying so on stderr once it has waited a second.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from datetime import datetime

import pytest

from demo import error_of
from test_compliance import _openrpc, _validate
from test_rest import Artsy

pytestmark = pytest.mark.timeout(90)

INVALID_PARAMS = -32602
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def check(repo_root, result, what="inspect result"):
    _validate(_openrpc(repo_root), {"$ref": "#/components/schemas/InspectResult"}, result, what)


def test_entities_pending_are_listed_bounded_and_filtered_by_kind(socket_server, connect, repo_root):
    # Each backend call takes 3 s: the follows are pending while inspected.
    server, sock = socket_server(None, "--simulate", "latency=3000", "--seed", "1")
    conn = connect(sock)
    for i in range(5):
        assert conn.result("follow", {"kind": "artist", "id": f"a{i}"})["pending"] is True
    assert conn.result("follow", {"kind": "gene", "id": "pop"})["pending"] is True
    time.sleep(0.2)
    everything = conn.result("inspect")
    check(repo_root, everything)
    assert set(everything) >= {"connections", "entities", "outbox", "lists", "holds"}
    assert everything["limit"] == 50 and ISO.match(everything["now"]), everything
    entities = everything["entities"]
    assert entities["total"] == 6 and entities["omitted"] == 0, entities
    first = entities["list"][0]
    assert first["kind"] == "artist" and first["id"] == "a0", "oldest first"
    assert "pending" in first["states"] and first["following"] is True and first["error"] is None
    assert 150 <= first["sinceMs"] < 10_000 and ISO.match(first["since"]), first
    assert everything["outbox"]["total"] == 6
    assert everything["holds"] is None, "the simulated backend does not use HTTP"

    bounded = conn.result("inspect", {"sections": ["entities"], "limit": 2})
    check(repo_root, bounded)
    assert set(bounded) == {"instance", "uptimeMs", "now", "limit", "entities"}
    assert bounded["entities"]["total"] == 6 and bounded["entities"]["omitted"] == 4
    assert [e["id"] for e in bounded["entities"]["list"]] == ["a0", "a1"]

    genes = conn.result("inspect", {"sections": ["entities", "outbox"], "kind": "gene"})
    assert [(e["kind"], e["id"]) for e in genes["entities"]["list"]] == [("gene", "pop")]
    assert [(i["kind"], i["id"], i["wanted"]) for i in genes["outbox"]["list"]] == [("gene", "pop", True)]
    one = conn.result("inspect", {"sections": ["entities"], "kind": "artist", "id": "a3"})
    assert [e["id"] for e in one["entities"]["list"]] == ["a3"]

    # Once settled, nothing is listed.
    deadline = time.monotonic() + 15
    while conn.result("inspect", {"sections": ["entities"]})["entities"]["total"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert conn.result("inspect", {"sections": ["entities", "outbox"]})["outbox"]["total"] == 0


@pytest.mark.parametrize(
    "params, path",
    [
        ({"limit": 0}, "/limit"),
        ({"limit": 1001}, "/limit"),
        ({"sections": ["entities", "bogus"]}, "/sections/1"),
        ({"sections": "entities"}, "/sections"),
        ({"id": "banksy"}, "/id"),
        ({"kind": 3}, "/kind"),
    ],
)
def test_bad_params_are_refused_and_the_connection_goes_on(socket_server, connect, params, path):
    server, sock = socket_server(None)
    conn = connect(sock)
    error = error_of(conn.call("inspect", params), INVALID_PARAMS)
    assert error["data"]["path"] == path, error
    assert conn.result("inspect", {"sections": ["holds"]})["holds"] is None


def test_connections_show_the_client_name_transport_and_subscriptions(socket_server, connect, repo_root):
    server, sock = socket_server(None)
    editor = connect(sock)
    name = "my-editor \x1b]0;owned\x07"
    editor.result("initialize", {"processId": None, "clientInfo": {"name": name}, "capabilities": {}})
    sub = editor.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "banksy"},
                                                  {"type": "list", "list": "following/artist", "params": {}}]})
    other = connect(sock)
    result = other.result("inspect", {"sections": ["connections"]})
    check(repo_root, result)
    by_id = {c["id"]: c for c in result["connections"]["list"]}
    assert result["connections"]["total"] == 2 and len(by_id) == 2
    mine, theirs = sorted(by_id.values(), key=lambda c: c["id"])
    assert mine["client"] == name and mine["transport"] == "socket"
    assert mine["subscriptions"] == [{"subscription": sub["subscription"], "topicCount": 2,
                                      "topics": ["entity:artist/banksy", "list:following/artist"]}]
    assert theirs["client"] is None and theirs["subscriptions"] == []


def rate_limited_artsy(demo, serve_rest, runtime, reset_in: int, *extra):
    """The Artsy demo API whose next GET is a 429 with `x-ratelimit-reset` `reset_in`
    seconds ahead (epoch seconds, as GitHub sends it), and netmodel on it with a socket;
    the first read is answered with that 429, which holds every call after it."""
    api = demo(Artsy)
    sock = runtime.root / "api.sock"
    server = serve_rest(api.config(rateLimit={"resetHeader": "x-ratelimit-reset"}), f"--socket={sock}", *extra)
    conn = server.conn
    reset = int(time.time()) + reset_in
    api.faults({"method": "GET", "status": 429, "headers": {"x-ratelimit-reset": str(reset)}, "times": 1})
    error = error_of(conn.call("getFollowState", {"kind": "artist", "id": "banksy"}), -32001)
    assert error["data"]["retryAfterMs"] > (reset_in - 2) * 1000, error
    return api, server, conn, sock, reset


def test_holds_name_the_header_that_set_them_and_the_calls_waiting(demo, serve_rest, runtime, repo_root):
    api, server, conn, sock, reset = rate_limited_artsy(demo, serve_rest, runtime, 6)
    # A read now waits in the HTTP queue until the hold ends.
    conn.send(conn.request_obj("getFollowState", {"kind": "artist", "id": "kaws"}, id="held"))
    time.sleep(0.3)
    result = conn.result("inspect", {"sections": ["holds", "entities"]}, id="look")
    check(repo_root, result)
    holds = result["holds"]
    assert holds["api"] == api.url and holds["environment"] == "local", holds
    limit = holds["rateLimit"]
    assert limit["reason"] == {"status": 429, "header": "x-ratelimit-reset", "value": str(reset)}, limit
    assert 2_000 < limit["untilMs"] <= 6_000, limit
    until = datetime.fromisoformat(limit["until"].replace("Z", "+00:00")).timestamp()
    assert abs(until - reset) <= 1.5, (limit["until"], reset)
    waiting = holds["waiting"]
    assert waiting["total"] == 1 and waiting["list"][0]["request"].startswith(f"GET {api.url}/api/v1/me/follow/artists")
    assert waiting["list"][0]["priority"] == "user" and waiting["list"][0]["sinceMs"] >= 200
    entities = {(e["kind"], e["id"]): e for e in result["entities"]["list"]}
    assert "reading" in entities[("artist", "kaws")]["states"], entities
    assert "failed" in entities[("artist", "banksy")]["states"]
    # The read goes out when the hold ends, and is answered.
    answer = conn.recv_reply(timeout=15)
    assert answer["id"] == "held" and answer["result"]["confirmed"] is False, answer
    assert conn.result("inspect", {"sections": ["holds"]})["holds"]["rateLimit"] is None


def run_call(netmodel_bin, runtime, sock, *args):
    return subprocess.Popen([str(netmodel_bin), "call", f"--socket={sock}", *args], env=runtime.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


WAITING = re.compile(r"^waiting: (\S+) rate-limited until (\d\d:\d\d:\d\d) \(x-ratelimit-reset\)$")


def test_a_call_held_by_a_rate_limit_says_so_then_gets_its_answer(demo, serve_rest, runtime, netmodel_bin):
    api, server, conn, sock, reset = rate_limited_artsy(demo, serve_rest, runtime, 5)
    started = time.monotonic()
    call = run_call(netmodel_bin, runtime, sock, "getFollowState", "kind=artist", "id=kaws")
    out, err = call.communicate(timeout=30)
    took = time.monotonic() - started
    assert call.returncode == 0, err
    assert json.loads(out)["confirmed"] is False
    assert took >= 2.5, "it waited for the hold"
    lines = err.splitlines()
    assert len(lines) == 1, f"one line, as the reason did not change: {err!r}"
    match = WAITING.match(lines[0])
    assert match and match.group(1) == api.url, lines
    shown = time.strftime("%H:%M:%S", time.localtime(reset))
    later = time.strftime("%H:%M:%S", time.localtime(reset + 1))
    assert match.group(2) in (shown, later), (lines, shown)


def test_a_call_that_times_out_in_a_hold_says_why_it_waited(demo, serve_rest, runtime, netmodel_bin):
    api, server, conn, sock, reset = rate_limited_artsy(demo, serve_rest, runtime, 20)
    call = run_call(netmodel_bin, runtime, sock, "--timeout=2500", "getFollowState", "kind=artist", "id=kaws")
    out, err = call.communicate(timeout=30)
    assert call.returncode == 1 and out == "", (out, err)
    lines = err.splitlines()
    assert WAITING.match(lines[0]) and "no answer in time" in lines[-1], lines


def test_a_quick_call_prints_no_waiting_line(socket_server, runtime, netmodel_bin):
    server, sock = socket_server(None)
    call = run_call(netmodel_bin, runtime, sock, "getFollowState", "kind=artist", "id=banksy")
    out, err = call.communicate(timeout=30)
    assert call.returncode == 0 and err == "", err
    assert json.loads(out)["kind"] == "artist"


def test_a_slow_read_says_what_the_entity_waits_for(socket_server, runtime, netmodel_bin):
    # No HTTP: the simulated backend answers after 2.5 s; the line names the read.
    server, sock = socket_server(None, "--simulate", "latency=2500")
    call = run_call(netmodel_bin, runtime, sock, "getFollowState", "kind=artist", "id=banksy")
    out, err = call.communicate(timeout=30)
    assert call.returncode == 0, err
    assert re.match(r"^waiting: artist/banksy: reading, for \d+ s$", err.splitlines()[0]), err


def test_the_default_read_timeout_is_documented(netmodel_bin):
    out = subprocess.run([str(netmodel_bin), "call", "--help"], capture_output=True, text=True, timeout=30)
    assert "Default: 30000 for the methods that only read" in out.stdout
    assert "waiting:" in out.stdout


def test_an_intent_waiting_for_credentials_is_listed_with_its_error(demo, serve_rest, repo_root):
    api = demo(Artsy, "s3cret-token")
    conn = serve_rest(api.config()).conn
    error = error_of(conn.call("follow", {"kind": "artist", "id": "kaws", "await": True}), -32003)
    assert error["data"]["state"]["pending"] is True
    result = conn.result("inspect", {"sections": ["entities", "outbox"]})
    check(repo_root, result)
    [entity] = result["entities"]["list"]
    assert (entity["kind"], entity["id"]) == ("artist", "kaws")
    assert {"pending", "failed", "waitingForCredentials"} <= set(entity["states"]), entity
    assert entity["error"]["code"] == -32003 and entity["error"]["retryable"] is False
    [intent] = result["outbox"]["list"]
    assert (intent["kind"], intent["id"], intent["wanted"], intent["environment"], intent["active"]) == (
        "artist", "kaws", True, "local", True)
    assert intent["error"]["code"] == -32003 and intent["sinceMs"] is not None
    conn.result("configure", {"authToken": "s3cret-token"})
    deadline = time.monotonic() + 10
    while conn.result("inspect", {"sections": ["outbox"]})["outbox"]["total"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert conn.result("inspect", {"sections": ["entities", "outbox"]})["entities"]["total"] == 0


def test_lists_held_show_their_pages_and_last_fetch(socket_server, connect, repo_root):
    server, sock = socket_server(None)
    conn = connect(sock)
    conn.result("follow", {"kind": "artist", "id": "banksy", "await": True})
    assert conn.result("inspect", {"sections": ["lists"]})["lists"] == {"total": 0, "omitted": 0, "list": []}
    conn.result("fetchList", {"list": "following/artist"})
    time.sleep(0.2)
    result = conn.result("inspect", {"sections": ["lists"]})
    check(repo_root, result)
    [held] = result["lists"]["list"]
    assert (held["list"], held["params"], held["phase"], held["items"], held["pages"]) == (
        "following/artist", {}, "loaded", 1, 1), held
    assert held["loading"] is False and held["stale"] is False and held["error"] is None
    assert 150 <= held["fetchedMs"] < 10_000 and ISO.match(held["fetched"]), held
