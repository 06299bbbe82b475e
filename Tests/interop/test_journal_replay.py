"""What a start replays passes the checks a request passes (issue 25, item 11).

A journal line whose entity a request could not name (an id longer than 256 bytes, an
empty one, a kind outside ^[a-z][a-z0-9_-]{0,63}$, a field of the wrong type, an id the
configuration's endpoints cannot send) is never replayed and never sent: it is kept
in `journal.log.invalid-<n>` with a warning naming the file and the line, and left out
of the journal's next rewrite. Checked against the Artsy demo server, which counts the
requests it gets, and on the local backend.
"""

from __future__ import annotations

import json
import signal

import pytest

from test_rest import Artsy, artsy  # noqa: F401  (fixture)

pytestmark = pytest.mark.timeout(60)

POST_ARTIST = "POST /api/v1/me/follow/artist"
INVALID_PARAMS = -32602
LONG_ID = "x" * 257


def line(**fields) -> str:
    return json.dumps(fields, separators=(",", ":"))


def stop(server):
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(10) == 0, server.stderr()


@pytest.fixture
def state(runtime):
    folder = runtime.root / "state-replay"
    folder.mkdir(mode=0o700)
    return folder


def test_invalid_intent_lines_are_never_replayed_nor_sent(artsy, spawn, runtime, state):
    api = artsy()
    config = runtime.root / "artsy.json"
    config.write_text(json.dumps(api.config()))
    args = ("--backend", "rest", "--config", config, "--state-dir", state)
    lines = [
        line(k="artist", i="banksy", e="local", w=True),  # line 1: valid, sent
        line(k="artist", i=LONG_ID, e="local", w=True),  # 2: longer than a request may name
        line(k="artist", i="", e="local", w=True),  # 3
        line(k="Artist", i="kaws", e="local", w=True),  # 4: a kind outside the pattern
        line(k="artist", i="kaws", e="local", w=1),  # 5: "w" not a boolean
        line(k="artist", i="kaws", e="", w=True),  # 6: an empty environment
        line(k="artist", i="kaws", e="local", w=True, f=True),  # 7: neither an intent nor a follow: kept
        line(k="artist", i="..", e="local", w=True),  # 8: an id the endpoints cannot send
    ]
    (state / "journal.log").write_text("\n".join(lines) + "\n")
    server = spawn(*args)
    c = server.conn
    # A request with the same id is refused; the replayed line is not sent either.
    assert c.call("follow", {"kind": "artist", "id": ".."})["error"]["code"] == INVALID_PARAMS
    assert c.call("follow", {"kind": "artist", "id": LONG_ID})["error"]["code"] == INVALID_PARAMS
    assert c.result("getFollowState", {"kind": "artist", "id": "banksy", "maxAgeMs": 0})["following"] is True
    assert c.result("follow", {"kind": "artist", "id": "ai-weiwei", "await": True})["confirmed"] is True
    posts = [entry["body"] for entry in api.log() if f"{entry['method']} {entry['path']}" == POST_ARTIST]
    assert sorted(posts) == ["artist_id=ai-weiwei", "artist_id=banksy"], api.log()
    log = server.stderr()
    journal = state / "journal.log"
    for number, reason in [(2, "id must be 1 to 256 bytes"), (3, "id must be 1 to 256 bytes"),
                           (4, "kind must match"), (5, '"w" is not true, false or null'),
                           (6, '"e" is not an environment name')]:
        assert f"{journal} line {number}: {reason}" in log, log
        assert f"{journal} line {number}: " in log and "not replayed, kept in" in log, log
    assert "whose id this configuration cannot send" in log, log
    aside = (state / "journal.log.invalid-1").read_text().splitlines()
    assert aside == [lines[1], lines[2], lines[3], lines[4], lines[5]], aside
    stop(server)
    # The clean stop's rewrite left them out; the line no part reads and the unsendable
    # intent are kept as they were.
    text = journal.read_text()
    assert LONG_ID not in text and '"k":"Artist"' not in text and '"w":1' not in text, text
    assert lines[6] in text and '"i":".."' in text, text
    again = spawn(*args)
    assert again.conn.result("stats")["outbox"] == 1  # the unsendable intent, kept
    assert "not replayed" not in again.stderr()
    assert not (state / "journal.log.invalid-2").exists()


def test_invalid_follow_lines_of_the_local_backend_are_never_replayed(spawn, state):
    lines = [
        line(k="artist", i="banksy", f=True),
        line(k="artist", i=LONG_ID, f=True),
        line(k="artist", i="", f=True),
        line(k="9artist", i="kaws", f=True),
        line(k="artist", i="kaws", f="yes"),
        line(k="artist", i="adele", f=True),
    ]
    (state / "journal.log").write_text("\n".join(lines) + "\n")
    server = spawn("--state-dir", state)
    c = server.conn
    listed = c.result("fetchList", {"list": "following/artist"})
    assert [item["id"] for item in listed["items"]] == ["adele", "banksy"], listed
    assert c.result("stats")["outbox"] == 0
    log = server.stderr()
    for number in (2, 3, 4, 5):
        assert f"{state / 'journal.log'} line {number}: " in log, log
    assert (state / "journal.log.invalid-1").read_text().splitlines() == lines[1:5]
    stop(server)
    assert sorted((state / "journal.log").read_text().splitlines()) == sorted([lines[0], lines[5]])


def test_invalid_lines_of_earlier_versions_files_are_never_replayed(spawn, state):
    """outbox.log and local-follows.log of the version before the journal; an invalid
    id in the snapshot local-follows.json makes it unreadable, kept aside as such."""
    (state / "outbox.log").write_text(
        line(k="artist", i="kaws", w=True) + "\n" + line(k="artist", i=LONG_ID, w=True) + "\n")
    (state / "local-follows.log").write_text(
        line(k="artist", i="adele", f=True) + "\n" + line(k="Artist", i="adele", f=True) + "\n")
    snapshot = json.dumps({"version": 1, "follows": {"artist": ["banksy", LONG_ID]}})
    (state / "local-follows.json").write_text(snapshot)
    server = spawn("--state-dir", state)
    c = server.conn
    listed = c.result("fetchList", {"list": "following/artist"})
    assert [item["id"] for item in listed["items"]] == ["adele", "kaws"], listed
    log = server.stderr()
    assert f"{state / 'outbox.log'} line 2: id must be 1 to 256 bytes" in log, log
    assert f"{state / 'local-follows.log'} line 2: kind must match" in log, log
    assert f"{state / 'local-follows.json'} could not be read" in log, log
    assert (state / "outbox.log.invalid-1").read_text() == line(k="artist", i=LONG_ID, w=True) + "\n"
    assert (state / "local-follows.log.invalid-1").read_text() == line(k="Artist", i="adele", f=True) + "\n"
    assert (state / "local-follows.json.corrupt-1").read_text() == snapshot
    stop(server)
    assert LONG_ID not in (state / "journal.log").read_text()


def test_a_clean_stop_rewrites_the_journal_only_when_a_compaction_changes_it(spawn, state):
    """A session that followed nothing leaves journal.log as it found it (no rewrite, no
    fsync at stop); one that followed leaves it compacted, as before."""
    server = spawn("--state-dir", state)
    server.conn.result("getFollowState", {"kind": "artist", "id": "banksy"})
    stop(server)
    made = (state / "journal.log").stat()
    assert made.st_size == 0
    server = spawn("--state-dir", state)
    server.conn.result("getFollowState", {"kind": "artist", "id": "banksy"})
    stop(server)
    assert (state / "journal.log").stat().st_ino == made.st_ino, "a read-only session rewrote the journal"
    server = spawn("--state-dir", state)
    server.conn.result("follow", {"kind": "artist", "id": "banksy", "await": True})
    stop(server)
    after = (state / "journal.log")
    assert after.stat().st_ino != made.st_ino, "a session that followed leaves a compacted journal"
    assert [json.loads(x) for x in after.read_text().splitlines()] == [{"k": "artist", "i": "banksy", "f": True}]
