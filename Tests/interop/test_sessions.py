"""A shared daemon is shared (issue 27 §6): a socket client's `shutdown` and `exit` end
its own session; `netmodel stop` (`shutdown {daemon: true}` then `exit`, the daemon's
own user only) ends the daemon; the stdio owner's `shutdown` and `exit` still end the
process. The real binary, real sockets, real processes (docs/operations.md "Sessions and stopping
the daemon").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

import rpcio

pytestmark = pytest.mark.timeout(90)

STEP = 30
SHUTTING_DOWN = -32005
INVALID_PARAMS = -32602
NOBODY = 65534


def run(netmodel_bin, runtime, *args, timeout=STEP, prefix=()):
    return subprocess.run(
        [*prefix, str(netmodel_bin), *map(str, args)], env=runtime.env, capture_output=True, timeout=timeout,
        text=True,
    )


def assert_closed(conn, seconds=10):
    assert conn.reader.wait_eof(seconds), f"[{conn.name}] still open; {conn.reader.pending()[:200]!r}"


def test_a_socket_clients_shutdown_and_exit_end_only_its_session(socket_server, connect, runtime):
    server, path = socket_server(None, "--state-dir", str(runtime.root / "state"))
    host, other = connect(path), connect(path)
    other.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "banksy"}]})
    assert host.result("shutdown") is None
    refused = host.call("stats")
    assert refused["error"]["code"] == SHUTTING_DOWN, refused
    # The other client is still served, and still told of changes.
    assert other.result("stats")["connections"]["open"] == 2
    host.notify("exit")
    assert_closed(host)
    assert server.alive(), server.diagnostics()
    assert other.result("follow", {"kind": "artist", "id": "banksy"})["following"] is True
    rpcio.notes_until(other, lambda state: state["following"] is True)
    assert other.result("stats")["connections"]["open"] == 1
    # A new client is served too: the daemon is not stopping.
    assert connect(path).result("getFollowState", {"kind": "artist", "id": "banksy"})["following"] is True


def test_a_socket_clients_exit_without_shutdown_closes_only_its_connection(socket_server, connect, runtime):
    server, path = socket_server(None)
    host, other = connect(path), connect(path)
    host.result("stats")
    host.notify("exit")
    assert_closed(host)
    assert server.alive() and other.result("stats")["connections"]["open"] == 1


def test_netmodel_stop_ends_the_daemon_and_the_others_see_their_connection_end(
    netmodel_bin, socket_server, connect, runtime, spawn
):
    state = runtime.root / "state"
    # Each backend call takes 3 s: an awaited follow is still pending when the stop comes.
    server, path = socket_server(None, "--state-dir", str(state), "--simulate", "latency=3000")
    watcher, waiter = connect(path), connect(path)
    watcher.result("subscribe", {"topics": [{"type": "entity", "kind": "artist"}]})
    waiter.send(waiter.request_obj("follow", {"kind": "artist", "id": "kaws", "await": True}, id="awaited"))
    rpcio.notes_until(watcher, lambda s: s["id"] == "kaws" and s["pending"] is True)  # the intent is accepted

    done = run(netmodel_bin, runtime, "stop")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    # `stop` returns once the process has ended, with exit code 0, its socket gone.
    assert server.wait(5) == 0, server.diagnostics()
    assert not path.exists()
    # The log says who stopped it.
    stops = [line for line in server.stderr().splitlines() if "a client stopped the daemon" in line]
    assert len(stops) == 1 and "connection=" in stops[0], server.stderr()
    # The pending request is answered -32005 with its state; then the connection ends.
    reply = waiter.recv_reply(what="the answer to the awaited follow")
    assert reply["id"] == "awaited" and reply["error"]["code"] == SHUTTING_DOWN, reply
    assert reply["error"]["data"]["state"]["pending"] is True
    assert_closed(waiter)
    assert_closed(watcher)

    # The accepted intent stayed durable: the next start has it and sends it.
    again, _ = socket_server(None, "--state-dir", str(state))
    c = connect(path)
    sub = c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "kaws"}]})
    first = sub["snapshot"][0]
    if first["confirmed"] is not True:
        rpcio.notes_until(c, lambda s: s["confirmed"] is True)
    assert run(netmodel_bin, runtime, "stop").returncode == 0
    assert again.wait(5) == 0


def test_netmodel_stop_without_a_server_says_nothing_to_stop(netmodel_bin, runtime):
    done = run(netmodel_bin, runtime, "stop", "--socket", runtime.root / "none.sock")
    assert done.returncode == 3, done
    assert "nothing to stop" in done.stderr
    assert run(netmodel_bin, runtime, "stop", "extra").returncode == 2
    helped = run(netmodel_bin, runtime, "stop", "--help")
    assert helped.returncode == 0 and "netmodel stop" in helped.stdout


def test_the_stdio_owners_shutdown_and_exit_end_the_daemon(spawn, connect, runtime):
    path = runtime.run / "owned.sock"
    owner = spawn(f"--socket={path}")
    rpcio.wait_for_socket(owner, path)
    client = connect(path)
    client.result("stats")
    assert owner.conn.result("shutdown") is None
    # LSP's meaning for the process that started the server: every client is refused.
    assert client.call("stats")["error"]["code"] == SHUTTING_DOWN
    owner.conn.notify("exit")
    assert owner.wait() == 0, owner.diagnostics()
    assert_closed(client)


def test_the_stdio_owners_exit_without_shutdown_ends_with_1(spawn, runtime):
    path = runtime.run / "owned.sock"
    owner = spawn(f"--socket={path}")
    rpcio.wait_for_socket(owner, path)
    owner.conn.notify("exit")
    assert owner.wait() == 1, owner.diagnostics()


def as_nobody():
    """A prefix that runs a command as uid 65534 that can still reach root's 0700
    folder (CAP_DAC_OVERRIDE kept): what SO_PEERCRED says is then another user."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to run a client as another uid")
    return (setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            "--inh-caps=+dac_override", "--ambient-caps=+dac_override")


def test_another_user_cannot_stop_the_daemon(netmodel_bin, socket_server, connect, runtime):
    server, path = socket_server(None, "--log-level", "info")
    client = connect(path)
    client.result("stats")
    prefix = as_nobody()
    # `netmodel stop` as another user: it refuses to talk to a server of another uid.
    done = run(netmodel_bin, runtime, "stop", prefix=prefix)
    assert done.returncode == 1, done
    assert "refusing to talk" in done.stderr and "nothing was sent" in done.stderr
    # A raw client as another user sending the stop itself: refused at accept, unanswered.
    script = (
        "import json, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "s.connect(sys.argv[1])\n"
        "s.settimeout(20)\n"
        "try:\n"
        "    s.sendall(json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'shutdown',"
        " 'params': {'daemon': True}}).encode() + b'\\n' + b'{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}\\n')\n"
        "    data = s.recv(4096)\n"
        # Closed unserved, before or after the bytes went: a broken pipe, a reset, or the end.
        "except (BrokenPipeError, ConnectionResetError):\n"
        "    data = b''\n"
        "print(json.dumps(data.decode()))\n"
    )
    raw = subprocess.run([*prefix, shutil.which("python3"), "-c", script, str(path)], capture_output=True,
                         timeout=STEP, text=True)
    assert raw.returncode == 0, raw.stderr
    assert json.loads(raw.stdout) == "", f"another user was answered: {raw.stdout}"
    assert server.alive(), server.diagnostics()
    assert client.result("stats")["connections"]["open"] == 1
    assert "refused a connection" in server.stderr() and "from another user" in server.stderr()


def test_a_stop_request_with_a_typo_is_refused_and_changes_nothing(socket_server, connect, runtime):
    server, path = socket_server(None)
    host, other = connect(path), connect(path)
    refused = host.call("shutdown", {"deamon": True})
    assert refused["error"]["code"] == INVALID_PARAMS and refused["error"]["data"]["path"] == "/deamon", refused
    assert host.result("stats") and other.result("stats")
    assert server.alive()
