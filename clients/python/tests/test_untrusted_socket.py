"""The client talks only to a socket that is certainly the user's own (issue 16):
its folder is ours alone, and (Linux) the process listening runs as us. An impostor
server (Tests/interop/impostor.py) stands where netmodel should be and counts what it
gets: nothing, each time. Tests that give folders to `nobody` need root, as in CI."""

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from netmodel_client import AsyncClient, Client, Reconnect, UntrustedSocket

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "Tests" / "interop"))
from impostor import Impostor  # noqa: E402

pytestmark = pytest.mark.timeout(60)

T = 10.0
NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give folders to another user")


@pytest.fixture
def root():
    """A short private folder (a socket path holds ~100 bytes), that nobody may enter."""
    d = Path(tempfile.mkdtemp(prefix="nmt-"))
    os.chmod(d, 0o755)
    yield d
    subprocess.run(["rm", "-rf", str(d)], check=False)


def folder(path: Path, mode: int = 0o700, owner=None) -> Path:
    path.mkdir()
    os.chmod(path, mode)
    if owner is not None:
        os.chown(path, owner, owner)
    return path


def refused(path: Path) -> str:
    async def main():
        await AsyncClient.connect(str(path), timeout=T, reconnect=False)

    with pytest.raises(UntrustedSocket) as caught:
        asyncio.run(asyncio.wait_for(main(), 45))
    return str(caught.value)


def test_a_folder_others_can_write_is_refused(root):
    d = folder(root / "open", 0o777)
    impostor = Impostor(d / "s.sock")
    try:
        message = refused(d / "s.sock")
    finally:
        counts = impostor.finish()
    assert message == (
        f"refusing to connect to {d}/s.sock: its folder {d} can be written by its group and other users "
        f"(mode 0777), who could have put any server there; run `chmod 700 {d}`"
    )
    assert counts["connections"] == 0


def test_a_symlinked_folder_is_refused(root):
    real = folder(root / "real")
    (root / "link").symlink_to(real)
    impostor = Impostor(real / "s.sock")
    try:
        message = refused(root / "link" / "s.sock")
    finally:
        counts = impostor.finish()
    assert f"its folder {root}/link is a symbolic link" in message
    assert counts["connections"] == 0


@needs_root
def test_a_folder_of_another_user_is_refused_by_the_blocking_client_too(root):
    d = folder(root / "theirs", owner=NOBODY)
    impostor = Impostor(d / "s.sock", uid=NOBODY)
    try:
        with pytest.raises(UntrustedSocket) as caught:
            Client.connect(str(d / "s.sock"), timeout=T, reconnect=False)
    finally:
        counts = impostor.finish()
    assert f"its folder {d} belongs to uid 65534, not to this user (uid 0)" in str(caught.value)
    assert counts["connections"] == 0


@needs_root
def test_a_server_of_another_user_gets_nothing(root):
    # Its socket is moved into our own 0700 folder: only its credentials can tell.
    theirs = folder(root / "theirs", owner=NOBODY)
    impostor = Impostor(theirs / "s.sock", uid=NOBODY)
    try:
        sock = folder(root / "ours") / "s.sock"
        os.rename(theirs / "s.sock", sock)
        message = refused(sock)
    finally:
        counts = impostor.finish()
    assert message == (
        f"refusing to talk to {sock}: the process listening there runs as uid 65534, not as this user (uid 0); "
        "nothing was sent"
    )
    assert counts == {"connections": 1, "bytes": 0}


def test_reconnecting_does_not_reach_an_impostor(binary, root, state_dir):
    # Our server goes; someone else's stands in its place in a folder that became
    # writable to all. The reconnect loop must keep away from it.
    d = folder(root / "run")
    sock = d / "s.sock"
    server = subprocess.Popen([binary, "serve", f"--socket={sock}", "--no-stdio", "--state-dir", state_dir],
                              stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    impostor = None

    async def main():
        nonlocal impostor
        deadline = time.monotonic() + T
        while not sock.exists():
            assert time.monotonic() < deadline and server.poll() is None, "netmodel serve did not listen"
            await asyncio.sleep(0.02)
        client = await AsyncClient.connect(str(sock), timeout=T, reconnect=Reconnect(0.05, 0.1, 2.0, None))
        lost = asyncio.Event()
        client.on_disconnect(lambda error: lost.set())
        await client.stats()
        server.terminate()
        await asyncio.wait_for(lost.wait(), T)
        os.chmod(d, 0o777)
        impostor = Impostor(sock)
        await asyncio.sleep(1.0)  # ten tries or so
        assert not client.connected
        await client.close()

    try:
        asyncio.run(asyncio.wait_for(main(), 45))
    finally:
        server.kill()
        server.wait()
        counts = impostor.finish() if impostor else None
    assert counts == {"connections": 0, "bytes": 0}
