"""Tests against the real netmodel binary (NETMODEL_BIN or .build/debug/netmodel)."""

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from netmodel_client import (
    AsyncClient,
    BackendRejected,
    Client,
    ConnectionLost,
    EntityState,
    InvalidParams,
    Reconnect,
    RPCError,
    default_socket_path,
    topic,
)

pytestmark = pytest.mark.timeout(60)

T = 10.0  # bound for every single await


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 45))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie would still answer kill(0); make sure it is not one.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


async def spawn(binary, env, state_dir, *args):
    return await AsyncClient.spawn(
        binary, "--state-dir", state_dir, *args, env=env, stderr=subprocess.DEVNULL, timeout=T
    )


async def connect_when_ready(path=None):
    deadline = time.monotonic() + T
    while True:
        try:
            return await AsyncClient.connect(path, timeout=T)
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def next_matching(sub, pred):
    async def loop():
        async for state in sub:
            if pred(state):
                return state
        raise AssertionError("subscription ended")

    return await asyncio.wait_for(loop(), T)


def test_entity_state_from_json():
    s = EntityState.from_json(
        {"kind": "artist", "id": "b", "following": True, "confirmed": None, "pending": True,
         "error": {"code": -32002, "message": "no", "retryable": False}, "attributes": None, "version": 7}
    )
    assert (s.kind, s.id, s.following, s.confirmed, s.pending, s.version) == ("artist", "b", True, None, True, 7)
    assert s.error.code == -32002 and s.error.retryable is False
    assert EntityState.from_json(s.to_json()) == s
    with pytest.raises(Exception):
        s.following = False  # frozen
    assert topic("entity:artist/banksy") == {"type": "entity", "kind": "artist", "id": "banksy"}
    assert topic("entity:gene") == {"type": "entity", "kind": "gene"}
    assert topic("entity") == {"type": "entity"}


def test_entity_state_requested_only_when_true():
    wire = {"kind": "account", "id": "7", "following": False, "confirmed": False, "pending": False,
            "requested": True, "error": None, "attributes": None, "version": 3}
    s = EntityState.from_json(wire)
    assert s.requested is True and s.confirmed is False
    assert s.to_json() == wire
    plain = EntityState.from_json({**wire, "requested": None})
    assert plain.requested is False and "requested" not in plain.to_json()


def test_a_warm_starts_stale_state_says_its_age_and_survives_a_round_trip():
    wire = {"kind": "artist", "id": "banksy", "following": True, "confirmed": True, "pending": False,
            "error": None, "attributes": None, "version": 9, "stale": True, "ageMs": 61000}
    s = EntityState.from_json(wire)
    assert s.stale is True and s.age_ms == 61000
    assert s.to_json() == wire
    fresh = EntityState.from_json({k: v for k, v in wire.items() if k not in ("stale", "ageMs")})
    assert fresh.stale is False and fresh.age_ms is None and "stale" not in fresh.to_json()


def test_a_restarted_server_shows_the_last_states_stale_then_fresh(binary, env, state_dir):
    """A warm start through the client: the first read after a restart is the last
    run's state, stale; the read behind it arrives as a fresh state."""
    with Client.spawn(binary, "--state-dir", state_dir, env=env, timeout=T) as c:
        assert c.follow("artist", "warm", await_=True).confirmed is True
    with Client.spawn(binary, "--state-dir", state_dir, env=env, timeout=T) as c:
        first = c.get_follow_state("artist", "warm")
        assert first.stale and first.age_ms is not None and first.confirmed is True
        again = c.get_follow_state("artist", "warm")
        assert not again.stale and again.version > first.version


def test_default_socket_path(monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1")
    assert default_socket_path() == "/run/user/1/netmodel/netmodel.sock"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert default_socket_path() == f"/tmp/netmodel-{os.getuid()}/netmodel.sock"


def test_spawn_follow_await_and_state(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir) as c:
            info = await c.initialize()
            assert info["serverInfo"]["name"] == "netmodel"
            s = await c.follow("artist", "banksy", await_=True)
            assert isinstance(s, EntityState)
            assert (s.kind, s.id, s.following, s.confirmed, s.pending, s.error) == (
                "artist", "banksy", True, True, False, None)
            g = await c.get_follow_state("artist", "banksy")
            assert g.following is True and g.confirmed is True and g.version >= s.version
            u = await c.unfollow("artist", "banksy", await_=True)
            assert u.following is False and u.confirmed is False and u.version > s.version
            t = await c.set_follow_state("artist", "banksy", True)  # optimistic reply
            assert t.following is True
            r = await c.get_follow_state("artist", "banksy", refresh=True, max_age_ms=0)
            assert r.following is True
            st = await c.stats()
            assert st["requests"]["byMethod"]["follow"] == 1
            assert (await c.configure(auth_token=None))["environment"]
            assert await c.call("stats", {}) is not None
            seen = await c.inspect(["connections", "holds"], kind="artist", limit=1)
            assert set(seen) == {"instance", "uptimeMs", "now", "limit", "connections", "holds"}
            assert seen["limit"] == 1 and seen["connections"]["total"] == 1 and seen["holds"] is None

    run(main())


def test_subscription_on_second_client_over_socket(binary, env, state_dir):
    async def main():
        first = await spawn(binary, env, state_dir, "--socket")
        try:
            await first.stats()  # the server is up
            second = await connect_when_ready()
            try:
                sub = await second.subscribe([{"type": "entity", "kind": "artist", "id": "banksy"}])
                assert sub.name
                assert [(s.kind, s.id) for s in sub.snapshot] == [("artist", "banksy")]
                assert sub.snapshot[0].following is None  # never fetched yet

                seen = []
                followed = asyncio.Event()

                def on_change(state):
                    seen.append(state)
                    if state.following and state.confirmed:
                        followed.set()

                sub.on_change(on_change)

                # Wait for the subscription's own fetch, so the follow is a change.
                await next_matching(sub, lambda s: s.confirmed is False)
                await first.follow("artist", "banksy")
                s = await next_matching(sub, lambda s: s.following is True and s.confirmed is True)
                assert s.kind == "artist" and s.id == "banksy" and not s.pending
                await asyncio.wait_for(followed.wait(), T)
                versions = [x.version for x in seen]
                assert versions == sorted(versions) and len(set(versions)) == len(versions)
                assert sub.state("artist", "banksy").version == s.version

                await sub.unsubscribe()
                assert [x async for x in sub] == []  # iteration ends after unsubscribe
                with pytest.raises(InvalidParams):
                    await second.unsubscribe(sub.name)  # no longer a subscription
            finally:
                await second.close()
        finally:
            await first.close()
        assert first.process.returncode == 0

    run(main())


def test_error_bad_kind_is_invalid_params(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir) as c:
            with pytest.raises(RPCError) as ei:
                await c.follow("Artist", "x")
            e = ei.value
            assert isinstance(e, InvalidParams)
            assert e.code == -32602 and e.data["path"] == "/kind" and e.message
            with pytest.raises(RPCError) as ei:
                await c.call("noSuchMethod")
            assert ei.value.code == -32601

    run(main())


def test_error_backend_rejected_on_await(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir, "--simulate", "failure=1,status=400") as c:
            with pytest.raises(BackendRejected) as ei:
                await c.follow("artist", "banksy", await_=True)
            e = ei.value
            assert e.code == -32002 and e.data["status"] == 400 and e.retryable is False
            assert e.state.following is None and e.state.pending is False  # rolled back
            assert e.state.error.code == -32002

    run(main())


def test_rollback_seen_by_subscriber(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir, "--simulate", "latency=50,failure=1,status=422") as c:
            sub = await c.subscribe("entity:artist/banksy")
            optimistic = await c.follow("artist", "banksy")
            assert optimistic.following is True and optimistic.pending is True
            s = await next_matching(sub, lambda s: s.error is not None and not s.pending and s.version > optimistic.version)
            assert s.following is not True and s.error.code == -32002

    run(main())


def test_close_leaves_no_child(binary, env, state_dir):
    async def main():
        c = await spawn(binary, env, state_dir)
        await c.follow("artist", "a")
        pid = c.pid
        assert pid_alive(pid)
        await c.close()
        assert c.process.returncode == 0  # shutdown + exit
        assert not pid_alive(pid)
        with pytest.raises(ConnectionError):
            await c.stats()
        await c.close()  # idempotent

    run(main())


def test_lost_connection_fails_pending_calls(binary, env, state_dir):
    async def main():
        c = await spawn(binary, env, state_dir, "--simulate", "latency=5000")
        try:
            sub = await c.subscribe("entity:artist/x")
            pending = asyncio.ensure_future(c.follow("artist", "x", await_=True))
            await asyncio.sleep(0.2)
            c.process.kill()
            with pytest.raises(ConnectionLost):
                await asyncio.wait_for(pending, T)
            with pytest.raises(ConnectionLost):  # after the states already received
                await asyncio.wait_for(next_matching(sub, lambda s: False), T)
            with pytest.raises(ConnectionLost):
                await c.stats()
            assert not c.reconnecting  # a spawned client never reconnects
        finally:
            await c.close()
        assert not pid_alive(c.pid)

    run(main())


def test_blocking_client(binary, env, state_dir):
    with Client.spawn(binary, "--state-dir", state_dir, "--socket", env=env,
                      stderr=subprocess.DEVNULL, timeout=T) as c:
        s = c.follow("gene", "g1", await_=True)
        assert s.following is True and s.confirmed is True and not s.pending
        assert c.sync(2000) == {"settled": [], "waiting": []}, "settled already: nothing to wait for"
        g = c.get_follow_state("gene", "g1")
        assert g.following is True and g.version == s.version
        with pytest.raises(InvalidParams):
            c.get_follow_state("gene", "")
        pid = c.pid

        # A second, blocking client on the socket sees the first one's changes.
        deadline = time.monotonic() + T
        while not os.path.exists(default_socket_path()) and time.monotonic() < deadline:
            time.sleep(0.05)
        with Client.connect(timeout=T) as other:
            sub = other.subscribe(["entity:gene/g1"])
            assert sub.snapshot[0].following is True
            c.unfollow("gene", "g1")
            s2 = sub.get(timeout=T)
            while s2.confirmed is not False:
                s2 = sub.get(timeout=T)
            assert s2.following is False
            with pytest.raises(TimeoutError):
                sub.get(timeout=0.2)
            sub.unsubscribe()
            with pytest.raises(StopIteration):
                sub.get(timeout=T)
    assert not pid_alive(pid)


def test_close_kills_a_child_that_does_not_answer(binary, env, state_dir):
    import signal

    async def main():
        c = await spawn(binary, env, state_dir)
        await c.stats()
        pid = c.pid
        os.kill(pid, signal.SIGSTOP)  # hung: answers nothing, ignores SIGTERM for now
        await c.close(timeout=0.5)
        assert c.process.returncode == -signal.SIGKILL
        assert not pid_alive(pid)

    run(main())


# -- socket mode: the server restarts -------------------------------------------------

FAST = Reconnect(initial_delay=0.05, max_delay=0.2, max_attempts=None)


class SocketServer:
    """``netmodel serve --socket=PATH --no-stdio``, restartable on one socket and state dir."""

    def __init__(self, binary, env, state_dir):
        self.dir = tempfile.mkdtemp(prefix="nm-")  # short: a socket path holds ~100 bytes
        self.path = os.path.join(self.dir, "run", "netmodel.sock")
        self.cmd = [binary, "serve", f"--socket={self.path}", "--no-stdio", "--state-dir", state_dir]
        self.env = env
        self.proc = None

    def start(self, *args):
        self.proc = subprocess.Popen(self.cmd + list(args), env=self.env,
                                     stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + T
        while True:  # after a SIGKILL the old socket file is still there: connect, not exists()
            with socket.socket(socket.AF_UNIX) as probe:
                try:
                    probe.connect(self.path)
                    return
                except OSError:
                    assert self.proc.poll() is None, "netmodel serve exited"
                    assert time.monotonic() < deadline, "netmodel serve did not listen"
            time.sleep(0.02)

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        self.proc.wait(T)

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def server(binary, env, state_dir):
    s = SocketServer(binary, env, state_dir)
    yield s
    s.cleanup()


def watch_connection(client):
    """Events set when the client's connection drops and when it has reconnected."""
    lost, back = asyncio.Event(), asyncio.Event()
    client.on_disconnect(lambda error: lost.set())
    client.on_reconnect(back.set)
    return lost, back


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_reconnect_after_server_restart(server, sig):
    async def main():
        server.start()
        first = await AsyncClient.connect(server.path, timeout=T, reconnect=FAST)
        try:
            lost, back = watch_connection(first)
            sub = await first.subscribe("entity:artist/banksy")
            instance_before = sub.instance
            await next_matching(sub, lambda s: s.confirmed is False)
            for _ in range(2):  # raise the version, so the new server's versions are lower
                await first.follow("artist", "banksy", await_=True)
                last = await first.unfollow("artist", "banksy", await_=True)
            await next_matching(sub, lambda s: s.version == last.version)

            server.stop(sig)
            await asyncio.wait_for(lost.wait(), T)
            assert not first.connected
            with pytest.raises(ConnectionLost):  # no server now: fails at once
                await first.stats()

            server.start()
            await asyncio.wait_for(back.wait(), T)
            assert first.connected and not first.reconnecting and not sub.closed

            async with await AsyncClient.connect(server.path, timeout=T, reconnect=False) as second:
                await second.follow("artist", "banksy")
            s = await next_matching(sub, lambda s: s.following is True and s.confirmed is True)
            assert s.version > last.version  # versions go on across a restart on one state folder
            assert sub.instance == first.instance and sub.instance not in (None, instance_before)
            assert (await first.get_follow_state("artist", "banksy")).following is True
        finally:
            await first.close()

    run(main())


def test_reconnect_snapshot_catches_up(server):
    """A change made while the client was away arrives with the subscribe snapshot."""

    async def main():
        server.start()
        slow = Reconnect(initial_delay=3.0, max_delay=3.0, max_attempts=None)  # first try after 1.5-3 s
        first = await AsyncClient.connect(server.path, timeout=T, reconnect=slow)
        try:
            lost, back = watch_connection(first)
            sub = await first.subscribe("entity:artist/kahlo")
            await next_matching(sub, lambda s: s.confirmed is False)
            seen = []
            sub.on_change(seen.append)

            server.stop(signal.SIGKILL)
            await asyncio.wait_for(lost.wait(), T)
            server.start()
            async with await AsyncClient.connect(server.path, timeout=T, reconnect=False) as second:
                now = await second.follow("artist", "kahlo", await_=True)  # the new server knows it
            assert not back.is_set(), "reconnected too early to test the snapshot"

            s = await next_matching(sub, lambda s: s.following is True)
            assert back.is_set()
            assert s == now and sub.snapshot == [now] and seen[-1] == now
        finally:
            await first.close()

    run(main())


class Relay:
    """A Unix-socket relay in front of the server's socket, counting what the server
    sends: cut, it drops every connection and stops listening; restored, it listens on
    the same path again. The server process (its instance) stays."""

    def __init__(self, target: str, path: str):
        self.target, self.path = target, path
        self.listener = None
        self.writers = []
        self.from_server = 0

    async def start(self):
        self.listener = await asyncio.start_unix_server(self._serve, path=self.path)

    async def _serve(self, client_reader, client_writer):
        server_reader, server_writer = await asyncio.open_unix_connection(self.target)
        self.writers += [client_writer, server_writer]

        async def pump(reader, writer, counted):
            try:
                while data := await reader.read(1 << 16):
                    if counted:
                        self.from_server += len(data)
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                writer.close()

        await asyncio.gather(pump(client_reader, server_writer, False), pump(server_reader, client_writer, True))

    async def cut(self):
        self.listener.close()
        await self.listener.wait_closed()
        for writer in self.writers:
            writer.close()
        self.writers = []
        os.unlink(self.path)


def test_a_reconnect_to_the_same_server_resumes_with_only_what_changed(server):
    """The connection drops, the server does not: the client subscribes again with
    ``since`` and gets only the states that changed while it was away."""

    async def main():
        server.start()
        relay = Relay(server.path, server.path + ".relay")
        await relay.start()
        first = await AsyncClient.connect(relay.path, timeout=T, reconnect=FAST)
        try:
            lost, back = watch_connection(first)
            names = [f"resume-{n}" for n in range(200)]
            sub = await first.subscribe([f"entity:artist/{n}" for n in names])
            async with await AsyncClient.connect(server.path, timeout=T, reconnect=False) as second:
                await second.call("sync", {})
                await next_matching(sub, lambda s: s.id == names[-1] and s.confirmed is False)
                while len([s for s in sub.states.values() if s.confirmed is False]) < len(names):
                    await asyncio.sleep(0.02)
                full = relay.from_server
                await relay.cut()
                await asyncio.wait_for(lost.wait(), T)
                changed = [await second.follow("artist", n, await_=True) for n in names[:3]]
            relay.from_server = 0
            await relay.start()
            await asyncio.wait_for(back.wait(), T)
            assert sorted(s.id for s in sub.snapshot) == names[:3], "only what changed while away"
            for want in changed:
                assert sub.state("artist", want.id) == want
            assert len(sub.states) == len(names) and sub.state("artist", names[-1]).confirmed is False
            assert relay.from_server < full / 10, (relay.from_server, full)
        finally:
            await first.close()

    run(main())


def test_pending_request_at_drop_raises_connection_lost(server):
    async def main():
        server.start("--simulate", "latency=5000")
        first = await AsyncClient.connect(server.path, timeout=T, reconnect=FAST)
        try:
            lost, back = watch_connection(first)
            pending = asyncio.ensure_future(first.follow("artist", "x", await_=True))
            await asyncio.sleep(0.3)  # accepted; its backend call is under way
            server.stop(signal.SIGKILL)
            with pytest.raises(ConnectionLost, match="'follow'"):
                await asyncio.wait_for(pending, T)

            server.start()
            await asyncio.wait_for(back.wait(), T)
            stats = await first.stats()
            assert "follow" not in stats["requests"]["byMethod"]  # not resent
            deadline = time.monotonic() + T  # the new server's outbox carries it out
            while not (await first.get_follow_state("artist", "x", refresh=True)).confirmed:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
        finally:
            await first.close()

    run(main())


def test_no_reconnect_when_disabled_or_given_up(server):
    assert Reconnect().max_attempts is None  # by default it never gives up (as Node and Neovim)

    async def main():
        server.start()
        off = await AsyncClient.connect(server.path, timeout=T, reconnect=False)
        bounded = await AsyncClient.connect(
            server.path, timeout=T, reconnect=Reconnect(initial_delay=0.01, max_delay=0.02, max_attempts=3))
        try:
            subs = [await c.subscribe("entity:artist/y") for c in (off, bounded)]
            server.stop()
            with pytest.raises(ConnectionLost):
                await next_matching(subs[0], lambda s: False)
            assert not off.reconnecting
            with pytest.raises(ConnectionLost, match="gave up"):
                await next_matching(subs[1], lambda s: False)
            assert not bounded.reconnecting
            server.start()
            await asyncio.sleep(0.3)
            for c in (off, bounded):
                assert not c.connected
                with pytest.raises(ConnectionLost):
                    await c.stats()
        finally:
            await off.close()
            await bounded.close()

    run(main())


def test_blocking_client_reconnects(server):
    server.start()
    back = threading.Event()
    with Client.connect(server.path, timeout=T, reconnect=FAST) as c:
        c.on_reconnect(back.set)
        sub = c.subscribe("entity:gene/g2")
        server.stop()
        server.start()
        assert back.wait(T)
        with Client.connect(server.path, timeout=T, reconnect=False) as other:
            other.follow("gene", "g2")
        s = sub.get(timeout=T)
        while not s.confirmed:
            s = sub.get(timeout=T)
        assert s.following is True


# -- no orphaned server ---------------------------------------------------------------

HOST = """
import asyncio, sys, time
sys.path.insert(0, {client!r})
from netmodel_client import AsyncClient, Client

async def host():
    c = await AsyncClient.spawn({binary!r}, "--state-dir", {state_dir!r})
    await c.stats()
    print(c.pid, flush=True)
    await asyncio.sleep(3600)

if {blocking!r}:
    c = Client.spawn({binary!r}, "--state-dir", {state_dir!r})
    c.stats()
    print(c.pid, flush=True)
    time.sleep(3600)
else:
    asyncio.run(host())
"""


@pytest.mark.parametrize("blocking", [False, True], ids=["AsyncClient", "Client"])
def test_no_orphan_when_host_is_killed(binary, env, state_dir, blocking):
    """The host process dies by SIGKILL (no close()): the server sees EOF on stdin and exits."""
    script = HOST.format(client=str(Path(__file__).resolve().parents[1]), binary=binary,
                         state_dir=state_dir, blocking=blocking)
    host = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    server_pid = None
    try:
        server_pid = int(host.stdout.readline())
        assert pid_alive(server_pid)
        host.kill()
        host.wait(T)
        deadline = time.monotonic() + 5
        while pid_alive(server_pid):
            assert time.monotonic() < deadline, "netmodel outlived its host"
            time.sleep(0.05)
    finally:
        host.kill()
        host.wait()
        if server_pid is not None and pid_alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)
