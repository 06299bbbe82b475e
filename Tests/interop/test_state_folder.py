"""The state folder is not trusted blindly (issue 17, items 8-10): a symbolic link, a
FIFO or anything else where a state file should be stops the start with a message,
and touches nothing it points to; `--socket=PATH` replaces only a socket.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

# journal.log, and the files of earlier versions read at start (see docs/operations.md, "Outbox and state folder").
STATE_FILES = ["lock", "journal.log", "local-follows.json", "local-follows.log", "outbox.log", "versions"]
PRECIOUS = b"precious: not netmodel's\n"


def start_and_refuse(spawn, runtime, state: Path) -> str:
    """Starts the server on `state`; it must exit 1 (promptly) and say why."""
    sock = runtime.root / "sock"
    sock.mkdir(mode=0o700, exist_ok=True)
    server = spawn(f"--socket={sock}/s.sock", "--no-stdio", "--state-dir", state, stdio=False)
    rc = server.wait(timeout=10)
    err = server.stderr()
    assert rc == 1, f"the server must refuse to start (rc={rc})\n{err}"
    return err


def state_folder(runtime) -> Path:
    state = runtime.root / "sd"
    state.mkdir(mode=0o700)
    return state


@pytest.mark.parametrize("name", STATE_FILES)
def test_a_symbolic_link_in_the_state_folder_is_refused_and_its_target_untouched(spawn, runtime, name):
    state = state_folder(runtime)
    target = runtime.root / "target"
    target.write_bytes(PRECIOUS)
    (state / name).symlink_to(target)
    err = start_and_refuse(spawn, runtime, state)
    assert f"{state}/{name} is a symbolic link, not a regular file" in err, err
    assert target.read_bytes() == PRECIOUS, "the link's target must be left as it was"
    assert (state / name).is_symlink()


@pytest.mark.parametrize("name", ["journal.log", "outbox.log", "local-follows.log", "lock"])
def test_a_dangling_link_creates_nothing(spawn, runtime, name):
    state = state_folder(runtime)
    target = runtime.root / "elsewhere" / "made-by-netmodel"
    target.parent.mkdir()
    (state / name).symlink_to(target)
    err = start_and_refuse(spawn, runtime, state)
    assert f"{state}/{name} is a symbolic link" in err, err
    assert not target.exists(), "a dangling link must not create its target"


@pytest.mark.parametrize("name", STATE_FILES)
def test_a_fifo_in_the_state_folder_does_not_hang_the_start(spawn, runtime, name):
    state = state_folder(runtime)
    os.mkfifo(state / name, 0o600)
    err = start_and_refuse(spawn, runtime, state)
    assert f"{state}/{name} is a FIFO, not a regular file" in err, err


@pytest.mark.parametrize("name", [n for n in STATE_FILES if n != "lock"])
def test_a_state_file_past_a_gibibyte_is_refused_at_once_not_read(spawn, runtime, name):
    """A sparse file whose size says 64 GiB (it takes no disk) where a state file
    should be: read whole, it would take the machine's memory. The start stops at once
    and names it; nothing of it is read."""
    state = state_folder(runtime)
    with open(state / name, "wb") as f:
        f.truncate(64 << 30)
    err = start_and_refuse(spawn, runtime, state)
    assert f"read {state / name} (more than 1 GiB: not a file netmodel wrote)" in err, err


@pytest.mark.parametrize("name, said", [
    ("mutations.log", "the mutations ledger is kept in memory only"),
    ("states", "no warm start"),
])
def test_a_huge_ledger_or_warm_state_file_is_told_and_the_server_serves(spawn, runtime, name, said):
    state = state_folder(runtime)
    with open(state / name, "wb") as f:
        f.truncate(64 << 30)
    server = spawn("--state-dir", state)
    assert server.conn.result("getFollowState", {"kind": "artist", "id": "banksy"})["kind"] == "artist"
    err = server.stderr()
    assert "(more than 1 GiB: not a file netmodel wrote)" in err and said in err, err


def test_a_folder_where_the_outbox_should_be_is_refused(spawn, runtime):
    state = state_folder(runtime)
    (state / "outbox.log").mkdir()
    err = start_and_refuse(spawn, runtime, state)
    assert f"{state}/outbox.log is a folder, not a regular file" in err, err


@pytest.mark.parametrize("kind", ["regular file", "symbolic link"])
def test_socket_replaces_only_a_socket(spawn, runtime, kind):
    folder = runtime.root / "sock"
    folder.mkdir(mode=0o700)
    path = folder / "s.sock"
    if kind == "regular file":
        path.write_bytes(PRECIOUS)
    else:
        (runtime.root / "target").write_bytes(PRECIOUS)
        path.symlink_to(runtime.root / "target")
    server = spawn(f"--socket={path}", "--no-stdio", "--state-dir", runtime.root / "sd", stdio=False)
    rc = server.wait(timeout=10)
    err = server.stderr()
    assert rc == 1, f"the server must refuse (rc={rc})\n{err}"
    assert f"refusing to listen on {path}: it is a {kind}, not a socket" in err, err
    assert os.path.lexists(path) and path.read_bytes() == PRECIOUS, "the file must be left as it was"


def test_a_stale_socket_is_still_replaced(socket_server, runtime, connect):
    import socket as sk

    folder = runtime.root / "sock"
    folder.mkdir(mode=0o700)
    path = folder / "s.sock"
    stale = sk.socket(sk.AF_UNIX, sk.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # nobody listens: what a killed server leaves
    server, _ = socket_server(path, "--state-dir", runtime.root / "sd")
    assert "requests" in connect(path, diag=server.diagnostics).result("stats")
