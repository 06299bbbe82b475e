"""Where the Python client behaves as the Node and Neovim clients do (README,
Clients): the snapshot starts the stream, client-made error codes sit outside
JSON-RPC's reserved range. Against the real binary."""

import asyncio

import pytest

import netmodel_client as nmc
from netmodel_client import ConnectionLost, EntityState
from test_client import T, run, spawn

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
