"""One environment, one token, one set of values at a time (issue 25, items 3, 4, 5
and 7), through the real binary against a loopback HTTP server of this file that
serves two environments under two path prefixes (/prod, /staging) and two accounts
(alice, bob), records every request it gets, and can hold the answers of one
environment until the test lets them go.

What was asked of the API is read from the server's own record, never from netmodel.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import rpcio

pytestmark = pytest.mark.timeout(90)

INVALID_PARAMS = -32602
FOLLOWS = {"alice": {"a1"}, "bob": {"b1"}}


class WorldsAPI:
    """/{env}/users/{me}/following (the account's list), /{env}/users/{me}/follows/{id}
    (one state), /{env}/artists/{id} (a detail naming its environment), POST and
    DELETE /{env}/users/{me}/follows/{id}. Items and attributes name the environment
    that answered them."""

    def __init__(self):
        self.log: list[dict] = []
        self.lock = threading.Lock()
        self.held: dict[str, threading.Event] = {}
        self.arrived = threading.Condition(self.lock)
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_GET(self):
                api.handle(self)

            def do_POST(self):
                api.handle(self)

            def do_DELETE(self):
                api.handle(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self):
        for gate in self.held.values():
            gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def hold(self, env: str) -> threading.Event:
        gate = threading.Event()
        self.held[env] = gate
        return gate

    def requests(self, env: str | None = None) -> list[dict]:
        with self.lock:
            return [dict(e) for e in self.log if env is None or e["env"] == env]

    def wait_requests(self, count: int, env: str | None = None, timeout: float = 10) -> list[dict]:
        return rpcio.wait_for(lambda: len(self.requests(env)) >= count and self.requests(env), timeout)

    def handle(self, request: BaseHTTPRequestHandler):
        length = int(request.headers.get("Content-Length") or 0)
        if length:
            request.rfile.read(length)
        parts = urlsplit(request.path).path.strip("/").split("/")
        env, rest = parts[0], parts[1:]
        entry = {"env": env, "method": request.command, "path": "/" + "/".join(rest),
                 "auth": request.headers.get("Authorization"), "answered": False}
        with self.lock:
            self.log.append(entry)
            self.arrived.notify_all()
        gate = self.held.get(env)
        if gate is not None:
            gate.wait(30)
        status, body = self.answer(env, request.command, rest)
        data = json.dumps(body).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)
        with self.lock:
            entry["answered"] = True

    def answer(self, env: str, method: str, rest: list[str]):
        if env not in ("prod", "staging"):
            return 404, {"error": "no such environment"}
        if rest[:1] == ["artists"] and len(rest) == 2:
            return 200, {"id": rest[1], "name": f"{env} {rest[1]}"}
        if rest[:1] == ["users"] and len(rest) == 3 and rest[2] == "following":
            me = rest[1]
            # Staging has none of prod's follows.
            ids = (sorted(FOLLOWS.get(me, set())) if env == "prod" else []) + [f"{env}-only"]
            return 200, {"items": [{"id": i, "name": f"{env} {i} of {me}"} for i in ids]}
        if rest[:1] == ["users"] and len(rest) == 4 and rest[2] == "follows":
            me, id = rest[1], rest[3]
            if method == "GET":
                return 200, {"following": id in FOLLOWS.get(me, set()) and env == "prod"}
            return 200, {"following": method == "POST"}
        return 404, {"error": "no route"}


@pytest.fixture
def api():
    server = WorldsAPI()
    yield server
    server.stop()


def config(api: WorldsAPI, **overrides) -> dict:
    base = {
        "environments": {"prod": api.url + "/prod", "staging": api.url + "/staging"},
        "environment": "prod",
        "auth": {"header": "Authorization", "scheme": "Bearer", "tokenEnv": "WORLDS_TOKEN"},
        "values": {"me": {"value": "alice"}},
        "maxInFlight": 1,
        "timeoutMs": 20000,
        "retry": {"maxRetries": 0, "baseDelayMs": 10, "maxDelayMs": 10},
        "kinds": {
            "artist": {
                "follow": {"method": "POST", "path": "/users/{me}/follows/{id}", "following": "/following"},
                "unfollow": {"method": "DELETE", "path": "/users/{me}/follows/{id}", "following": "/following"},
                "state": {"method": "GET", "path": "/users/{me}/follows/{id}", "following": {"pointer": "/following"}},
                "detail": {"method": "GET", "path": "/artists/{id}", "attributes": ""},
            }
        },
        "lists": {
            "following": {
                "method": "GET", "path": "/users/{me}/following", "items": "/items",
                "item": {"kind": "artist", "id": "/id", "following": True, "attributes": ""},
                "dependsOn": ["artist"],
            }
        },
    }
    base.update(overrides)
    return base


def send_all(conn, calls):
    """Sends the requests without waiting; returns their ids."""
    ids = []
    for method, params in calls:
        message = conn.request_obj(method, params)
        conn.send(message)
        ids.append(message["id"])
    return ids


def replies(conn, ids, timeout=15):
    """The replies to `ids`, by id; notifications met on the way are kept in `notes`."""
    got, notes = {}, []
    deadline = rpcio.time.monotonic() + timeout
    while set(got) != set(ids):
        message = conn.recv(timeout=max(0.05, deadline - rpcio.time.monotonic()))
        if "id" in message and message.get("id") in ids:
            got[message["id"]] = message
        else:
            notes.append(message)
    return got, notes


def names(list_state):
    return [(item["id"], (item["attributes"] or {}).get("name")) for item in list_state["items"]]


# --------------------------------------------------------------------------
# item 3: answers of the old environment


def test_a_switch_drops_the_old_environments_late_answers_and_withdraws_its_waiting_calls(api, serve_rest):
    c = serve_rest(config(api)).conn
    gate = api.hold("prod")
    # The list goes out to prod and is held there; with one connection, the entity's
    # read and detail wait in netmodel's HTTP queue behind it.
    list_id, entity_id = send_all(c, [
        ("fetchList", {"list": "following"}),
        ("getEntity", {"kind": "artist", "id": "a1"}),
    ])
    api.wait_requests(1, "prod")
    assert c.result("configure", {"environment": "staging"}) == {"environment": "staging"}
    gate.set()  # prod answers now, late
    got, _ = replies(c, [list_id, entity_id])

    listed = got[list_id]["result"]
    assert listed["state"] == "loaded", listed
    assert [i for i, _ in names(listed)] == ["staging-only"], listed
    assert all(name.startswith("staging ") for _, name in names(listed)), listed
    entity = got[entity_id]["result"]
    assert entity["attributes"]["name"] == "staging a1", entity
    assert entity["confirmed"] is False, entity  # staging's answer, not prod's "following"

    # prod was asked the list only: what waited in the queue never went to prod.
    prod = api.requests("prod")
    assert [(e["method"], e["path"]) for e in prod] == [("GET", "/users/alice/following")], prod
    staging = {(e["method"], e["path"]) for e in api.requests("staging")}
    assert {("GET", "/users/alice/following"), ("GET", "/artists/a1"), ("GET", "/users/alice/follows/a1")} <= staging

    # Nothing of prod is kept: asked again, the list and the entity are staging's, from memory.
    again = c.result("fetchList", {"list": "following"})
    assert all(name.startswith("staging ") for _, name in names(again)), again
    state = c.result("getFollowState", {"kind": "artist", "id": "prod-only"})
    assert state["attributes"] is None, state


def test_a_subscriber_never_sees_the_page_the_old_environment_answered_late(api, serve_rest):
    c = serve_rest(config(api)).conn
    gate = api.hold("prod")
    topic = {"type": "list", "list": "following", "params": {}}
    c.result("subscribe", {"topics": [topic]})  # starts the load: held at prod
    api.wait_requests(1, "prod")
    c.result("configure", {"environment": "staging"})
    gate.set()
    shown = []

    def loaded_in_staging(state):
        if "items" in state:
            shown.append(state)
            return state["state"] == "loaded"
        return False

    rpcio.notes_until(c, loaded_in_staging)
    assert [i for i, _ in names(shown[-1])] == ["staging-only"], shown[-1]
    for state in shown:
        assert not any(name and name.startswith("prod ") for _, name in names(state)), state
    rpcio.wait_for(lambda: all(e["answered"] for e in api.requests("prod")), 5)
    c.assert_quiet(0.3)  # prod's late page changes nothing


def test_an_answer_asked_with_the_old_token_is_asked_again_with_the_new_one(api, serve_rest):
    c = serve_rest(config(api), env={"WORLDS_TOKEN": "first-token"}).conn
    gate = api.hold("prod")
    read_id, detail_id = send_all(c, [
        ("getFollowState", {"kind": "artist", "id": "a1"}),
        ("getEntity", {"kind": "artist", "id": "b1"}),
    ])
    api.wait_requests(1, "prod")
    c.result("configure", {"authToken": "second-token"})
    gate.set()
    got, _ = replies(c, [read_id, detail_id])
    assert got[read_id]["result"]["confirmed"] is True, got[read_id]
    assert got[detail_id]["result"]["attributes"]["name"] == "prod b1", got[detail_id]
    log = api.requests("prod")
    # The first read went out with the old token (it was on its way); its answer was
    # dropped and the read asked again with the new one. What waited never carried the old.
    assert log[0]["auth"] == "Bearer first-token" and log[0]["path"] == "/users/alice/follows/a1", log
    assert all(e["auth"] == "Bearer second-token" for e in log[1:]), log
    assert ("GET", "/users/alice/follows/a1") in {(e["method"], e["path"]) for e in log[1:]}, log


# --------------------------------------------------------------------------
# item 4: values


def test_changing_a_value_makes_what_it_fetched_stale_at_once(api, serve_rest):
    c = serve_rest(config(api)).conn
    alice = c.result("fetchList", {"list": "following"})
    assert [i for i, _ in names(alice)] == ["a1", "prod-only"], alice
    assert c.result("getFollowState", {"kind": "artist", "id": "a1"})["confirmed"] is True
    c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "a1"}]})

    c.result("configure", {"values": {"me": "bob"}})
    # Subscribers learn at once that a1's state read as alice says nothing now.
    rpcio.notes_until(c, lambda s: s.get("id") == "a1" and s["confirmed"] is None)
    bob = c.result("fetchList", {"list": "following"})
    assert [i for i, _ in names(bob)] == ["b1", "prod-only"], bob
    assert all(name.endswith(" of bob") for _, name in names(bob)), bob
    state = c.result("getFollowState", {"kind": "artist", "id": "a1"})
    assert state["confirmed"] is False, state
    paths = [e["path"] for e in api.requests("prod")]
    assert paths.count("/users/bob/following") == 1 and "/users/bob/follows/a1" in paths, paths

    # The same value again changes nothing: answered from memory.
    before = len(api.requests())
    c.result("configure", {"values": {"me": "bob"}})
    assert c.result("fetchList", {"list": "following"})["items"] == bob["items"]
    assert len(api.requests()) == before


def test_a_list_page_asked_with_the_old_value_is_not_kept(api, serve_rest):
    c = serve_rest(config(api)).conn
    gate = api.hold("prod")
    (list_id,) = send_all(c, [("fetchList", {"list": "following"})])
    api.wait_requests(1, "prod")
    c.result("configure", {"values": {"me": "bob"}})
    gate.set()
    got, _ = replies(c, [list_id])
    listed = got[list_id]["result"]
    assert [i for i, _ in names(listed)] == ["b1", "prod-only"], listed
    assert "/users/bob/following" in [e["path"] for e in api.requests("prod")]


# --------------------------------------------------------------------------
# item 5: every connection is told


def configuration_notes(conn, count=1, timeout=5):
    seen = []
    deadline = rpcio.time.monotonic() + timeout
    while len(seen) < count:
        message = conn.recv(timeout=max(0.05, deadline - rpcio.time.monotonic()))
        if message.get("method") == "configurationChanged":
            seen.append(message)
    return seen


def test_every_connection_is_told_when_configure_changes_the_daemons_world(api, serve_rest, runtime, connect):
    sock = runtime.root / "w.sock"
    server = serve_rest(config(api), f"--socket={sock}")
    rpcio.wait_for_socket(server, sock)
    other = connect(sock)
    other.result("initialize", {})
    silent = connect(sock)  # has sent nothing: its framing is not known, it is not told
    c = server.conn
    c.result("configure", {"environment": "staging", "authToken": "very-secret-token", "values": {"me": "bob"}})
    for conn in (c, other):
        (note,) = configuration_notes(conn)
        assert "id" not in note, note
        params = note["params"]
        assert params["environment"] == "staging", note
        assert params["changed"] == ["environment", "authToken", "values"], note
        assert params["values"] == ["me"], note
        assert "very-secret-token" not in json.dumps(note)
    silent.assert_quiet(0.3)
    assert silent.result("configure", {}) == {"environment": "staging"}
    # From the socket: the token only; stdio hears it too.
    other.result("configure", {"authToken": None})
    for conn in (c, other):
        (note,) = configuration_notes(conn)
        assert note["params"] == {"environment": "staging", "changed": ["authToken"], "values": []}, note
    # A configure that changes nothing tells nobody.
    assert other.result("configure", {"environment": "staging"}) == {"environment": "staging"}
    other.assert_quiet(0.3)
    c.assert_quiet(0.3)


# --------------------------------------------------------------------------
# item 7: tokens that would break a header


@pytest.mark.parametrize("bad", ["tok\r\nX-Evil: 1", "tok\nX-Evil: 1", "tok\rX", "tok\x00x", "tok\x1bx"])
def test_a_token_with_a_control_character_is_refused_and_the_previous_kept(api, serve_rest, runtime, connect, bad):
    sock = runtime.root / "t.sock"
    server = serve_rest(config(api), f"--socket={sock}", env={"WORLDS_TOKEN": "good-token"})
    rpcio.wait_for_socket(server, sock)
    for conn in (server.conn, connect(sock)):
        reply = conn.call("configure", {"authToken": bad})
        assert reply["error"]["code"] == INVALID_PARAMS, reply
        assert reply["error"]["data"]["path"] == "/authToken", reply
        assert "X-Evil" not in json.dumps(reply) and "tok" not in reply["error"]["message"], reply
    # Nothing changed: the request goes out with the token from the environment.
    assert server.conn.result("getFollowState", {"kind": "artist", "id": "a1"})["confirmed"] is True
    (read,) = api.requests("prod")
    assert read["auth"] == "Bearer good-token", read
    server.conn.assert_quiet(0.2)  # and nobody is told of a change


def test_a_token_from_the_environment_with_a_line_break_is_refused_at_start(api, netmodel_bin, runtime):
    path = runtime.root / "bad-token.json"
    path.write_text(json.dumps(config(api)))
    os.makedirs(runtime.root / "state-bad")
    env = dict(runtime.env, WORLDS_TOKEN="leaky-value\r\nX-Evil: 1")
    done = subprocess.run(
        [str(netmodel_bin), "serve", "--backend", "rest", "--config", str(path), "--state-dir",
         str(runtime.root / "state-bad")],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
    assert done.returncode == 2, done
    assert "WORLDS_TOKEN" in done.stderr and "control characters" in done.stderr, done.stderr
    assert "leaky-value" not in done.stderr and "X-Evil" not in done.stderr, done.stderr
    assert api.requests() == []


def test_the_python_client_ignores_configuration_changed_and_goes_on(api, serve_rest, runtime, connect):
    """Clients ignore notifications they do not know: the Python client, told of
    another connection's configure, still answers and still delivers its stream."""
    import asyncio
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python"))
    from netmodel_client.aio import AsyncClient

    sock = runtime.root / "p.sock"
    server = serve_rest(config(api), f"--socket={sock}")
    rpcio.wait_for_socket(server, sock)

    raw = connect(sock)  # beside the client: the notification is sent to it too
    raw.result("initialize", {})  # its framing known (NDJSON)

    async def run():
        client = await AsyncClient.connect(str(sock), reconnect=False)
        try:
            sub = await client.subscribe({"type": "entity", "kind": "artist", "id": "a1"})
            assert (await client.get_follow_state("artist", "a1")).confirmed is True
            server.conn.result("configure", {"environment": "staging"})
            # The switch makes a1 unknown; read again in staging it is not followed.
            state = await client.get_follow_state("artist", "a1")
            assert state.confirmed is False, state
            seen = []
            async for change in sub:
                seen.append(change)
                if getattr(change, "confirmed", None) is False:
                    break
            assert seen, "the stream goes on after configurationChanged"
        finally:
            await client.close()

    asyncio.run(asyncio.wait_for(run(), 20))
    (note,) = configuration_notes(raw)
    assert note["params"]["changed"] == ["environment"], note
