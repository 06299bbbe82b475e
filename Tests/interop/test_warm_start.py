"""A warm start (issue 31 §4): the states the last run confirmed come back from the
state folder, shown at once with `stale: true` and their age until an answer of this
run confirms them; never before an intent's durability, never trusted to spare a call,
never of another environment. Against the Artsy demo server (REST backend) with slow
reads, and the local backend.
"""

from __future__ import annotations

import json
import signal
import time

import pytest

import rpcio
from test_rest import Artsy, artsy, rest  # noqa: F401  (fixtures)

pytestmark = pytest.mark.timeout(90)
STATE_READ = {"method": "GET", "path": "follow/artists", "delay_ms": 1500, "times": None}


def artist(name: str) -> dict:
    return {"kind": "artist", "id": name}


def first_run(api, rest, *args):
    """Reads andy-warhol (followed, seeded) and banksy, follows kaws; stops cleanly."""
    server = rest(api, *args)
    c = server.conn
    assert c.result("getFollowState", artist("andy-warhol"))["confirmed"] is True
    assert c.result("getFollowState", artist("banksy"))["confirmed"] is False
    assert c.result("follow", {**artist("kaws"), "await": True})["confirmed"] is True
    server.stop()
    return server


def test_a_restart_answers_at_once_with_the_last_state_marked_stale_then_reads_it_again(artsy, rest):
    api = artsy()
    first_run(api, rest)
    api.faults(STATE_READ)  # the API is slow to answer a read now
    c = rest(api).conn
    started = time.monotonic()
    state = c.result("getFollowState", artist("andy-warhol"))
    assert time.monotonic() - started < 1.0, "answered from the state folder, not the slow API"
    assert state["stale"] is True and state["confirmed"] is True and state["following"] is True, state
    assert isinstance(state["ageMs"], int) and state["ageMs"] >= 0, state
    # The read behind the answer confirms it: the stale mark goes.
    sub = c.result("subscribe", {"topics": [{"type": "entity", **artist("andy-warhol")}]})
    assert sub["snapshot"][0]["stale"] is True
    note = c.recv(timeout=10)
    assert note["method"] == "stateChanged" and "stale" not in note["params"]["state"], note
    assert note["params"]["state"]["confirmed"] is True
    assert "stale" not in c.result("getFollowState", artist("andy-warhol"))


def test_with_max_age_ms_the_age_decides_as_for_any_state(artsy, rest):
    api = artsy()
    first_run(api, rest)
    api.faults(STATE_READ)
    c = rest(api).conn
    started = time.monotonic()
    state = c.result("getFollowState", {**artist("banksy"), "maxAgeMs": 0}, timeout=10)
    assert time.monotonic() - started >= 1.4, "a state older than maxAgeMs is read from the API"
    assert "stale" not in state and state["confirmed"] is False, state


def test_a_follow_equal_to_a_stale_state_is_still_sent(artsy, rest):
    api = artsy()
    first_run(api, rest)
    follows = api.route("POST /api/v1/me/follow/artist")
    c = rest(api).conn
    assert c.result("getFollowState", artist("kaws"))["stale"] is True
    state = c.result("follow", {**artist("kaws"), "await": True})
    assert state["confirmed"] is True and "stale" not in state, state
    assert api.route("POST /api/v1/me/follow/artist") == follows + 1, "a stale state spares no call"


def test_an_intent_the_outbox_holds_shows_the_intent_not_the_stale_state(artsy, rest, runtime):
    api = artsy()
    first_run(api, rest)
    second = rest(api)
    api.faults({"method": "POST", "path": "follow/artist$", "hang": True, "times": None})
    state = second.conn.result("follow", artist("banksy"))  # accepted, durable; the call hangs
    assert state["pending"] is True
    second.signal(signal.SIGKILL)
    second.wait()
    api.faults()
    api.faults(STATE_READ)
    c = rest(api).conn
    state = c.result("getFollowState", artist("banksy"))
    assert state["following"] is True and state["pending"] is True, "the intent, replayed, is shown"
    assert state["confirmed"] is False and state["stale"] is True, state


def test_states_of_another_environment_are_not_used(artsy, rest, serve_rest, runtime):
    api = artsy()
    first_run(api, rest)
    config = api.config()
    config["environments"]["mirror"] = api.url  # the same server under another name
    server = serve_rest(config, "--environment", "mirror")
    state = server.conn.result("getFollowState", artist("andy-warhol"))
    assert "stale" not in state and state["confirmed"] is True, state
    server.stop()
    log = server.stderr_path.read_text()
    assert "not used" in log and "mirror" in log, log


def test_a_hostile_states_file_is_read_line_by_line(spawn, runtime):
    state = runtime.root / "state-hostile"
    state.mkdir()
    now = int(time.time() * 1000)
    lines = [
        json.dumps({"netmodel": "states", "form": 1, "environment": "the local backend"}),
        json.dumps({"kind": "artist", "id": "kept", "following": True, "at": now - 5000}),
        "{not json",
        json.dumps({"kind": "Artist", "id": "bad-kind", "following": True, "at": now}),
        json.dumps({"kind": "artist", "id": "x" * 300, "following": True, "at": now}),
        json.dumps({"kind": "artist", "id": "future", "following": True, "at": now + 86_400_000}),
        json.dumps({"kind": "artist", "id": "both", "following": True, "requested": True, "at": now}),
        json.dumps({"kind": "artist", "id": "kept", "following": False, "at": now}),  # a second line of one key
        "\u0000\u00ff",
    ]
    (state / "states").write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"))
    server = spawn("--state-dir", state)
    kept = server.conn.result("getFollowState", artist("kept"))
    assert kept["stale"] is True and kept["confirmed"] is True and kept["ageMs"] >= 5000, kept
    for name in ("future", "both"):
        assert "stale" not in server.conn.result("getFollowState", artist(name)), name
    server.stop()
    log = server.stderr_path.read_text()
    assert "7 line(s) that are no state were skipped" in log, log


def test_the_file_is_bounded_most_recent_first_and_zero_keeps_none(spawn, runtime):
    state = runtime.root / "state-bounded"
    state.mkdir()
    server = spawn("--state-dir", state, "--max-warm-bytes", "300")
    for n in range(20):
        server.conn.result("getFollowState", artist(f"artist-{n:02d}"))
    server.stop()
    text = (state / "states").read_bytes()
    assert 0 < len(text) <= 300, len(text)
    kept = [json.loads(line)["id"] for line in text.splitlines()[1:]]
    assert kept and kept == [f"artist-{n:02d}" for n in range(19, 19 - len(kept), -1)], kept
    (state / "states").unlink()
    server = spawn("--state-dir", state, "--max-warm-bytes", "0")
    server.conn.result("getFollowState", artist("none"))
    server.stop()
    assert not (state / "states").exists()
