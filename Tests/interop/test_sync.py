"""`sync` (issue 31 §1): answers once every intent accepted before it has settled, or
waits on what its timeout does not cover, after the settlements' notifications; on
stdio and a socket, against the simulated backend's answers and the local backend.
"""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

import rpcio
from test_rest import Artsy, artsy, rest  # noqa: F401  (fixtures)
from test_refused_intents import start

pytestmark = pytest.mark.timeout(60)
TRANSPORTS = ["stdio", "socket"]


def until_reply(conn, request_id, timeout=20):
    """Every message up to the reply to `request_id`: (notifications, reply)."""
    notes = []
    while True:
        message = conn.recv(timeout=timeout)
        if message.get("id") == request_id:
            return notes, message
        notes.append(message)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sync_waits_for_every_intent_and_its_notifications_come_first(spawn, runtime, transport):
    server, c = start(spawn, runtime, transport, "--simulate", "latency=300,failure=0")
    c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist"}]})
    c.send(c.request_obj("follow", {"kind": "artist", "id": "banksy"}, id="f1"))
    c.send(c.request_obj("follow", {"kind": "artist", "id": "kaws"}, id="f2"))
    c.send(c.request_obj("sync", {"timeoutMs": 10_000}, id="sync"))
    notes, reply = until_reply(c, "sync")
    result = reply["result"]
    assert [(s["id"], s["outcome"]) for s in result["settled"]] == [("banksy", "confirmed"), ("kaws", "confirmed")]
    assert result["waiting"] == [] and all(s["state"]["confirmed"] is True for s in result["settled"]), result
    confirmed = {n["params"]["state"]["id"] for n in notes if n.get("method") == "stateChanged"
                 and n["params"]["state"]["confirmed"] is True}
    assert confirmed == {"banksy", "kaws"}, "each settlement was notified before the answer"
    assert c.result("sync", {}) == {"settled": [], "waiting": []}, "nothing pending: answered at once"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_refused_intent_is_listed_refused_with_its_error(spawn, runtime, transport):
    server, c = start(spawn, runtime, transport, "--simulate", "latency=50,failure=1,status=422")
    c.result("follow", {"kind": "artist", "id": "banksy"})
    result = c.result("sync", {})
    [item] = result["settled"]
    assert item["outcome"] == "refused" and item["state"]["error"]["code"] == -32002, item
    assert item["state"]["following"] is not True and item["state"]["pending"] is False, item


def test_an_intent_waiting_for_credentials_is_answered_at_once_as_waiting(spawn, runtime):
    server, c = start(spawn, runtime, "stdio", "--simulate", "latency=50,failure=1,status=401")
    c.result("follow", {"kind": "artist", "id": "locked"})
    # A minute's timeout, answered well before: the wait for a token is not the timeout's.
    result = c.result("sync", {"timeoutMs": 60_000}, timeout=10)
    assert result["settled"] == [], result
    [item] = result["waiting"]
    assert item["reason"] == "credentials" and item["state"]["pending"] is True, item
    assert item["state"]["error"]["code"] == -32003, item


def test_what_the_timeout_leaves_is_listed_waiting_and_intents_after_it_are_not_waited_for(spawn, runtime):
    server, c = start(spawn, runtime, "stdio", "--simulate", "latency=3000,failure=0")
    c.result("follow", {"kind": "artist", "id": "slow"})
    result = c.result("sync", {"timeoutMs": 100})
    assert result["settled"] == [] and [(w["id"], w["reason"]) for w in result["waiting"]] == [("slow", "timeout")]
    assert result["waiting"][0]["state"]["pending"] is True, result
    c.send(c.request_obj("sync", {"timeoutMs": 10_000}, id="later"))
    c.send(c.request_obj("follow", {"kind": "artist", "id": "after"}, id="after"))
    notes, reply = until_reply(c, "later")
    assert [s["id"] for s in reply["result"]["settled"]] == ["slow"], reply


def test_a_slow_reader_gets_every_settlement_before_the_answer(socket_server, runtime):
    """Two thousand follows confirmed at once (the local backend) queue far more than a
    reader that has not read holds (64 KiB): the answer still comes after all of them."""
    server, path = socket_server(runtime.root / "slow.sock")
    c, sock = rpcio.socket_conn(str(path), rpcio.NDJSON, server.diagnostics)
    c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist"}]})
    ids = [f"a{n}" for n in range(2000)]
    burst = b"".join(json.dumps({"jsonrpc": "2.0", "id": f"f-{i}", "method": "follow",
                                 "params": {"kind": "artist", "id": i}}).encode() + b"\n" for i in ids)
    c.send_raw(burst + json.dumps({"jsonrpc": "2.0", "id": "sync", "method": "sync"}).encode() + b"\n")
    notes, reply = until_reply(c, "sync", timeout=30)
    confirmed = {n["params"]["state"]["id"] for n in notes if n.get("method") == "stateChanged"
                 and n["params"]["state"]["confirmed"] is True}
    assert confirmed == set(ids), f"{len(set(ids) - confirmed)} settlements came after the answer"
    assert len(reply["result"]["settled"]) == 2000, len(reply["result"]["settled"])
    rpcio.close_socket(sock)


@pytest.mark.parametrize("params, path", [({"timeoutMs": -1}, "/timeoutMs"), ({"timeoutMs": 600_001}, "/timeoutMs"),
                                          ({"timeoutMs": "5"}, "/timeoutMs")])
def test_bad_params_are_refused_with_their_path(spawn, params, path):
    server = spawn()
    reply = server.conn.call("sync", params)
    assert reply["error"]["code"] == -32602 and reply["error"]["data"]["path"] == path, reply
    assert server.conn.result("sync", {}) == {"settled": [], "waiting": []}


def test_netmodel_call_sync_from_the_shell(socket_server, runtime, netmodel_bin):
    server, path = socket_server(runtime.root / "shell.sock", "--simulate", "latency=200,failure=0")
    def call(*args):
        return subprocess.run([str(netmodel_bin), "call", f"--socket={path}", *args], env=runtime.env,
                              capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert call("follow", "kind=artist", "id=banksy").returncode == 0
    done = call("sync", "timeoutMs:=5000")
    assert done.returncode == 0, done.stderr
    assert [s["outcome"] for s in json.loads(done.stdout)["settled"]] == ["confirmed"], done.stdout


def test_sync_over_content_length_framing(spawn):
    server = spawn("--simulate", "latency=200,failure=0", framing=rpcio.LSP)
    c = server.conn
    c.send(c.request_obj("follow", {"kind": "artist", "id": "framed"}, id="f"))
    c.send(c.request_obj("sync", {}, id="sync"))
    notes, reply = until_reply(c, "sync")
    assert [(s["id"], s["outcome"]) for s in reply["result"]["settled"]] == [("framed", "confirmed")], reply


def test_a_rate_limit_hold_on_the_rest_backend_is_waiting_with_its_reason(artsy, rest):
    """Artsy's demo answers a follow 429 with Retry-After 120: the intent waits for the
    hold (within retry.maxWaitMs), and sync says so at once instead of timing out."""
    api = artsy()
    api.faults({"method": "POST", "path": "follow/artist$", "status": 429, "headers": {"Retry-After": "120"}})
    c = rest(api, maxInFlight=1).conn
    c.result("follow", {"kind": "artist", "id": "held"})
    def retrying():
        shown = c.result("inspect", {})
        return "rateLimit" in shown["holds"] and "retrying" in shown["entities"]["list"][0]["states"]

    assert rpcio.wait_for(retrying, 10), "the 429 answered, the intent waits to be sent again"
    result = c.result("sync", {"timeoutMs": 30_000}, timeout=10)
    [item] = result["waiting"]
    assert item["id"] == "held" and item["reason"] == "rateLimit" and item["state"]["pending"] is True, result


def test_a_kill_during_sync_loses_no_intent_and_the_next_server_settles_it(spawn, runtime):
    state = runtime.root / "state-sync-kill"
    state.mkdir()
    server = spawn("--state-dir", state, "--simulate", "latency=5000,failure=0")
    c = server.conn
    c.result("follow", {"kind": "artist", "id": "survivor"})
    c.send(c.request_obj("sync", {"timeoutMs": 60_000}, id="sync"))
    c.assert_quiet(0.3)  # it waits for the intent
    server.signal(signal.SIGKILL)
    server.wait()
    again = spawn("--state-dir", state)
    result = again.conn.result("sync", {"timeoutMs": 10_000})
    assert [(s["id"], s["outcome"]) for s in result["settled"]] == [("survivor", "confirmed")], result
