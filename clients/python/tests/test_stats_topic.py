"""The stats topic through the Python client, against the real binary: the server's
figures arrive as :class:`Stats`, first right after subscribing, then when they change."""

import asyncio
import subprocess

import pytest

from netmodel_client import AsyncClient, EntityState, Stats, topic

pytestmark = pytest.mark.timeout(60)

T = 10.0


def test_stats_shorthand_is_the_stats_topic():
    assert topic("stats") == {"type": "stats"}


def test_stats_arrive_as_stats_and_follow_the_figures(binary, env, state_dir):
    async def main() -> None:
        async with await AsyncClient.spawn(
            binary, "--state-dir", state_dir, env=env, stderr=subprocess.DEVNULL, timeout=T
        ) as c:
            seen: list = []
            sub = await c.subscribe(["stats", "entity:artist/banksy"])
            sub.on_change(seen.append)
            it = sub.__aiter__()

            async def next_stats() -> Stats:
                while True:
                    got = await asyncio.wait_for(it.__anext__(), T)
                    if isinstance(got, Stats):
                        return got

            first = await next_stats()
            assert first["subscriptions"] == 1 and sub.stats is first
            await c.follow("artist", "banksy", await_=True)
            later = await next_stats()
            assert later["backend"]["mutations"] == 1 and later.uptime_ms >= first.uptime_ms + 900
            assert any(isinstance(s, Stats) for s in seen) and any(isinstance(s, EntityState) for s in seen)

    asyncio.run(asyncio.wait_for(main(), 45))
