"""The socket and the state live only in folders that are ours (issue 16, part 2).

Whoever can replace the socket receives what clients send, tokens included; so the
server refuses a folder another user owns or can write, and `netmodel call`/`watch`
refuse a socket served by another uid. Tests that give folders to `nobody` need root
(CI runs them as root, as the peer-uid test in test_compliance.py does).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import rpcio
from impostor import Impostor

pytestmark = pytest.mark.timeout(60)

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give folders to another user")


def refusal(spawn, *args) -> str:
    """Starts `netmodel serve ARGS --no-stdio`; it must exit 1 and say why."""
    server = spawn(*args, "--no-stdio", stdio=False)
    rc = server.wait(timeout=10)
    err = server.stderr()
    assert rc == 1, f"the server must refuse to start (rc={rc})\n{err}"
    return err


def folder(path: Path, mode: int = 0o700, owner: int | None = None) -> Path:
    path.mkdir()
    os.chmod(path, mode)  # after mkdir: the umask must not count
    if owner is not None:
        os.chown(path, owner, owner)
    return path


def test_a_socket_folder_others_can_write_is_refused(spawn, runtime):
    d = folder(runtime.root / "open", 0o777)
    err = refusal(spawn, f"--socket={d}/s.sock")
    assert f"refusing to listen on {d}/s.sock: the socket folder {d} can be written by its group and other users (mode 0777)" in err
    assert f"run `chmod 700 {d}`" in err
    assert not (d / "s.sock").exists()
    assert os.stat(d).st_mode & 0o7777 == 0o777, "an existing folder's mode is never changed"


def test_a_group_writable_socket_folder_is_refused(spawn, runtime):
    d = folder(runtime.root / "group", 0o770)
    err = refusal(spawn, f"--socket={d}/s.sock")
    assert "can be written by its group (mode 0770)" in err and f"chmod 700 {d}" in err


@needs_root
def test_a_socket_folder_of_another_user_is_refused(spawn, runtime):
    d = folder(runtime.root / "theirs", 0o700, owner=NOBODY)
    err = refusal(spawn, f"--socket={d}/s.sock")
    assert f"the socket folder {d} belongs to uid 65534, not to this user (uid 0)" in err
    assert not (d / "s.sock").exists()


@needs_root
def test_the_default_socket_folder_made_first_by_another_user_is_refused(spawn, runtime):
    # The attack of the issue: another user creates the folder before the server does.
    d = folder(runtime.run / "netmodel", 0o777, owner=NOBODY)
    err = refusal(spawn, "--socket")
    assert f"refusing to listen on {d}/netmodel.sock: the socket folder {d} belongs to uid 65534" in err
    assert not (d / "netmodel.sock").exists()


def test_a_symlinked_socket_folder_is_refused(spawn, runtime):
    target = folder(runtime.root / "target")
    link = runtime.root / "link"
    link.symlink_to(target)
    err = refusal(spawn, f"--socket={link}/s.sock")
    assert f"the socket folder {link} is a symbolic link" in err
    assert not (target / "s.sock").exists()


def test_a_shared_folder_like_tmp_is_refused(spawn):
    err = refusal(spawn, "--socket=/tmp/netmodel-trust-test.sock")
    assert "the socket folder /tmp is shared (mode 1777)" in err
    assert "chmod" not in err
    assert not os.path.exists("/tmp/netmodel-trust-test.sock")


def test_a_parent_others_can_write_needs_the_sticky_bit(spawn, socket_server, runtime, connect):
    shared = folder(runtime.root / "shared", 0o777)
    mine = shared / "mine"
    err = refusal(spawn, f"--socket={mine}/s.sock")
    assert f"{shared}, which holds the socket folder {mine}, can be written by its group and other users" in err
    assert "no sticky bit" in err and f"chmod go-w {shared}" in err
    # As /tmp: nobody else can rename our folder in a sticky one.
    os.chmod(shared, 0o1777)
    server, path = socket_server(mine / "s.sock")
    assert os.stat(mine).st_mode & 0o777 == 0o700
    assert "requests" in connect(path, rpcio.NDJSON, server.diagnostics).result("stats")


@needs_root
def test_a_parent_of_another_user_is_refused(spawn, runtime):
    theirs = folder(runtime.root / "theirs", 0o755, owner=NOBODY)
    mine = folder(theirs / "mine")
    err = refusal(spawn, f"--socket={mine}/s.sock")
    assert f"{theirs}, which holds the socket folder {mine}, belongs to uid 65534" in err


def test_our_own_folders_work_0700_and_0755(socket_server, runtime, connect):
    for name, mode in (("private", 0o700), ("readable", 0o755)):
        d = folder(runtime.root / name, mode)
        server, path = socket_server(d / "s.sock", "--state-dir", str(runtime.root / f"state-{name}"))
        assert "requests" in connect(path, rpcio.NDJSON, server.diagnostics).result("stats")


def test_a_state_folder_others_can_write_is_refused(spawn, runtime):
    sd = folder(runtime.root / "sd", 0o777)
    sock = folder(runtime.root / "sock") / "s.sock"
    err = refusal(spawn, f"--socket={sock}", "--state-dir", sd)
    assert f"refusing to start: the state folder {sd} can be written by its group and other users (mode 0777)" in err
    assert f"chmod 700 {sd}" in err and "--state-dir=DIR" in err
    assert not sock.exists(), "the state folder is checked before the socket is made"
    assert not (sd / "journal.log").exists()


@needs_root
def test_a_state_folder_of_another_user_is_refused(spawn, runtime):
    sd = folder(runtime.root / "sd", 0o700, owner=NOBODY)
    err = refusal(spawn, f"--socket={runtime.root}/s.sock", "--state-dir", sd)
    assert f"the state folder {sd} belongs to uid 65534, not to this user (uid 0)" in err


@needs_root
@pytest.mark.parametrize("command", [["call", "configure", "authToken=secret"], ["watch", "entity"]])
def test_call_and_watch_send_nothing_to_a_server_of_another_user(netmodel_bin, runtime, command):
    # Another user's process listens; its socket is then moved into our own 0700
    # folder, so only the peer's credentials can tell (a folder check would pass).
    os.chmod(runtime.root, 0o755)  # let nobody reach its folder
    theirs = folder(runtime.root / "theirs", 0o700, owner=NOBODY)
    impostor = Impostor(theirs / "s.sock", uid=NOBODY)
    try:
        sock = folder(runtime.root / "ours") / "s.sock"
        os.rename(theirs / "s.sock", sock)
        done = subprocess.run(
            [str(netmodel_bin), command[0], f"--socket={sock}", *command[1:]],
            env=runtime.env, capture_output=True, text=True, timeout=10,
        )
        counts = impostor.finish()
    finally:
        impostor.kill()
    assert done.returncode == 1, done
    assert f"refusing to talk to {sock}: the process listening there runs as uid 65534, not as this user (uid 0)" in done.stderr
    assert "nothing was sent" in done.stderr
    assert counts == {"connections": 1, "bytes": 0}, counts
