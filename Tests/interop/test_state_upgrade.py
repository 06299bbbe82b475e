"""A state folder of the version before the journal (outbox.log, local-follows.json,
local-follows.log) is read at start and moved into journal.log by the first commit
(docs/operations.md, Outbox and state folder). The fixtures were written by that version's
binary: `killed-after-changes` by a clean run that followed adele, banksy and cher,
then a run killed (-9) after following dylan and unfollowing banksy;
`pending-intent` by a run with --simulate latency=60000 killed while following
elvis.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rpcio import wait_for

pytestmark = pytest.mark.timeout(60)

FIXTURES = Path(__file__).parent / "fixtures" / "state-before-journal"
EARLIER_FILES = {"outbox.log", "local-follows.json", "local-follows.log"}


def copy_fixture(runtime, name: str) -> Path:
    state = runtime.root / f"state-{name}"
    shutil.copytree(FIXTURES / name, state)
    state.chmod(0o700)
    return state


def following(conn, id_: str):
    return conn.result("getFollowState", {"kind": "artist", "id": id_})["following"]


def test_follows_of_the_earlier_version_are_read_then_moved_into_the_journal(spawn, runtime):
    state = copy_fixture(runtime, "killed-after-changes")
    server = spawn("--state-dir", state)
    c = server.conn
    expected = {"adele": True, "banksy": False, "cher": True, "dylan": True}
    assert {id_: following(c, id_) for id_ in expected} == expected
    assert c.result("stats")["outbox"] == 0
    # Nothing is written before a change: the earlier files are still there.
    assert EARLIER_FILES <= {p.name for p in state.iterdir()}

    assert c.result("follow", {"kind": "artist", "id": "elvis", "await": True})["confirmed"] is True
    names = {p.name for p in state.iterdir()}
    assert not EARLIER_FILES & names, names
    assert "journal.log" in names
    server.stop()

    again = spawn("--state-dir", state)
    expected["elvis"] = True
    assert {id_: following(again.conn, id_) for id_ in expected} == expected
    again.stop()


def test_a_pending_intent_of_the_earlier_version_is_sent_again(spawn, runtime):
    state = copy_fixture(runtime, "pending-intent")
    server = spawn("--state-dir", state)
    c = server.conn
    # Replayed at start: the local backend confirms it, and the outbox settles.
    assert wait_for(lambda: c.result("stats")["outbox"] == 0, timeout=10)
    assert c.result("getFollowState", {"kind": "artist", "id": "elvis"})["confirmed"] is True
    assert following(c, "adele") is True
    server.stop()
    names = {p.name for p in state.iterdir()}
    assert not EARLIER_FILES & names, names
