"""connect_or_spawn (issue 26, item 13): the server running for the user when there is
one, else one started that listens on the socket too. Against the real binary."""

import asyncio
import os
import socket
import subprocess

import pytest

from netmodel_client import AsyncClient, Client, ConnectionLost, default_socket_path
from test_client import T, next_matching, pid_alive, run
from test_client import server  # noqa: F401 (a fixture)

pytestmark = pytest.mark.timeout(60)


def test_connects_to_a_server_already_running(server):  # noqa: F811
    async def main():
        server.start()
        # What the README example did: a server of its own, refused the user's state folder.
        with pytest.raises(ConnectionLost, match="never started"):
            c = await AsyncClient.spawn(
                None, "--state-dir", server.cmd[-1], env=server.env, stderr=subprocess.PIPE, timeout=T
            )
            try:
                await c.stats()
            finally:
                await c.close()
        async with await AsyncClient.connect_or_spawn(server.path, timeout=T) as nm:
            assert not nm.spawned and nm.process is None
            state = await nm.follow("artist", "banksy", await_=True)
            assert state.following is True and state.confirmed is True
            assert (await nm.stats())["connections"]["list"][0]["transport"] == "socket"
        assert server.proc.poll() is None  # the user's server goes on

    run(main())


def test_spawns_a_server_sharing_the_socket_when_none_runs(binary, env, state_dir):
    async def main():
        path = default_socket_path()
        assert not os.path.exists(path)
        args = ("--state-dir", state_dir)
        async with await AsyncClient.connect_or_spawn(binary=binary, args=args, stderr=subprocess.DEVNULL, timeout=T) as first:
            assert first.spawned and first.pid is not None and pid_alive(first.pid)
            # A second one finds the first's server on the socket rather than start another.
            async with await AsyncClient.connect_or_spawn(binary=binary, args=args, timeout=T) as second:
                assert not second.spawned
                await second.follow("artist", "kaws", await_=True)
                assert (await first.get_follow_state("artist", "kaws")).following is True
            pid = first.pid
        assert not pid_alive(pid)  # a spawned server ends with its client

    run(main())


def test_spawns_over_a_stale_socket_file(binary, env, state_dir):
    async def main():
        path = default_socket_path()
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with socket.socket(socket.AF_UNIX) as dead:  # a crashed server's file: nobody listens
            dead.bind(path)
        async with await AsyncClient.connect_or_spawn(
            binary=binary, args=("--state-dir", state_dir), stderr=subprocess.DEVNULL, timeout=T
        ) as nm:
            assert nm.spawned
            assert (await nm.follow("artist", "banksy", await_=True)).confirmed is True

    run(main())


def test_a_server_that_cannot_start_says_why(binary, env, state_dir):
    async def main():
        with pytest.raises(ConnectionLost, match=r"never started \(exit code"):
            await AsyncClient.connect_or_spawn(
                binary=binary, args=("--state-dir", state_dir, "--no-such-option"), stderr=subprocess.PIPE, timeout=T
            )

    run(main())


def test_blocking_client_both_ways(binary, env, state_dir):
    args = ("--state-dir", state_dir)
    with Client.connect_or_spawn(binary=binary, args=args, stderr=subprocess.DEVNULL, timeout=T) as first:
        assert first.spawned
        with Client.connect_or_spawn(binary=binary, args=args, timeout=T) as second:
            assert not second.spawned
            assert second.follow("gene", "g1", await_=True).confirmed is True
        assert first.get_follow_state("gene", "g1").following is True


def test_an_unusable_binary_is_an_error_not_a_hang(env, state_dir):
    async def main():
        with pytest.raises(FileNotFoundError):
            await asyncio.wait_for(
                AsyncClient.connect_or_spawn(binary="/nonexistent/netmodel", args=("--state-dir", state_dir)), T
            )

    run(main())


def test_closing_a_socket_session_leaves_a_shared_daemon_running(server):  # noqa: F811
    """A host that closes its socket connection ends its own session, not the daemon
    others share (issue 27 §6): another client goes on being served and told of changes."""

    async def main():
        server.start()
        other = await AsyncClient.connect(server.path, timeout=T)
        try:
            sub = await other.subscribe("entity:artist/kaws")
            for lsp_style in (False, True):
                leaving = await AsyncClient.connect(server.path, timeout=T)
                await leaving.follow("artist", "banksy", await_=True)
                if lsp_style:  # LSP's way out, as a host may say it: it ends that session only
                    assert await leaving.call("shutdown") is None
                    await leaving.notify("exit")
                await leaving.close()
            assert server.proc.poll() is None, "closing a socket client stopped the daemon"
            assert (await other.stats())["connections"]["open"] == 1
            await other.follow("artist", "kaws")
            await next_matching(sub, lambda s: s.following is True)
        finally:
            await other.close()
        assert server.proc.poll() is None

    run(main())
