"""The ledger of outcomes through the Python client, against the real binary:
``get_mutations`` pages it, ``failed_mutations`` is what a client that reconnects tells
its user, and the ``mutations`` topic delivers each outcome as a :class:`Mutation`."""

import asyncio
import subprocess

import pytest

from netmodel_client import AsyncClient, Client, Mutation, RPCError, topic

pytestmark = pytest.mark.timeout(60)

T = 10.0
REFUSING = ("--simulate", "latency=20,failure=1,status=422")


def test_mutations_shorthand_is_the_mutations_topic():
    assert topic("mutations") == {"type": "mutations"}


def test_a_refused_follow_is_in_the_ledger_and_pushed(binary, env, state_dir):
    async def main() -> None:
        async with await AsyncClient.spawn(
            binary, "--state-dir", state_dir, *REFUSING, env=env, stderr=subprocess.DEVNULL, timeout=T
        ) as c:
            sub = await c.subscribe(["mutations"])
            with pytest.raises(RPCError):
                await c.follow("artist", "kaws", await_=True)
            pushed = await asyncio.wait_for(sub.__aiter__().__anext__(), T)
            assert isinstance(pushed, Mutation) and pushed.outcome == "refused" and pushed.failed, pushed
            assert pushed.message.startswith("your follow of artist/kaws failed: simulated HTTP 422"), pushed.message
            page = await c.get_mutations(since=0)
            assert page["entries"] == [pushed] and page["next"] == page["last"] == 1 and not page["truncated"], page
            assert (await c.get_mutations(since=page["next"]))["entries"] == []
            failed, seen = await c.failed_mutations()
            assert failed == [pushed] and seen == 1
            assert (await c.failed_mutations(seen)) == ([], 1), "nothing new since"

    asyncio.run(asyncio.wait_for(main(), 45))


def test_the_blocking_client_reads_the_ledger_after_a_restart(binary, env, state_dir):
    with Client.spawn(binary, "--state-dir", state_dir, *REFUSING, env=env, stderr=subprocess.DEVNULL, timeout=T) as c:
        with pytest.raises(RPCError):
            c.follow("artist", "kaws", await_=True)
    with Client.spawn(binary, "--state-dir", state_dir, env=env, stderr=subprocess.DEVNULL, timeout=T) as c:
        failed, seen = c.failed_mutations()
        assert [(m.kind, m.id, m.outcome) for m in failed] == [("artist", "kaws", "refused")] and seen == 1
        assert c.get_mutations(kind="artist", id="other")["entries"] == []
        with pytest.raises(RPCError) as raised:
            c.get_mutations(limit=0)
        assert raised.value.code == -32602
