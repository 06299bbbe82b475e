"""`netmodel top` against the real binary: `--json` lines while follows happen, and the
screen in a pseudo-terminal (header, rows, colour, the terminal given back on q and
on Ctrl-C). The figures come from the server's `stats` topic (schema/openrpc.json,
x-notifications "statsChanged")."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import queue
import select
import signal
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest

from test_compliance import _openrpc, _validate

pytestmark = pytest.mark.timeout(60)


def poll_until(check, deadline_s, what):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    pytest.fail(f"no {what} within {deadline_s}s")


class JsonTop:
    """`netmodel top --json`, its lines read by a thread."""

    def __init__(self, netmodel_bin, sock, env):
        self.proc = subprocess.Popen(
            [str(netmodel_bin), "top", f"--socket={sock}", "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: "queue.Queue[dict]" = queue.Queue()
        self.seen: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.put(json.loads(raw))

    def until(self, check, deadline_s, what):
        end = time.monotonic() + deadline_s
        for line in self.seen:
            if check(line):
                return line
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            self.seen.append(line)
            if check(line):
                return line
        pytest.fail(f"no line with {what} within {deadline_s}s; last: {self.seen[-1:]}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=5)


def test_json_lines_follow_the_servers_figures(socket_server, connect, runtime, netmodel_bin, repo_root):
    # Each backend call takes 1.5 s: follows are pending across at least one push.
    server, sock = socket_server(None, "--simulate", "latency=1500", "--seed", "1")
    top = JsonTop(netmodel_bin, sock, runtime.env)
    try:
        first = top.until(lambda s: True, 10, "a first snapshot")
        doc = _openrpc(repo_root)
        stats = {k: v for k, v in first.items() if k not in ("rates", "inspection")}
        _validate(doc, {"$ref": "#/components/schemas/Stats"}, stats, "top --json line")
        _validate(doc, {"$ref": "#/components/schemas/InspectResult"}, first["inspection"], "top --json inspection")
        rates = first["rates"]
        assert set(rates) >= {"requests", "backendCalls", "retries", "rollbacks", "endpoints"}
        assert first["subscriptions"] == 1
        mine = [c for c in first["connections"]["list"] if c["subscriptions"] == 1]
        assert len(mine) == 1 and mine[0]["transport"] == "socket", first["connections"]

        conn = connect(sock)
        for i in range(5):
            state = conn.result("follow", {"kind": "artist", "id": f"a{i}"})
            assert state["pending"] is True
        pending = top.until(lambda s: s["entitiesPending"] == 5, 5, "five entities pending")
        assert pending["entities"] == 5
        listed = top.until(lambda s: s["inspection"]["entities"]["total"] == 5, 5, "five entities inspected")
        assert all("pending" in e["states"] for e in listed["inspection"]["entities"]["list"]), listed["inspection"]
        assert pending["requests"]["byMethod"]["follow"] == 5
        settled = top.until(
            lambda s: s["entitiesPending"] == 0 and s["backend"]["mutations"] >= 5, 10, "the follows settled"
        )
        assert settled["entities"] == 5
        assert any(s["rates"]["backendCalls"] > 0 for s in top.seen), [s["rates"] for s in top.seen]

        # At most one push a second (the server's own clock), and none while nothing changes.
        times = [s["uptimeMs"] for s in top.seen]
        assert all(b - a >= 900 for a, b in zip(times, times[1:])), times
        count = len(top.seen)
        time.sleep(2.5)
        while not top.lines.empty():
            top.seen.append(top.lines.get())
        assert len(top.seen) == count, [s["uptimeMs"] for s in top.seen[count:]]

        top.proc.send_signal(signal.SIGINT)
        assert top.proc.wait(timeout=5) == 0, top.proc.stderr.read()
    finally:
        top.stop()


def test_json_exits_1_when_the_server_goes_away(socket_server, runtime, netmodel_bin):
    server, sock = socket_server(None)
    top = JsonTop(netmodel_bin, sock, runtime.env)
    try:
        top.until(lambda s: True, 10, "a first snapshot")
        server.stop()
        assert top.proc.wait(timeout=10) == 1
        assert b"closed the connection" in top.proc.stderr.read()
    finally:
        top.stop()


def test_json_ends_when_its_reader_goes(socket_server, connect, runtime, netmodel_bin):
    """`netmodel top --json | head -1`: once stdout is gone, the next push ends it."""
    server, sock = socket_server(None)
    proc = subprocess.Popen(
        [str(netmodel_bin), "top", f"--socket={sock}", "--json"], env=runtime.env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert json.loads(proc.stdout.readline())["subscriptions"] == 1
        proc.stdout.close()
        connect(sock).result("follow", {"kind": "artist", "id": "banksy"})  # figures change: a push
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=5)


def test_an_unknown_option_is_a_usage_error(netmodel_bin):
    out = subprocess.run([str(netmodel_bin), "top", "--bogus"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "Usage: netmodel top" in out.stderr


def test_options_come_in_any_order(socket_server, runtime, netmodel_bin):
    # Not the default path: only --socket finds it.
    server, sock = socket_server(runtime.root / "alt" / "nm.sock")
    for args in (["--json", f"--socket={sock}"], ["--json", "--socket", str(sock)], [f"--socket={sock}", "--json"]):
        proc = subprocess.Popen([str(netmodel_bin), "top", *args], env=runtime.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            line = proc.stdout.readline()
            assert line, (args, proc.wait(timeout=10), proc.stderr.read())
            assert json.loads(line)["subscriptions"] >= 1
        finally:
            proc.kill()
            proc.wait(timeout=5)
    for args in (["--json", "--bogus"], [f"--socket={sock}", "extra"], ["--json=yes"]):
        out = subprocess.run([str(netmodel_bin), "top", *args], capture_output=True, text=True, timeout=30)
        assert out.returncode == 2 and "Usage: netmodel top" in out.stderr, (args, out)


@pytest.mark.parametrize("mode", [["--json"], []])
def test_an_error_without_an_id_ends_top(socket_server, runtime, netmodel_bin, mode):
    # Its subscribe passes 64 bytes: the server cannot read its id and answers id null.
    server, sock = socket_server(None, "--max-message-bytes", 64)
    out = subprocess.run([str(netmodel_bin), "top", f"--socket={sock}", *mode], env=runtime.env,
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 1 and out.stdout == "", out
    assert "-32600" in out.stderr and "--max-message-bytes" in out.stderr, out.stderr


class PtyTop:
    """`netmodel top` on a pseudo-terminal of 30 rows by 100 columns."""

    def __init__(self, netmodel_bin, sock, env, rows=30, columns=100):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: stdin, stdout and stderr are the terminal
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
                os.execve(str(netmodel_bin), ["netmodel", "top", f"--socket={sock}"], env)
            finally:
                os._exit(127)
        self.out = b""
        self.status = None

    def read_until(self, needle: bytes, deadline_s: float) -> bytes:
        end = time.monotonic() + deadline_s
        while needle not in self.out and time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                self.out += chunk
        assert needle in self.out, f"{needle!r} not shown; screen so far: {self.out[-2000:]!r}"
        return self.out

    def wait(self, deadline_s: float) -> int:
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            # Keep reading: a full terminal buffer would block its last writes.
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.out += os.read(self.fd, 65536)
                except OSError:
                    pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
                return os.waitstatus_to_exitcode(status)
        pytest.fail(f"top did not exit; screen: {self.out[-2000:]!r}")

    def close(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except ProcessLookupError:
                pass
        os.close(self.fd)


@pytest.mark.parametrize("quit_with", ["q", "SIGINT"])
def test_screen_in_a_pseudo_terminal(socket_server, connect, runtime, netmodel_bin, quit_with):
    server, sock = socket_server(None)
    conn = connect(sock)
    instance = conn.result("stats")["instance"]
    top = PtyTop(netmodel_bin, sock, runtime.env)
    try:
        top.read_until(b"\x1b[?1049h", 10)  # the alternate screen
        screen = top.read_until(f"netmodel top \u2014 instance {instance}".encode(), 10)
        assert b"\x1b[1;7m" in screen, "the header is in reverse video on a terminal"
        top.read_until(b"CONNECTION", 5)
        # Echo and line editing are off while it runs, so q needs no Enter.
        assert not termios.tcgetattr(top.fd)[3] & termios.ECHO
        conn.result("follow", {"kind": "artist", "id": "banksy"})
        conn.result("follow", {"kind": "artist", "id": "kaws"})
        top.read_until(b"entities 2", 5)
        lines = top.out.split(b"\x1b[H")[-1].split(b"\n")
        assert len(lines) <= 30 and all(len(strip_escapes(line)) <= 100 for line in lines), lines
        if quit_with == "q":
            os.write(top.fd, b"q")
        else:
            os.kill(top.pid, signal.SIGINT)
        assert top.wait(5) == 0
        assert top.out.endswith(b"\x1b[?25h\x1b[?1049l"), top.out[-200:]
        assert termios.tcgetattr(top.fd)[3] & termios.ECHO, "the terminal echoes again"
    finally:
        top.close()


def test_the_screen_tells_the_ledgers_failed_intents(socket_server, connect, runtime, netmodel_bin):
    server, sock = socket_server(None, "--simulate", "latency=10,failure=1,status=422")
    conn = connect(sock)
    top = PtyTop(netmodel_bin, sock, {**runtime.env, "NO_COLOR": "1"})
    try:
        top.read_until(b"intents in the ledger 0  open 0  failed 0  dropped 0", 10)
        assert conn.call("follow", {"kind": "artist", "id": "kaws", "await": True})["error"]["code"] == -32002
        top.read_until(b"intents in the ledger 1  open 0  failed 1  dropped 0", 10)
        os.write(top.fd, b"q")
        assert top.wait(5) == 0
    finally:
        top.close()


def test_no_color_keeps_the_screen_plain(socket_server, runtime, netmodel_bin):
    server, sock = socket_server(None)
    top = PtyTop(netmodel_bin, sock, {**runtime.env, "NO_COLOR": "1"})
    try:
        screen = top.read_until(b"CONNECTION", 10)
        assert b"netmodel top" in screen and b"\x1b[1;7m" not in screen and b"\x1b[1m" not in screen
        os.write(top.fd, b"q")
        assert top.wait(5) == 0
    finally:
        top.close()


def test_the_screen_follows_a_resize(socket_server, runtime, netmodel_bin):
    server, sock = socket_server(None)
    top = PtyTop(netmodel_bin, sock, runtime.env)
    try:
        top.read_until(b"CONNECTION", 10)
        wide = max(len(strip_escapes(line)) for line in top.out.split(b"\x1b[H")[-1].split(b"\n"))
        assert wide > 40, top.out[-500:]
        # The kernel sends SIGWINCH to the terminal's foreground process: top redraws.
        fcntl.ioctl(top.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 8, 40, 0, 0))
        top.out = b""
        top.read_until(b"\x1b[J", 5)
        frame = top.out.split(b"\x1b[H")[-1]
        lines = frame.split(b"\n")
        assert len(lines) <= 8 and all(len(strip_escapes(line)) <= 40 for line in lines), lines
        os.write(top.fd, b"q")
        assert top.wait(5) == 0
    finally:
        top.close()


def strip_escapes(line: bytes) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line.decode("utf-8", "replace")).rstrip("\r")


def test_json_shows_rest_calls_in_flight_per_endpoint_and_their_latency(runtime, netmodel_bin, spawn, connect):
    """With the rest backend against the Artsy demo server, whose follows answer after
    1.5 s: the follows show in flight under `artist.follow`, then finished with their
    latency (checked against the delay the server was told to add)."""
    from test_rest import CONFIG, Artsy

    api = Artsy(runtime.root)
    try:
        config = json.loads(CONFIG.read_text())
        config["environments"]["local"] = api.url
        path = runtime.root / "config.json"
        path.write_text(json.dumps(config))
        sock = runtime.root / "s.sock"
        spawn("--backend", "rest", "--config", path, "--state-dir", runtime.root / "state-rest",
              f"--socket={sock}", "--no-stdio", stdio=False)
        poll_until(lambda: sock.exists(), 10, "socket")
        api.faults({"method": "POST", "path": "^/api/v1/me/follow/artist$", "delay_ms": 1500, "times": None})
        top = JsonTop(netmodel_bin, sock, runtime.env)
        try:
            top.until(lambda s: True, 10, "a first snapshot")
            conn = connect(sock)
            for id in ("banksy", "kaws"):
                assert conn.result("follow", {"kind": "artist", "id": id})["pending"] is True

            def endpoint(s):
                return s["backend"]["http"]["endpoints"].get("artist.follow", {})

            busy = top.until(lambda s: endpoint(s).get("inFlight") == 2, 5, "two follows in flight")
            assert busy["entitiesPending"] == 2
            done = top.until(lambda s: endpoint(s).get("finished") == 2 and endpoint(s)["inFlight"] == 0, 10,
                             "the follows answered")
            assert 1400 <= endpoint(done)["latencyLastMs"] < 5000, endpoint(done)
            assert endpoint(done)["latencyTotalMs"] >= 2800, endpoint(done)
            assert done["rates"]["endpoints"]["artist.follow"]["latencyMs"] >= 1400, done["rates"]
            assert api.route("POST /api/v1/me/follow/artist") == 2
        finally:
            top.stop()
    finally:
        api.stop()


def last_frame(top: PtyTop) -> list[str]:
    """The lines of the last complete frame drawn, escapes taken out."""
    frames = top.out.split(b"\x1b[H")
    frame = frames[-1] if frames[-1].endswith(b"\x1b[K") or frames[-1].endswith(b"\x1b[J") else frames[-2]
    return [strip_escapes(line) for line in frame.split(b"\n")]


def frame_until(top: PtyTop, check, deadline_s: float, what: str) -> list[str]:
    """Reads frames until one passes `check` (given its lines); that frame's lines."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        ready, _, _ = select.select([top.fd], [], [], 0.1)
        if ready:
            try:
                top.out += os.read(top.fd, 65536)
            except OSError:
                break
        if b"\x1b[H" in top.out:
            lines = last_frame(top)
            if check(lines):
                return lines
    last = last_frame(top) if b"\x1b[H" in top.out else top.out[-500:]
    pytest.fail(f"no frame with {what} within {deadline_s}s; last: {last}")


def shows(text):
    return lambda lines: any(text in line for line in lines)


def test_views_switch_by_key_filter_by_kind_and_sort(socket_server, connect, runtime, netmodel_bin):
    server, sock = socket_server(None, "--simulate", "latency=30000", "--seed", "1")
    conn = connect(sock)
    conn.result("initialize", {"processId": None, "clientInfo": {"name": "pty-test-editor"}, "capabilities": {}})
    conn.result("follow", {"kind": "artist", "id": "banksy"})
    conn.result("follow", {"kind": "gene", "id": "pop"})
    conn.result("follow", {"kind": "artist", "id": "kaws"})
    top = PtyTop(netmodel_bin, sock, runtime.env, rows=24, columns=90)
    try:
        frame_until(top, shows("view: overview"), 10, "the keys' line")
        os.write(top.fd, b"e")
        lines = frame_until(top, shows("KIND"), 5, "the entities view")
        rows = [line for line in lines if line.startswith(("artist", "gene"))]
        assert [row.split()[:3] for row in rows] == [
            ["artist", "banksy", "pending"], ["gene", "pop", "pending"], ["artist", "kaws", "pending"]], lines
        assert any("entities pending, reading, failed, requested or waiting: 3" in line for line in lines), lines
        assert "outbox: 3" in "\n".join(lines)
        # k: the first kind only (artist); the server answers for that kind alone.
        os.write(top.fd, b"k")
        lines = frame_until(top, lambda l: shows("kind: artist")(l) and shows("kaws")(l) and not shows("gene ")(l),
                            5, "artists only")
        assert [line.split()[1] for line in lines if line.startswith("artist")] == ["banksy", "kaws"], lines
        os.write(top.fd, b"k")  # gene
        frame_until(top, lambda l: shows("kind: gene")(l) and shows("pop")(l)
                    and not any(x.startswith("artist") for x in l), 5, "genes")
        os.write(top.fd, b"a")
        frame_until(top, shows("kind: all"), 5, "all kinds again")
        # s: by kind, then id.
        os.write(top.fd, b"s")
        lines = frame_until(top, lambda l: shows("sort: kind")(l) and shows("pop")(l), 5, "sorted by kind")
        assert [line.split()[1] for line in lines if line.startswith(("artist", "gene"))] == ["banksy", "kaws", "pop"]
        os.write(top.fd, b"c")
        lines = frame_until(top, shows("CLIENT"), 5, "the connections view")
        assert any("pty-test-editor" in line and "socket" in line for line in lines), lines
        assert any("stats" in line for line in lines), "top's own subscription and its topic"
        os.write(top.fd, b"l")
        frame_until(top, shows("lists held: 0"), 5, "the lists view")
        os.write(top.fd, b"h")
        frame_until(top, shows("holds: none"), 5, "the holds view")
        os.write(top.fd, b"\t")
        frame_until(top, shows("CONNECTION"), 5, "tab: back to the overview")
        for lines in [last_frame(top)]:
            assert len(lines) <= 24 and all(len(line) <= 90 for line in lines), lines
        os.write(top.fd, b"q")
        assert top.wait(5) == 0
    finally:
        top.close()


def test_the_uptime_moves_while_nothing_else_does(socket_server, runtime, netmodel_bin):
    server, sock = socket_server(None)
    top = PtyTop(netmodel_bin, sock, runtime.env)
    try:
        def uptime(lines):
            import re

            found = re.search(r", up (\d+)m(\d\d)s,", lines[0])
            return found and int(found.group(1)) * 60 + int(found.group(2))

        first = uptime(frame_until(top, lambda l: uptime(l) is not None, 10, "the uptime"))
        later = uptime(frame_until(top, lambda l: (uptime(l) or 0) >= first + 2, 6, "the uptime two seconds on"))
        assert later >= first + 2
        os.write(top.fd, b"q")
        assert top.wait(5) == 0
    finally:
        top.close()


def test_the_entities_view_escapes_the_servers_strings_and_fits_the_width(socket_server, connect, runtime,
                                                                          netmodel_bin):
    server, sock = socket_server(None, "--simulate", "latency=30000")
    conn = connect(sock)
    hostile = "evil\x1b]0;owned\x07\u009b2J" + "x" * 200
    conn.result("follow", {"kind": "artist", "id": hostile})
    top = PtyTop(netmodel_bin, sock, runtime.env, rows=12, columns=60)
    try:
        os.write(top.fd, b"e")
        lines = frame_until(top, shows("artist  evil"), 10, "the hostile id")
        assert all(len(line) <= 60 for line in lines) and len(lines) <= 12, lines
        row = next(line for line in lines if line.startswith("artist"))
        assert "evil\\x1b]0;owned\\x07" in row and "\u2026" in row, row  # escaped, and cut with an ellipsis
        assert b"\x07" not in top.out and "\u009b".encode() not in top.out and b"\x1b]0" not in top.out
        os.write(top.fd, b"q")
        assert top.wait(5) == 0
    finally:
        top.close()


def test_the_holds_view_shows_the_rate_limit_and_the_calls_waiting(demo, serve_rest, runtime, netmodel_bin):
    from test_inspect import rate_limited_artsy

    api, server, conn, sock, reset = rate_limited_artsy(demo, serve_rest, runtime, 15)
    conn.send(conn.request_obj("getFollowState", {"kind": "artist", "id": "kaws"}, id="held"))
    top = PtyTop(netmodel_bin, sock, runtime.env, rows=20, columns=120)
    try:
        lines = frame_until(top, shows("holds: "), 10, "the holds line of the overview")
        assert any("rate-limited until" in line and "(x-ratelimit-reset)" in line for line in lines), lines
        os.write(top.fd, b"h")
        lines = frame_until(top, shows("REQUEST"), 5, "the holds view")
        until = time.strftime("%H:%M:%S", time.localtime(reset))
        later = time.strftime("%H:%M:%S", time.localtime(reset + 1))
        assert any(f"rate-limited until {until}" in line or f"rate-limited until {later}" in line
                   for line in lines), (lines, until)
        assert any(line.startswith("user") and "GET http://127.0.0.1" in line for line in lines), lines
        assert any("waiting: 1" in line for line in lines), lines
        os.write(top.fd, b"q")
        assert top.wait(5) == 0
    finally:
        top.close()
