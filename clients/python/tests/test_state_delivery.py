"""No lost or stale state: async callbacks in order, abandoned subscriptions ended,
configure replayed after a reconnect (issue 18, items 6-8). Against the real binary."""

import asyncio
import gc
import signal
import time

import pytest

from netmodel_client import AsyncClient, EntityState, StateError
from test_client import FAST, T, next_matching, run, spawn, watch_connection
from test_client import server  # noqa: F401 (a fixture)

pytestmark = pytest.mark.timeout(60)


async def eventually(pred, what):
    deadline = time.monotonic() + T
    while not await pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def test_async_callbacks_run_one_at_a_time_newest_last(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir) as c:
            sub = await c.subscribe("entity:artist/a")
            calls, running, most, drawn = 0, 0, 0, None

            async def draw(state):
                nonlocal calls, running, most, drawn
                calls += 1
                running += 1
                most = max(most, running)
                await asyncio.sleep(0.3 if calls == 1 else 0.005)  # the first one is slow
                drawn = state
                running -= 1

            sub.on_change(draw)
            for i in range(60):
                await c.set_follow_state("artist", "a", i % 2 == 0)
            await c.follow("artist", "a", await_=True)

            async def settled():
                newest = sub.state("artist", "a")
                return running == 0 and drawn is not None and drawn.version == newest.version

            await eventually(settled, "the newest state drawn last")
            assert most == 1, f"{most} callbacks ran at once"
            assert calls < 60, f"{calls} calls: waiting states were not coalesced"

    run(main())


def test_abandoned_subscribe_is_unsubscribed(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir) as c:
            task = asyncio.ensure_future(c.subscribe("entity:artist/a"))
            await asyncio.sleep(0)  # sent; its answer not read yet
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

            async def none_left():
                return (await c.stats())["subscriptions"] == 0

            await eventually(none_left, "the server to end the abandoned subscription")

            async with await c.subscribe("entity:artist/b") as sub:
                assert (await c.stats())["subscriptions"] == 1
            assert sub.closed
            await eventually(none_left, "`async with` to unsubscribe")

    run(main())


def test_reconnect_replays_configure(server):  # noqa: F811
    async def main():
        server.start()
        c = await AsyncClient.connect(server.path, timeout=T, reconnect=FAST)
        try:
            lost, back = watch_connection(c)
            await c.configure(environment="staging")
            server.stop(signal.SIGKILL)
            await asyncio.wait_for(lost.wait(), T)
            server.start()
            await asyncio.wait_for(back.wait(), T)
            assert (await c.configure())["environment"] == "staging"
        finally:
            await c.close()

    run(main())


def test_subscription_nobody_holds_is_unsubscribed(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir) as c:
            seen = []
            (await c.subscribe("entity:artist/kept")).on_change(seen.append)  # used by its callback
            await c.subscribe("entity:artist/dropped")  # result dropped at once
            gc.collect()

            async def one_left():
                return (await c.stats())["subscriptions"] == 1

            await eventually(one_left, "the dropped subscription's finalizer to unsubscribe it")
            await c.follow("artist", "kept", await_=True)

            async def told():
                return any(s.confirmed for s in seen)

            await eventually(told, "the kept subscription's callback")

    run(main())


def test_reconnect_to_the_same_server_keeps_versions(server):  # noqa: F811
    """The connection drops but the server lives on (same instance): the versions held
    stay, so the snapshot does not deliver what was seen already."""

    async def main():
        server.start()
        c = await AsyncClient.connect(server.path, timeout=T, reconnect=FAST)
        try:
            lost, back = watch_connection(c)
            sub = await c.subscribe("entity:artist/same")
            instance = sub.instance
            assert instance and c.instance == instance
            seen = []
            sub.on_change(seen.append)
            await c.follow("artist", "same", await_=True)
            await eventually(_async(lambda: any(s.confirmed for s in seen)), "the follow")
            c._writer.transport.abort()  # this side drops; the server lives on
            await asyncio.wait_for(lost.wait(), T)
            await asyncio.wait_for(back.wait(), T)
            assert sub.instance == instance
            await c.unfollow("artist", "same", await_=True)
            await eventually(_async(lambda: seen[-1].confirmed is False), "the unfollow")
            versions = [s.version for s in seen]
            assert versions == sorted(set(versions)), f"a state delivered twice: {versions}"
        finally:
            await c.close()

    run(main())


def test_restart_on_another_state_folder_takes_lower_versions(server, tmp_path):  # noqa: F811
    """A restarted server that counts lower (another state folder, another instance):
    its states are taken although the client holds higher versions."""

    async def main():
        server.start()
        c = await AsyncClient.connect(server.path, timeout=T, reconnect=FAST)
        try:
            lost, back = watch_connection(c)
            sub = await c.subscribe("entity:artist/low")
            for _ in range(3):
                held = await c.follow("artist", "low", await_=True)
                held = await c.unfollow("artist", "low", await_=True)
            server.stop(signal.SIGKILL)
            await asyncio.wait_for(lost.wait(), T)
            server.cmd[server.cmd.index("--state-dir") + 1] = str(tmp_path / "other-state")
            server.start()
            await asyncio.wait_for(back.wait(), T)
            async with await AsyncClient.connect(server.path, timeout=T, reconnect=False) as other:
                await other.follow("artist", "low", await_=True)
            s = await next_matching(sub, lambda s: s.following is True and s.confirmed is True)
            assert s.version < held.version
        finally:
            await c.close()

    run(main())


def _async(pred):
    async def f():
        return pred()

    return f


def test_on_change_added_right_after_subscribe_sees_the_states_of_its_answer(binary, env, state_dir):
    """States the server sends right after the subscribe answer (a list's load) are read
    before the awaiting code runs; a callback it adds at once still gets them."""

    async def main():
        async with await spawn(binary, env, state_dir) as c:
            sub = await c.subscribe("list:following/artist")
            seen = []
            sub.on_change(seen.append)
            await c.fetch_list("following/artist")
            await eventually(_async(lambda: any(s.state == "loaded" for s in seen)), "the loaded list on the callback")

    run(main())


def test_needs_credentials(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir, "--simulate", "failure=1,status=401") as c:
            sub = await c.subscribe("entity:artist/locked")
            await c.follow("artist", "locked")
            s = await next_matching(sub, lambda s: s.needs_credentials and "follow" in s.error.message)
            assert s.following is True and s.error.code == -32003  # kept, waiting
            assert (await c.stats())["waitingForCredentials"] == 1

    run(main())
    refused = EntityState("artist", "x", False, False, False, StateError(-32003, "no"), version=3)
    assert not refused.needs_credentials  # rolled back (retry.onUnauthorized "rollback"): not waiting


def test_sync_on_change_right_after_subscribe_gets_the_snapshot(binary, env, state_dir):
    """Issue 26, item 11: the blocking client's on_change runs on the loop after the
    subscribe answer was handed over; its first calls are still the current states."""
    import subprocess

    from netmodel_client import Client

    with Client.spawn(binary, "--state-dir", state_dir, env=env, stderr=subprocess.DEVNULL, timeout=T) as c:
        c.follow("artist", "banksy", await_=True)
        sub = c.subscribe("entity:artist/banksy")
        seen = []
        sub.on_change(seen.append)
        c.stats()  # a round trip through the loop, queued after on_change: it has run
        assert [(s.id, s.following) for s in seen] == [("banksy", True)]

        c.unfollow("artist", "banksy", await_=True)
        while sub.get(timeout=T).confirmed is not False:  # the same states, iterated
            pass
        c.stats()
        assert seen[-1].following is False and seen[-1].confirmed is False
        assert [s.version for s in seen] == sorted(set(s.version for s in seen))  # none twice


def test_sync_answers_once_every_intent_settled(binary, env, state_dir):
    """``sync`` after follows made without await: each listed with its outcome, and the
    subscriber saw each confirmation before the answer."""

    async def main():
        async with await spawn(binary, env, state_dir, "--simulate", "latency=200,failure=0") as c:
            sub = await c.subscribe("entity:artist")
            await c.follow("artist", "banksy")
            await c.follow("artist", "kaws")
            result = await c.sync(5000)
            assert [(s["id"], s["outcome"]) for s in result["settled"]] == [("banksy", "confirmed"), ("kaws", "confirmed")]
            assert result["waiting"] == []
            # (That they come before the answer on the wire: Tests/interop/test_sync.py.)
            await eventually(
                _async(lambda: all(getattr(sub.state("artist", i), "confirmed", None) is True for i in ("banksy", "kaws"))),
                "both confirmations on the subscription")
            assert await c.sync() == {"settled": [], "waiting": []}

    run(main())
