"""Tests against the real netmodel binary (NETMODEL_BIN or .build/debug/netmodel)."""

import asyncio
import os
import subprocess
import time

import pytest

from netmodel_client import (
    AsyncClient,
    BackendRejected,
    Client,
    EntityState,
    InvalidParams,
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
            with pytest.raises(ConnectionError):
                await asyncio.wait_for(pending, T)
            with pytest.raises(ConnectionError):  # after the states already received
                await asyncio.wait_for(next_matching(sub, lambda s: False), T)
            with pytest.raises(ConnectionError):
                await c.stats()
        finally:
            await c.close()
        assert not pid_alive(c.pid)

    run(main())


def test_blocking_client(binary, env, state_dir):
    with Client.spawn(binary, "--state-dir", state_dir, "--socket", env=env,
                      stderr=subprocess.DEVNULL, timeout=T) as c:
        s = c.follow("gene", "g1", await_=True)
        assert s.following is True and s.confirmed is True and not s.pending
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
