"""Intents are acknowledged only when durable, and belong where they were made (issue
17, items 11-13): the real binary against the Artsy demo server (examples/artsy).

- a mutation whose outbox write fails (a full disk; here a file size limit, EFBIG) is
  answered -32001 and not acknowledged, and nothing of it survives a kill -9;
- `configure {environment}` keeps the old environment's intents for it and reads
  states again in the new one;
- a start whose configuration lacks a kind keeps that kind's intents for a later one.
"""

from __future__ import annotations

import json
import os
import subprocess
import signal
import sys
import time
from pathlib import Path

import pytest

import rpcio
from rpcio import notes_until
from test_rest import CONFIG, Artsy, artsy  # noqa: F401  (fixture)

pytestmark = pytest.mark.timeout(60)

UNAVAILABLE = -32001
POST_ARTIST = "POST /api/v1/me/follow/artist"
# Runs the server under RLIMIT_FSIZE with SIGXFSZ ignored: a write past the limit
# fails with EFBIG, as one on a full disk fails with ENOSPC.
LIMITED = (
    "import os, resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
    "n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_FSIZE, (n, n)); os.execv(sys.argv[2], sys.argv[2:])"
)


@pytest.fixture
def serve(netmodel_bin, runtime):
    """serve(environments, *args, config=..., file_limit=None) -> ServerProc of the rest
    backend with examples/artsy/config.json, its environments replaced, on one state folder."""
    procs = []

    def _serve(environments: dict, *args, file_limit: int | None = None, **overrides):
        config = json.loads(CONFIG.read_text())
        config["environments"] = environments
        config["environment"] = next(iter(environments))
        config["timeoutMs"] = 500
        config.update(overrides)
        path = runtime.root / f"config-{len(procs)}.json"
        path.write_text(json.dumps(config))
        state = runtime.root / "state-intents"
        state.mkdir(mode=0o700, exist_ok=True)
        argv = [str(netmodel_bin), "serve", "--backend", "rest", "--config", str(path), "--state-dir", str(state), *args]
        if file_limit is not None:
            argv = [sys.executable, "-c", LIMITED, str(file_limit), *argv]
        proc = rpcio.ServerProc(argv, env=runtime.env, stderr_path=runtime.logs / f"intents{len(procs)}.stderr")
        procs.append(proc)
        return proc

    yield _serve
    for proc in procs:
        proc.stop()


@pytest.fixture
def two_apis(runtime):
    """Two demo servers (each needs its own port file)."""
    servers = []
    for name in ("production", "staging"):
        folder = runtime.root / name
        folder.mkdir()
        servers.append(Artsy(folder))
    yield servers
    for server in servers:
        server.stop()


def kill9(server):
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(10)


def outbox_lines(runtime) -> list[dict]:
    text = (runtime.root / "state-intents" / "journal.log").read_text()
    return [record for record in map(json.loads, filter(None, text.splitlines())) if "w" in record]


def test_an_intent_that_cannot_be_saved_is_answered_with_an_error_and_not_kept(artsy, serve, runtime):
    api = artsy()
    api.faults({"method": "POST", "hang": True, "times": None})
    server = serve({"local": api.url}, file_limit=200)
    c = server.conn
    assert c.result("follow", {"kind": "artist", "id": "banksy"})["pending"] is True  # a short line fits
    long_id = "x" * 250  # its line does not: the write stops at the limit
    reply = c.call("follow", {"kind": "artist", "id": long_id})
    assert "error" in reply, f"a mutation that is not durable must not be acknowledged: {reply}"
    error = reply["error"]
    assert error["code"] == UNAVAILABLE and error["data"]["retryable"] is True, error
    assert "could not save the intent" in error["message"] and "File too large" in error["message"], error
    state = error["data"]["state"]
    assert state["pending"] is False and state["following"] is None, state  # taken back
    # An awaiting caller is told the same.
    reply = c.call("follow", {"kind": "artist", "id": long_id, "await": True})
    assert reply["error"]["code"] == UNAVAILABLE, reply
    assert c.result("getFollowState", {"kind": "artist", "id": "banksy", "maxAgeMs": 60000})["pending"] is True
    assert c.result("stats")["outbox"] == 1
    # The torn write was cut off: the file holds exactly what was acknowledged.
    assert [line["i"] for line in outbox_lines(runtime)] == ["banksy"]
    kill9(server)

    again = serve({"local": api.url})
    assert again.conn.result("stats")["outbox"] == 1
    assert [line["i"] for line in outbox_lines(runtime)] == ["banksy"]


def test_an_environment_switch_keeps_intents_where_they_were_made(two_apis, serve, runtime):
    production, staging = two_apis
    production.faults({"method": "POST", "hang": True, "times": None})
    server = serve({"production": production.url, "staging": staging.url})
    c = server.conn
    c.result("subscribe", {"topics": [{"type": "entity", "kind": "artist", "id": "banksy"}]})
    assert c.result("follow", {"kind": "artist", "id": "banksy"})["pending"] is True
    rpcio.wait_for(lambda: production.route(POST_ARTIST) >= 1, 5)

    c.result("configure", {"environment": "staging"})
    # Production's pending follow is not staging's: the state is unknown there…
    notes_until(c, lambda s: s["following"] is None and s["pending"] is False)
    # …and read from staging, where nobody follows banksy.
    state = c.result("getFollowState", {"kind": "artist", "id": "banksy"})
    assert state["confirmed"] is False and state["following"] is False and state["pending"] is False, state
    time.sleep(1.5)  # past production's timeout and a retry: nothing may reach staging
    assert staging.route(POST_ARTIST) == 0, staging.stats()
    assert "banksy" not in staging.control("GET", "follows").get("artist", [])
    assert c.result("stats")["outbox"] == 1
    assert outbox_lines(runtime)[-1] == {"k": "artist", "i": "banksy", "e": "production", "w": True}

    # Back in production, its intent is delivered there.
    production.control("DELETE", "faults")
    c.result("configure", {"environment": "production"})
    notes_until(c, lambda s: s["confirmed"] is True and s["pending"] is False)
    assert "banksy" in production.control("GET", "follows")["artist"]
    assert staging.route(POST_ARTIST) == 0
    assert c.result("stats")["outbox"] == 0


def test_an_intent_kept_for_another_environment_survives_a_restart_there(two_apis, serve, runtime):
    production, staging = two_apis
    production.faults({"method": "POST", "hang": True, "times": None})
    envs = {"production": production.url, "staging": staging.url}
    first = serve(envs)
    c = first.conn
    c.result("follow", {"kind": "artist", "id": "kaws"})
    c.result("configure", {"environment": "staging"})
    assert c.result("follow", {"kind": "gene", "id": "pop-art", "await": True})["confirmed"] is True
    first.stop()
    production.control("DELETE", "faults")
    # A start in staging sends nothing of production's…
    staged = serve(envs, "--environment", "staging")
    assert staged.conn.result("stats")["outbox"] == 1
    time.sleep(0.5)
    assert staging.route(POST_ARTIST) == 0
    staged.stop()
    # …a start in production delivers it.
    serve(envs).conn.result("stats")
    assert rpcio.wait_for(lambda: "kaws" in production.control("GET", "follows").get("artist", []), 10)


def test_a_configuration_without_the_kind_keeps_its_intents_for_one_with_it(artsy, serve, runtime):
    api = artsy()
    api.faults({"method": "POST", "hang": True, "times": None})
    first = serve({"local": api.url})
    first.conn.result("follow", {"kind": "artist", "id": "banksy"})
    rpcio.wait_for(lambda: api.route(POST_ARTIST) >= 1, 5)
    kill9(first)
    api.control("DELETE", "faults")

    config = json.loads(CONFIG.read_text())
    without = {kind: value for kind, value in config["kinds"].items() if kind != "artist"}
    lists = {name: value for name, value in config["lists"].items() if "rtist" not in name}
    second = serve({"local": api.url}, kinds=without, lists=lists)
    assert second.conn.result("stats")["outbox"] == 1
    time.sleep(0.5)
    assert api.route(POST_ARTIST) == 1, "an intent of a kind this configuration lacks is not sent"
    err = second.stderr()
    second.stop()
    assert "1 pending intent(s) of kind artist" in err and "kept, not sent" in err, err
    assert [line["i"] for line in outbox_lines(runtime)] == ["banksy"]

    third = serve({"local": api.url})
    assert rpcio.wait_for(lambda: "banksy" in api.control("GET", "follows").get("artist", []), 10)
    assert rpcio.wait_for(lambda: third.conn.result("stats")["outbox"] == 0, 5)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a tmpfs")
def test_a_full_disk_answers_an_error_and_a_kill_loses_nothing_acknowledged(artsy, serve, runtime):
    state = runtime.root / "state-intents"
    state.mkdir(mode=0o700)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(state)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        api = artsy()
        api.faults({"method": "POST", "hang": True, "times": None})
        server = serve({"local": api.url})
        c = server.conn
        # Appends within the file's last page need no space: fill that page almost up, so
        # that the next line needs a new one.
        assert c.result("follow", {"kind": "artist", "id": "banksy"})["pending"] is True
        ids, size = [], (state / "journal.log").stat().st_size
        while True:
            ids.append(f"{len(ids):03d}" + "x" * 250)
            assert c.result("follow", {"kind": "artist", "id": ids[-1]})["pending"] is True
            grown, size = (state / "journal.log").stat().st_size - size, (state / "journal.log").stat().st_size
            if size + grown > 4096:
                break
        ids.append(f"{len(ids):03d}" + "x" * 250)
        filler = os.open(state / "filler", os.O_WRONLY | os.O_CREAT, 0o600)  # the disk fills up
        try:
            while os.write(filler, b"x" * 4096) > 0:
                pass
        except OSError:
            pass
        finally:
            os.close(filler)
        reply = c.call("follow", {"kind": "artist", "id": ids[-1]})
        assert reply.get("error", {}).get("code") == UNAVAILABLE, reply
        assert "No space left on device" in reply["error"]["message"], reply
        kill9(server)
        (state / "filler").unlink()
        again = serve({"local": api.url})
        assert again.conn.result("stats")["outbox"] == len(ids)  # banksy and all but the last
        assert [line["i"] for line in outbox_lines(runtime)] == ["banksy", *ids[:-1]]
        again.stop()
    finally:
        subprocess.run(["umount", "-l", str(state)])
