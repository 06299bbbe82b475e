"""Every state change reaches its subscribers without waiting for the peer's next
message (docs/protocol.md "Subscriptions"): the subscriber below sends nothing after its last
request and must still see the settled state, on every transport, framing, backend
and topic kind. The bound (SETTLE_S) is a functional limit, not a benchmark.

The real-client half of this promise is test_clients.py's jsonrpc.el test: Emacs
stops reading at the reply of a synchronous request, so a state change written after
that reply is not seen until more output comes.
"""

from __future__ import annotations

import time

import pytest

import rpcio
from test_rest import Artsy, artsy, rest  # noqa: F401  (fixtures)

pytestmark = pytest.mark.timeout(90)

SETTLE_S = 2.0

TRANSPORTS = ["stdio", "socket"]
FRAMINGS = [rpcio.NDJSON, rpcio.LSP]
BACKENDS = ["local", "simulated", "rest"]
TOPICS = ["entity", "list"]


def start(backend, transport, framing, spawn, runtime, artsy, rest):
    """The server and a connection to it in `framing`; (conn, kind, id, list name)."""
    socket_args = ["--socket", "--no-stdio"] if transport == "socket" else []
    if backend == "rest":
        server = rest(artsy(), *socket_args)
        kind, ident, list_name = "artist", "banksy", "followedArtists"
    else:
        extra = ["--simulate", "latency=40,jitter=20,failure=0", "--seed", "7"] if backend == "simulated" else []
        server = spawn("--state-dir", runtime.root / "sd", *extra, *socket_args, stdio=transport == "stdio",
                       framing=framing)
        kind, ident, list_name = "artist", "kaws", "following/artist"
    if transport == "socket":
        rpcio.wait_for_socket(server, runtime.default_socket)
        conn, sock = rpcio.socket_conn(str(runtime.default_socket), framing, server.diagnostics)
        return conn, sock, kind, ident, list_name
    server.conn.framing = framing
    return server.conn, None, kind, ident, list_name


def settled_within(conn, done, seconds):
    """Notifications until `done(state)`; the peer sends nothing meanwhile."""
    deadline = time.monotonic() + seconds
    seen = []
    while time.monotonic() < deadline:
        try:
            message = conn.recv(timeout=max(0.01, deadline - time.monotonic()))
        except AssertionError:
            break
        if message.get("method") == "stateChanged":
            seen.append(message["params"]["state"])
            if done(message["params"]["state"]):
                return seen
    raise AssertionError(f"not settled within {seconds}s of the last request; saw {seen[-3:]}")


@pytest.mark.parametrize("topic", TOPICS)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_silent_subscriber_sees_the_settled_state(transport, framing, backend, topic, spawn, runtime, artsy, rest):
    conn, sock, kind, ident, list_name = start(backend, transport, framing, spawn, runtime, artsy, rest)
    try:
        if topic == "entity":
            conn.result("subscribe", {"topics": [{"type": "entity", "kind": kind, "id": ident}]})

            def done(state):
                return state.get("id") == ident and state["confirmed"] is True and state["pending"] is False
        else:
            first = conn.result("fetchList", {"list": list_name})
            assert first["state"] == "loaded", first
            assert ident not in [item["id"] for item in first["items"]]
            conn.result("subscribe", {"topics": [{"type": "list", "list": list_name}]})

            def done(state):
                return state.get("list") == list_name and state["state"] == "loaded" and any(
                    item["id"] == ident and item["following"] is True for item in state["items"])
        # The last request: its reply is read, then nothing more is sent.
        reply = conn.result("follow", {"kind": kind, "id": ident})
        assert reply["following"] is True
        settled_within(conn, done, SETTLE_S)
    finally:
        if sock is not None:
            rpcio.close_socket(sock)


def test_a_state_change_is_written_before_the_reply_of_the_same_turn(spawn, runtime):
    """The local backend settles a follow in the iteration that answers it: the
    notification must come first, so a peer that stops reading at the reply has it."""
    server = spawn("--state-dir", runtime.root / "sd", framing=rpcio.LSP)
    conn = server.conn
    conn.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "kaws"}]})
    time.sleep(0.2)
    conn.stash.clear()
    while conn.reader.take_frame(conn.framing, 0.1) is not None:
        pass
    conn.send(conn.request_obj("follow", {"kind": "artist", "id": "kaws"}, id=99))
    first = conn.recv()
    second = conn.recv()
    assert first.get("method") == "stateChanged" and first["params"]["state"]["confirmed"] is True, (first, second)
    assert second.get("id") == 99 and second["result"]["version"] < first["params"]["state"]["version"], second
