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

# Seconds any one step may take: a healthy run takes milliseconds, a machine loaded
# by a build on every core may stall the server, `call` or `watch` for seconds.
STEP = 30


def run(netmodel_bin, runtime, *args, timeout=STEP):
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


def line_reader(stream):
    """readline(seconds) on stream: a line, "" at its end, or None if none comes in
    time (watch may print nothing). A thread reads, since select() cannot see lines
    already buffered."""
    lines: queue.Queue = queue.Queue()

    def read():
        for line in stream:
            lines.put(line)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()

    def readline(seconds):
        try:
            return lines.get(timeout=seconds)
        except queue.Empty:
            return None

    return readline


def watch(netmodel_bin, runtime, *topics):
    """`netmodel watch TOPIC...` and a reader of its lines: next_line() is the next one
    as JSON, failing (not hanging) when none comes within STEP seconds."""
    watcher = subprocess.Popen(
        [str(netmodel_bin), "watch", *topics],
        env=runtime.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    readline = line_reader(watcher.stdout)

    def next_line():
        line = readline(STEP)
        if line is None:
            pytest.fail(f"watch printed no line within {STEP} s", pytrace=False)
        if line == "":
            code = watcher.wait(timeout=STEP)
            pytest.fail(f"watch ended (exit code {code}): {watcher.stderr.read()}", pytrace=False)
        return json.loads(line)

    return watcher, next_line


def stop(watcher):
    """Interrupts watch; kills it if it does not end in time, so cleaning up never
    hides the failure that got here."""
    watcher.send_signal(signal.SIGINT)
    try:
        watcher.wait(timeout=STEP)
    except subprocess.TimeoutExpired:
        watcher.kill()
        watcher.wait()


@pytest.mark.timeout(120)
def test_watch_prints_notifications_as_json_lines(netmodel_bin, runtime, server):
    watcher, next_line = watch(netmodel_bin, runtime, "entity:artist/banksy")
    try:
        snapshot = next_line()  # where it stands: never seen yet
        assert snapshot["seq"] == 0 and snapshot["state"]["id"] == "banksy"
        first = next_line()  # the fetch of a never-seen entity
        assert first["seq"] >= 1 and first["state"]["confirmed"] is False
        done = run(netmodel_bin, runtime, "call", "follow", "kind=artist", "id=banksy", "await:=true")
        assert done.returncode == 0, done.stderr
        lines = []
        while not lines or lines[-1]["state"]["pending"]:
            lines.append(next_line())
        assert lines[-1]["state"]["following"] is True
        seqs = [n["seq"] for n in [first, *lines]]
        assert seqs == sorted(set(seqs))
        versions = [n["state"]["version"] for n in [snapshot, first, *lines]]
        assert versions == sorted(set(versions))
    finally:
        stop(watcher)


@pytest.mark.timeout(120)
def test_watch_a_list_topic(netmodel_bin, runtime, server):
    watcher, next_line = watch(netmodel_bin, runtime, "list:following/artist")
    try:
        first = next_line()  # the snapshot, then the first page loaded
        assert first["seq"] == 0 and first["state"]["list"] == "following/artist"
        while first["state"]["state"] != "loaded":
            first = next_line()
        assert run(netmodel_bin, runtime, "call", "follow", "kind=artist", "id=kaws", "await:=true").returncode == 0
        line = next_line()
        while not any(item["id"] == "kaws" for item in line["state"]["items"]):
            line = next_line()
        assert line["seq"] > first["seq"] and line["state"]["version"] > first["state"]["version"]
    finally:
        stop(watcher)
    bad = run(netmodel_bin, runtime, "watch", "list:nope")
    assert bad.returncode == 1 and "-32004" in bad.stderr


@pytest.mark.timeout(120)
def test_watch_prints_the_current_state_first(netmodel_bin, runtime, server):
    done = run(netmodel_bin, runtime, "call", "follow", "kind=artist", "id=kaws", "await:=true")
    assert done.returncode == 0, done.stderr
    held = json.loads(run(netmodel_bin, runtime, "call", "getFollowState", "kind=artist", "id=kaws").stdout)
    watcher, next_line = watch(netmodel_bin, runtime, "entity:artist/kaws", "entity:artist/banksy")
    try:
        # Followed already and settled: no notification would come for it; the
        # snapshot says where it stands, as a stateChanged-shaped line with seq 0.
        lines = [next_line(), next_line()]
        snap = {line["state"]["id"]: line for line in lines}
        assert set(snap) == {"kaws", "banksy"}
        assert all(n["seq"] == 0 and isinstance(n["subscription"], str) for n in snap.values())
        assert snap["kaws"]["state"]["following"] is True and snap["kaws"]["state"]["version"] == held["version"]
        # then the changes, each newer than what was printed
        assert run(netmodel_bin, runtime, "call", "unfollow", "kind=artist", "id=kaws").returncode == 0
        change = next_line()
        while change["state"]["id"] != "kaws":
            change = next_line()
        assert change["seq"] >= 1 and change["state"]["version"] > held["version"]
    finally:
        stop(watcher)


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


# --------------------------------------------------------------------------
# issue 27 §4: watch --count, --until and --timeout, for scripts that wait


def watch_until_done(netmodel_bin, runtime, *args):
    """`netmodel watch ARGS…` in the background, once subscribed: finish() waits for its
    end and gives (exit code, the lines it printed, stderr)."""
    watcher = subprocess.Popen(
        [str(netmodel_bin), "watch", *args], env=runtime.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        bufsize=0,
    )
    first = b""
    while not first.endswith(b"\n"):  # subscribed: the snapshot's first line (unbuffered: all of it is kept)
        byte = watcher.stdout.read(1)
        assert byte, f"watch {args} ended before subscribing: {watcher.stderr.read()!r}"
        first += byte

    def finish():
        try:
            out, err = watcher.communicate(timeout=STEP)
        except subprocess.TimeoutExpired:
            watcher.kill()
            out, err = watcher.communicate()
            pytest.fail(f"watch {args} did not end: {out!r} {err!r}", pytrace=False)
        return watcher.returncode, [json.loads(line) for line in (first + out).decode().splitlines()], err.decode()

    return finish


def test_watch_count_ends_after_n_changes(netmodel_bin, runtime, server):
    # The snapshot first (seq 0, not a change), then the fetch of a never-seen entity,
    # then the follow: two changes.
    finish = watch_until_done(netmodel_bin, runtime, "--count=2", "entity:artist/banksy")
    assert run(netmodel_bin, runtime, "call", "follow", "kind=artist", "id=banksy", "await:=true").returncode == 0
    code, lines, err = finish()
    assert code == 0, err
    assert lines[0]["seq"] == 0 and len(lines) == 3 and all(n["seq"] >= 1 for n in lines[1:]), lines


def test_watch_until_ends_when_a_state_matches(netmodel_bin, runtime, server):
    finish = watch_until_done(
        netmodel_bin, runtime, "entity:artist/banksy", "--until", "following=true", "--until=pending=false",
        "--until=id=banksy",
    )
    assert run(netmodel_bin, runtime, "call", "follow", "kind=artist", "id=banksy", "await:=true").returncode == 0
    code, lines, err = finish()
    assert code == 0, err
    last = lines[-1]["state"]
    assert last["following"] is True and last["pending"] is False and last["confirmed"] is True, lines
    # Every test must hold for one state: the pending one (following, still pending) did not end it.
    assert all(not (n["state"]["following"] is True and n["state"]["pending"] is False) for n in lines[:-1]), lines

    # Where things stand already matches: it ends at the snapshot.
    done = run(netmodel_bin, runtime, "watch", "--until=following=true", "--until=error=null", "entity:artist/banksy")
    assert done.returncode == 0, done.stderr
    assert [json.loads(n)["seq"] for n in done.stdout.splitlines()] == [0]
    # Nested members, and JSON text compared as JSON: "banksy" is the string banksy.
    done = run(netmodel_bin, runtime, "watch", '--until=id="banksy"', "--until=attributes=null", "entity:artist")
    assert done.returncode == 0, done.stderr


def test_watch_until_and_count_give_up_with_exit_3(netmodel_bin, runtime, server):
    started = time.monotonic()
    done = run(netmodel_bin, runtime, "watch", "--timeout=500", "--until=following=true", "entity:artist/nobody")
    assert done.returncode == 3, done
    assert "--timeout passed and nothing matched --until" in done.stderr
    assert time.monotonic() - started < STEP
    # A value that is not JSON is text: following=yes never matches a boolean.
    done = run(netmodel_bin, runtime, "watch", "--count=1", "--until=following=yes", "entity:artist/other")
    assert done.returncode == 3 and "--count=1 reached and nothing matched --until" in done.stderr, done
    # --timeout alone ends a watch with 3 too: it did not end by a match or a count.
    assert run(netmodel_bin, runtime, "watch", "--timeout=300", "entity").returncode == 3
    for bad in ("--count=0", "--count=x", "--until=nothing", "--until==1", "--until=a..b=1", "--timeout=0"):
        done = run(netmodel_bin, runtime, "watch", bad, "entity")
        assert done.returncode == 2, (bad, done)


# --------------------------------------------------------------------------
# issue 25 item 12: an answer with id null ends the command; options in any order


@pytest.fixture
def tiny_server(socket_server, runtime):
    """A server that skips every message over 64 bytes, answering it with id null."""
    return socket_server(None, "--state-dir", str(runtime.root / "state"), "--max-message-bytes", 64)


def test_call_and_watch_end_on_an_error_without_an_id(netmodel_bin, runtime, tiny_server):
    long_id = "x" * 200  # the request passes 64 bytes: the server cannot read its id
    done = run(netmodel_bin, runtime, "call", "follow", "kind=artist", f"id={long_id}", timeout=20)
    assert done.returncode == 1 and done.stdout == "", done
    assert "-32600" in done.stderr and "--max-message-bytes" in done.stderr, done.stderr

    watched = run(netmodel_bin, runtime, "watch", f"entity:artist/{long_id}", timeout=20)
    assert watched.returncode == 1 and watched.stdout == "", watched
    assert "-32600" in watched.stderr and "--max-message-bytes" in watched.stderr, watched.stderr

    # What fits is answered as before.
    assert run(netmodel_bin, runtime, "call", "stats").returncode == 0


@pytest.fixture
def elsewhere(socket_server, runtime):
    """A server on a socket that is not the default path: only --socket finds it."""
    path = runtime.root / "alt" / "nm.sock"
    socket_server(path, "--state-dir", str(runtime.root / "state"))
    return str(path)


def test_call_takes_its_options_in_any_order(netmodel_bin, runtime, elsewhere):
    assert run(netmodel_bin, runtime, "call", "stats").returncode == 1  # not at the default path
    for args in (
        ["call", "stats", f"--socket={elsewhere}"],
        ["call", "--timeout", "20000", "--socket", elsewhere, "stats"],
        ["call", f"--socket={elsewhere}", "--timeout=20000", "stats"],
        ["call", "follow", "kind=artist", f"--socket={elsewhere}", "id=banksy", "--timeout=20000", "await:=true"],
        ["call", f"--socket={elsewhere}", "--", "getFollowState", "kind=artist", "id=banksy"],
    ):
        done = run(netmodel_bin, runtime, *args)
        assert done.returncode == 0, (args, done.stderr)
        json.loads(done.stdout)
    state = json.loads(run(netmodel_bin, runtime, "call", "getFollowState", "kind=artist", "id=banksy",
                           f"--socket={elsewhere}").stdout)
    assert state["following"] is True

    for args in (["call", "--bogus", f"--socket={elsewhere}", "stats"], ["call", "stats", "--json"],
                 ["call", "stats", "--socket"], ["call", "stats", "--timeout=0"]):
        done = run(netmodel_bin, runtime, *args)
        assert done.returncode == 2, (args, done)
    assert "unknown option --bogus" in run(netmodel_bin, runtime, "call", "--bogus", "stats").stderr


@pytest.mark.timeout(120)
def test_watch_takes_its_options_in_any_order(netmodel_bin, runtime, elsewhere):
    watcher = subprocess.Popen(
        [str(netmodel_bin), "watch", "entity:artist/banksy", f"--socket={elsewhere}", "entity:gene"],
        env=runtime.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        readline = line_reader(watcher.stdout)
        line = readline(STEP)
        assert line, f"watch printed nothing: {watcher.poll()} {watcher.stderr.read() if line == '' else ''}"
        assert json.loads(line)["state"]["id"] == "banksy"
    finally:
        stop(watcher)
    done = run(netmodel_bin, runtime, "watch", "entity", "--bogus")
    assert done.returncode == 2 and "unknown option --bogus" in done.stderr, done


@pytest.mark.timeout(120)
def test_watch_keeps_ids_apart_that_differ_only_in_unicode_normalisation(netmodel_bin, runtime, server):
    # The same text to Swift's String ==, two ids to the API (issue 25: ids are bytes).
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    watcher, next_line = watch(netmodel_bin, runtime, f"entity:artist/{composed}", f"entity:artist/{decomposed}")
    try:
        snapshot = [next_line(), next_line()]
        assert all(line["seq"] == 0 for line in snapshot), snapshot
        assert sorted(line["state"]["id"] for line in snapshot) == sorted([composed, decomposed]), snapshot
    finally:
        stop(watcher)


def test_an_error_text_reaches_the_terminal_escaped(netmodel_bin, runtime, elsewhere):
    # The server's -32601 quotes the method name; call prints that message on stderr.
    forged = "no\x1b]0;pwned\x07Such\nnetmodel: error: forged"
    done = run(netmodel_bin, runtime, "call", f"--socket={elsewhere}", "--", forged)
    assert done.returncode == 1, done
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr, repr(done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("netmodel: error -32601"), repr(done.stderr)
    assert "\\x1b]0;pwned\\x07Such\\nnetmodel: error: forged" in lines[0], repr(done.stderr)
