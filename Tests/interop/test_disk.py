"""A state folder that fails under a running server (issue 12, part 4): read-only,
deleted while running. A mutation that cannot be made durable is answered with an
error and not acknowledged (never acknowledged and then lost); reads and pushes go on;
the process neither crashes nor spins. (A full disk: test_intents.py; an fsync that
fails: the fault seam of Tests/NetworkModelsTests/CrashConsistencyTests.swift.)"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import rpcio

pytestmark = pytest.mark.timeout(60)

UNAVAILABLE = -32001
A, B, C = ({"kind": "artist", "id": i} for i in ("a", "b", "c"))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def assert_idle(server, seconds: float = 1.0):
    """The server is alive and does not spin: under 20% of a CPU while nothing asks."""
    before = cpu_seconds(server.pid)
    time.sleep(seconds)
    assert server.proc.poll() is None, server.stderr()
    assert cpu_seconds(server.pid) - before < 0.2 * seconds


def following(conn, key) -> bool | None:
    return conn.result("getFollowState", key).get("following")


def refused(conn, method, key) -> dict:
    reply = conn.call(method, {**key, "await": True})
    assert "error" in reply, reply
    assert reply["error"]["code"] == UNAVAILABLE, reply
    return reply["error"]


@pytest.fixture
def state(runtime) -> Path:
    folder = runtime.root / "state-disk"
    folder.mkdir(mode=0o700)
    return folder


def start(spawn, state: Path):
    server = spawn("--state-dir", state)
    server.conn.result("stats")  # up and answering
    return server


def test_a_deleted_state_folder_refuses_mutations_and_loses_nothing_acknowledged(spawn, state):
    server = start(spawn, state)
    c = server.conn
    assert c.result("follow", {**A, "await": True})["following"] is True
    c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "a"}]})
    shutil.rmtree(state)
    error = refused(c, "follow", B)
    assert "No such file or directory" in error["message"], error
    assert following(c, A) is True and following(c, B) is False  # reads go on
    assert_idle(server)
    # The folder is made again: the next mutation writes everything durable back.
    state.mkdir(mode=0o700)
    assert c.result("follow", {**C, "await": True})["following"] is True
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(10)
    again = start(spawn, state)
    assert [following(again.conn, k) for k in (A, B, C)] == [True, False, True]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to bind-mount the state folder read-only")
def test_a_read_only_state_folder_refuses_mutations_and_reads_go_on(spawn, state):
    server = start(spawn, state)
    c = server.conn
    assert c.result("follow", {**A, "await": True})["following"] is True
    if subprocess.run(["mount", "--bind", str(state), str(state)]).returncode != 0:
        pytest.skip("cannot bind-mount here")
    try:
        assert subprocess.run(["mount", "-o", "remount,bind,ro", str(state)]).returncode == 0
        c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "b"}]})
        error = refused(c, "follow", B)
        assert "Read-only file system" in error["message"], error
        # Pushes go on: subscribers see the refused follow rolled back.
        rpcio.notes_until(c, lambda s: s["id"] == "b" and s["following"] is False and s["pending"] is False)
        error = refused(c, "unfollow", A)
        assert following(c, A) is True and following(c, B) is False
        assert_idle(server)
    finally:
        subprocess.run(["umount", "-l", str(state)])
    assert c.result("follow", {**C, "await": True})["following"] is True
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(10)
    again = start(spawn, state)
    assert [following(again.conn, k) for k in (A, B, C)] == [True, False, True]
