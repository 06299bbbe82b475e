"""Where the Python client behaves as the Node and Neovim clients do (README,
Clients): the snapshot starts the stream, client-made error codes sit outside
JSON-RPC's reserved range. Against the real binary."""

import asyncio
import logging
from pathlib import Path

import pytest

import netmodel_client
import netmodel_client as nmc
import netmodel_client.aio
from netmodel_client import AsyncClient, ConnectionLost, EntityState
from test_client import T, connect_when_ready, run, spawn
from test_client import server  # noqa: F401 (a fixture)

pytestmark = pytest.mark.timeout(60)


def test_the_snapshot_reaches_callbacks_and_iterators_first(binary, env, state_dir):
    async def main():
        async with await spawn(binary, env, state_dir) as c:
            await c.follow("artist", "snap", await_=True)
            sub = await c.subscribe("entity:artist/snap")
            seen = []
            sub.on_change(seen.append)  # right after the answer: misses nothing
            first = await asyncio.wait_for(sub.__anext__(), T)
            assert isinstance(first, EntityState) and first == sub.snapshot[0]
            assert first.following is True and first.version >= 1
            for _ in range(100):
                if seen:
                    break
                await asyncio.sleep(0.01)
            assert seen[:1] == [sub.snapshot[0]]

    run(main())


def test_client_error_codes_are_outside_the_reserved_range():
    codes = [nmc.CONNECTION_LOST, nmc.TIMEOUT, nmc.NOT_CONNECTED, nmc.CANCELLED]
    assert codes == [-31999, -31998, -31997, -31996]
    assert all(not (-32768 <= c <= -32000) for c in codes)
    assert ConnectionLost("x").code == nmc.CONNECTION_LOST


def test_a_failed_spawn_says_why(server, binary, env, state_dir, capfd):
    """The state folder is another server's: the spawned one exits at once. The error
    says it never started, with its exit code and last stderr lines."""

    async def main():
        server.start()  # owns state_dir
        await (await connect_when_ready(server.path)).close()
        c = await AsyncClient.spawn(binary, "--state-dir", state_dir, env=env, timeout=T)
        try:
            with pytest.raises(ConnectionLost) as info:
                await c.stats()
        finally:
            await c.close()
        return str(info.value)

    message = run(main())
    assert "never started" in message and "exit code 1" in message, message
    assert "in use" in message, message
    assert "in use" in capfd.readouterr().err  # its logs still reach our stderr


def test_the_logger_is_documented():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert 'logging.getLogger("netmodel_client")' in readme
    assert logging.getLogger("netmodel_client") is netmodel_client.aio.log
