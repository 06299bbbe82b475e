"""Nothing hangs: calls from callbacks, calls racing close(), requests the server
cannot read (issue 18, items 1-3). Against the real binary."""

import asyncio
import queue
import subprocess
import threading
import time

import pytest

from netmodel_client import Client, ConnectionLost, ParseError
from test_client import T, run, spawn

pytestmark = pytest.mark.timeout(60)


def blocking(binary, env, state_dir, **kw):
    return Client.spawn(binary, "--state-dir", state_dir, env=env, stderr=subprocess.DEVNULL, **kw)


def test_call_from_on_change_raises_at_once(binary, env, state_dir):
    with blocking(binary, env, state_dir, timeout=T) as c:
        sub = c.subscribe("entity:artist/a")
        outcome: "queue.Queue[BaseException]" = queue.Queue()

        def on_change(state):
            started = time.monotonic()
            try:
                c.stats()
            except BaseException as e:
                outcome.put(e)
            outcome.put(time.monotonic() - started)

        sub.on_change(on_change)
        c.follow("artist", "a")
        error, took = outcome.get(timeout=T * 2), outcome.get(timeout=T * 2)
        assert isinstance(error, RuntimeError) and "on_change" in str(error), repr(error)
        assert took < 1.0
        assert c.stats()["requests"]["total"] > 0  # the loop is free: other threads go on


def test_calls_racing_close_fail_with_connection_error(binary, env, state_dir):
    for round in range(3):  # the race hides in some rounds
        c = blocking(binary, env, state_dir)  # no timeout: a lost call would hang for good
        c.stats()
        outcomes: "queue.Queue[object]" = queue.Queue()

        def worker():
            try:
                while True:
                    c.get_follow_state("artist", "x")
            except BaseException as e:
                outcomes.put(e)

        threads = [threading.Thread(target=worker, daemon=True) for _ in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.05)
        c.close()
        for t in threads:
            t.join(5)
        stuck = sum(t.is_alive() for t in threads)
        assert stuck == 0, f"round {round}: {stuck} of 8 threads still blocked after close()"
        errors = [outcomes.get_nowait() for _ in threads]
        assert all(isinstance(e, ConnectionError) for e in errors), errors
        with pytest.raises(ConnectionError):
            c.stats()


def test_sync_get_timeout_never_drops_a_state(binary, env, state_dir):
    """``get(timeout)`` that expires just as a state is dequeued must keep it."""
    names = [f"a{i}" for i in range(300)]
    with blocking(binary, env, state_dir, timeout=T) as c:
        sub = c.subscribe("entity:artist")
        writer = threading.Thread(target=lambda: [c.follow("artist", n) for n in names], daemon=True)
        writer.start()
        seen = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                s = sub.get(timeout=0.0005)  # expires all the time, often mid-delivery
                seen[s.key] = s.version
            except TimeoutError:
                if not writer.is_alive() and all(
                    (st.following and st.confirmed) for st in sub.states.values()
                ) and len(sub.states) == len(names):
                    break
        while True:  # whatever is still queued
            try:
                s = sub.get(timeout=0.5)
                seen[s.key] = s.version
            except TimeoutError:
                break
        newest = {k: s.version for k, s in sub.states.items()}
        missing = {k: (seen.get(k), v) for k, v in newest.items() if seen.get(k) != v}
        assert len(newest) == len(names)
        assert not missing, f"{len(missing)} entities never showed their newest state: {list(missing.items())[:5]}"


def test_unreadable_params_raise_at_once_and_id_less_errors_fail_pending(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir, "--simulate", "latency=3000") as c:
            started = time.monotonic()
            with pytest.raises(ValueError, match="surrogate"):
                await c.follow("artist", "a\udc80")  # e.g. os.fsdecode of a byte that is not UTF-8
            with pytest.raises(ValueError, match="not JSON"):
                await c.call("stats", {"x": float("nan")})
            assert time.monotonic() - started < 1.0
            assert (await c.stats())["requests"]["total"] >= 1  # still usable

            # A line the server cannot read gets an error with id null: it may be any
            # pending request's, so each of them fails rather than waits for good.
            pending = asyncio.ensure_future(c.follow("artist", "b", await_=True))
            await asyncio.sleep(0.2)
            c._writer.write(b'{"jsonrpc":"2.0","id":\n')
            with pytest.raises(ParseError):
                await asyncio.wait_for(pending, 2.0)
            assert (await c.stats())["requests"]["total"] >= 2

    run(main())


def test_every_method_takes_a_timeout(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir, "--simulate", "latency=3000") as c:
            c.timeout = None  # the call's own timeout bounds it
            slow = [
                c.follow("artist", "a", await_=True, timeout=0.2),
                c.unfollow("artist", "a", await_=True, timeout=0.2),
                c.set_follow_state("artist", "a", True, await_=True, timeout=0.2),
                c.get_follow_state("artist", "b", refresh=True, timeout=0.2),
                c.get_entity("artist", "c", refresh=True, timeout=0.2),
                c.fetch_list("following/artist", page="refresh", timeout=0.2),
            ]
            for call in slow:
                started = time.monotonic()
                with pytest.raises(asyncio.TimeoutError):
                    await call
                assert time.monotonic() - started < 1.5
            assert (await c.stats(timeout=5))["errors"]["byCode"].get("-32800", 0) >= 1  # cancelled on the server
            for quick in (c.initialize(timeout=5), c.configure(timeout=5), c.set_interface_state([], "none", timeout=5)):
                await quick
            sub = await c.subscribe("entity:artist/z", timeout=5)
            await c.unsubscribe(sub, timeout=5)

    run(main())

    with Client.spawn(binary, "--state-dir", state_dir, "--simulate", "latency=3000", env=env,
                      stderr=subprocess.DEVNULL) as c:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            c.follow("artist", "s", await_=True, timeout=0.2)
        assert time.monotonic() - started < 1.5
        assert c.stats(timeout=5)


def test_cancelling_a_task_cancels_the_request_on_the_server(binary, env, state_dir):
    """docs/clients.md: cancelling a request sends $/cancelRequest and answers at once."""

    async def main():
        async with await spawn(binary, env, state_dir, "--simulate", "latency=3000") as c:
            c.timeout = None
            before = (await c.stats(timeout=5))["errors"]["byCode"].get("-32800", 0)
            task = asyncio.ensure_future(c.get_follow_state("artist", "slow", refresh=True))
            await asyncio.sleep(0)  # sent
            started = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert time.monotonic() - started < 1.0  # not after the backend's 3 s
            after = (await c.stats(timeout=5))["errors"]["byCode"].get("-32800", 0)
            assert after == before + 1  # the server answered it -32800, cancelled

    run(main())


def test_a_callback_that_raises_breaks_nothing(binary, env, state_dir, caplog):
    """docs/clients.md: a callback that throws is logged, the others still run, and the
    client goes on."""

    async def main():
        async with await spawn(binary, env, state_dir) as c:
            sub = await c.subscribe("entity:artist/banksy")
            seen = []

            def boom(state):
                raise RuntimeError("a bug in the host's callback")

            sub.on_change(boom)
            sub.on_change(seen.append)
            c.on_disconnect(boom)
            await c.follow("artist", "banksy", await_=True)
            deadline = time.monotonic() + T
            while not any(s.confirmed for s in seen):
                assert time.monotonic() < deadline, seen
                await asyncio.sleep(0.02)
            assert (await c.get_follow_state("artist", "banksy")).following is True  # still working

    with caplog.at_level("WARNING", logger="netmodel_client"):
        run(main())
    assert any("a bug in the host's callback" in (r.getMessage() + str(r.exc_info)) for r in caplog.records), caplog.text
