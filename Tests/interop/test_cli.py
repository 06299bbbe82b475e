"""`netmodel call` and `netmodel watch` against a real server on its socket."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time

import pytest

import rpcio

pytestmark = pytest.mark.timeout(60)


def run(netmodel_bin, runtime, *args, timeout=10):
    return subprocess.run(
        [str(netmodel_bin), *map(str, args)], env=runtime.env, capture_output=True, timeout=timeout, text=True
    )


@pytest.fixture
def server(socket_server, runtime):
    # The default socket path: `call` and `watch` must find it without --socket.
    proc, path = socket_server(None, "--state-dir", str(runtime.root / "state"))
    return proc, path


def test_call_prints_the_result_and_exits_0(netmodel_bin, runtime, server):
    done = run(netmodel_bin, runtime, "call", "follow", "kind=artist", "id=banksy", "await:=true")
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout)
    assert state["following"] is True and state["confirmed"] is True and state["pending"] is False
    assert done.stdout.count("\n") == 1

    by_json = run(netmodel_bin, runtime, "call", "getFollowState", '{"kind":"artist","id":"banksy"}')
    assert by_json.returncode == 0, by_json.stderr
    assert json.loads(by_json.stdout)["version"] == state["version"]

    no_params = run(netmodel_bin, runtime, "call", "stats")
    assert json.loads(no_params.stdout)["requests"]["byMethod"]["follow"] == 1


def test_call_prints_errors_on_stderr_and_exits_1(netmodel_bin, runtime, server):
    done = run(netmodel_bin, runtime, "call", "follow", "kind=Artist", "id=x")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "-32602" in done.stderr and '"path":"/kind"' in done.stderr

    unknown = run(netmodel_bin, runtime, "call", "nope")
    assert unknown.returncode == 1 and "-32601" in unknown.stderr


def test_key_value_is_a_string_and_key_colon_equals_is_json(netmodel_bin, runtime, server):
    # id=123 stays the string "123"; following:=false and await:=true are booleans
    # (as strings they would be refused with -32602).
    done = run(netmodel_bin, runtime, "call", "setFollowState", "kind=gene", "id=123", "following:=false", "await:=true")
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout)
    assert state["id"] == "123" and state["following"] is False and state["confirmed"] is False

    as_string = run(netmodel_bin, runtime, "call", "follow", "kind=gene", "id=1", "await=true")
    assert as_string.returncode == 1 and '"path":"/await"' in as_string.stderr

    bad = run(netmodel_bin, runtime, "call", "follow", "kind=gene", "id=1", "await:=yes")
    assert bad.returncode == 1 and "needs JSON" in bad.stderr


def test_call_without_a_server_says_so(netmodel_bin, runtime):
    done = run(netmodel_bin, runtime, "call", "--socket", str(runtime.root / "none.sock"), "stats")
    assert done.returncode == 1
    assert "cannot connect" in done.stderr


def test_usage_errors_exit_2_and_help_exits_0(netmodel_bin, runtime):
    assert run(netmodel_bin, runtime, "call").returncode == 2
    assert run(netmodel_bin, runtime, "watch").returncode == 2
    for sub in ("call", "watch"):
        done = run(netmodel_bin, runtime, sub, "--help")
        assert done.returncode == 0 and f"netmodel {sub}" in done.stdout


def test_watch_prints_notifications_as_json_lines(netmodel_bin, runtime, server):
    watcher = subprocess.Popen(
        [str(netmodel_bin), "watch", "entity:artist/banksy"],
        env=runtime.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        snapshot = json.loads(watcher.stdout.readline())  # where it stands: never seen yet
        assert snapshot["seq"] == 0 and snapshot["state"]["id"] == "banksy"
        first = json.loads(watcher.stdout.readline())  # the fetch of a never-seen entity
        assert first["seq"] >= 1 and first["state"]["confirmed"] is False
        done = run(netmodel_bin, runtime, "call", "follow", "kind=artist", "id=banksy", "await:=true")
        assert done.returncode == 0, done.stderr
        lines = []
        while not lines or lines[-1]["state"]["pending"]:
            lines.append(json.loads(watcher.stdout.readline()))
        assert lines[-1]["state"]["following"] is True
        seqs = [n["seq"] for n in [first, *lines]]
        assert seqs == sorted(set(seqs))
        versions = [n["state"]["version"] for n in [snapshot, first, *lines]]
        assert versions == sorted(set(versions))
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=10)


def test_watch_a_list_topic(netmodel_bin, runtime, server):
    watcher = subprocess.Popen(
        [str(netmodel_bin), "watch", "list:following/artist"],
        env=runtime.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        first = json.loads(watcher.stdout.readline())  # the snapshot, then the first page loaded
        assert first["seq"] == 0 and first["state"]["list"] == "following/artist"
        while first["state"]["state"] != "loaded":
            first = json.loads(watcher.stdout.readline())
        assert run(netmodel_bin, runtime, "call", "follow", "kind=artist", "id=kaws", "await:=true").returncode == 0
        line = json.loads(watcher.stdout.readline())
        while not any(item["id"] == "kaws" for item in line["state"]["items"]):
            line = json.loads(watcher.stdout.readline())
        assert line["seq"] > first["seq"] and line["state"]["version"] > first["state"]["version"]
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=10)
    bad = run(netmodel_bin, runtime, "watch", "list:nope")
    assert bad.returncode == 1 and "-32004" in bad.stderr


def line_reader(stream):
    """readline(seconds) on stream: a line, or None if none comes in time (watch may
    print nothing). A thread reads, since select() cannot see lines already buffered."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()

    def readline(seconds):
        try:
            return lines.get(timeout=seconds)
        except queue.Empty:
            return None

    return readline


def test_watch_prints_the_current_state_first(netmodel_bin, runtime, server):
    done = run(netmodel_bin, runtime, "call", "follow", "kind=artist", "id=kaws", "await:=true")
    assert done.returncode == 0, done.stderr
    held = json.loads(run(netmodel_bin, runtime, "call", "getFollowState", "kind=artist", "id=kaws").stdout)
    watcher = subprocess.Popen(
        [str(netmodel_bin), "watch", "entity:artist/kaws", "entity:artist/banksy"],
        env=runtime.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        # Followed already and settled: no notification would come for it; the
        # snapshot says where it stands, as a stateChanged-shaped line with seq 0.
        readline = line_reader(watcher.stdout)
        lines = [readline(5), readline(5)]
        assert None not in lines, f"watch printed {lines}"
        snap = {json.loads(line)["state"]["id"]: json.loads(line) for line in lines}
        assert set(snap) == {"kaws", "banksy"}
        assert all(n["seq"] == 0 and isinstance(n["subscription"], str) for n in snap.values())
        assert snap["kaws"]["state"]["following"] is True and snap["kaws"]["state"]["version"] == held["version"]
        # then the changes, each newer than what was printed
        assert run(netmodel_bin, runtime, "call", "unfollow", "kind=artist", "id=kaws").returncode == 0
        change = json.loads(readline(5))
        while change["state"]["id"] != "kaws":
            change = json.loads(readline(5))
        assert change["seq"] >= 1 and change["state"]["version"] > held["version"]
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=10)


def test_call_timeout_gives_up_on_a_stopped_server(netmodel_bin, runtime, server):
    proc, _ = server
    assert run(netmodel_bin, runtime, "call", "--timeout=2000", "stats").returncode == 0  # answered in time
    proc.proc.send_signal(signal.SIGSTOP)  # accepts connections (the kernel does), answers nothing
    try:
        started = time.monotonic()
        done = run(netmodel_bin, runtime, "call", "--timeout", "300", "stats", timeout=20)
        assert done.returncode == 1 and "no answer in time" in done.stderr, done.stderr
        assert time.monotonic() - started < 5
    finally:
        proc.proc.send_signal(signal.SIGCONT)
    assert run(netmodel_bin, runtime, "call", "--timeout=x", "stats").returncode == 2


def test_call_timeout_cancels_a_slow_request(netmodel_bin, runtime, socket_server):
    socket_server(None, "--state-dir", str(runtime.root / "state"), "--simulate", "latency=3000")
    done = run(netmodel_bin, runtime, "call", "--timeout=300", "follow", "kind=artist", "id=slow", "await:=true",
               timeout=20)
    assert done.returncode == 1 and "no answer in time" in done.stderr, done.stderr
    stats = json.loads(run(netmodel_bin, runtime, "call", "stats").stdout)
    assert stats["errors"]["byCode"].get("-32800") == 1, stats["errors"]  # cancelled, not left waiting


def test_watch_exits_1_when_the_server_goes_away(netmodel_bin, runtime, server):
    proc, _ = server
    watcher = subprocess.Popen(
        [str(netmodel_bin), "watch", "entity:artist/banksy"],
        env=runtime.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        json.loads(watcher.stdout.readline())  # subscribed
        proc.proc.send_signal(signal.SIGTERM)
        assert watcher.wait(timeout=10) == 1
        assert "closed the connection" in watcher.stderr.read()
    finally:
        if watcher.poll() is None:
            watcher.kill()
