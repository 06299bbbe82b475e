"""Text from outside cannot forge log lines nor reach the terminal (docs/operations.md "Logs"): a
peer's names (over stdio and the socket) and an API's cursor and error text carry a line
break followed by a line of their own, ESC/OSC sequences and a C1 control; the real
binary's stderr must hold each line it writes as one line, escaped, and no raw control.
"""

from __future__ import annotations

import time

import pytest

import rpcio
from test_bounds import CURSOR_FEED, follow_object
from test_rest import Artsy, artsy, rest  # noqa: F401  (fixtures)

pytestmark = pytest.mark.timeout(90)

FORGED_LINE = "netmodel: error: forged"
FORGED = f"x\n{FORGED_LINE}\x1b]0;owned\x07\x1b[2J\u009b31m\r"
# How the log shows it: every control made visible, nothing else changed.
SHOWN = r"x\nnetmodel: error: forged\x1b]0;owned\x07\x1b[2J\u{9B}31m\r"
UNAUTHORIZED = -32003


def check_log(text: str, *says: str):
    """Every line is the log's own, no control is raw, and for each of `says` a line
    says it with the forged text shown escaped."""
    lines = text.split("\n")
    assert lines[-1] == "", "the log ends with its own newline"
    for line in lines[:-1]:
        assert line.split(": ", 1)[0] == "netmodel", f"a line not the log's own: {line!r}"
        assert not line.startswith(FORGED_LINE), f"a forged line: {line!r}"
    for control in ("\x1b", "\x07", "\r", "\u009b"):
        assert control not in text, f"{control!r} reached the log: {text!r}"
    for words in says:
        assert any(words in line and SHOWN in line for line in lines), f"no line says {words!r}: {text!r}"


def wait_for_log(server: rpcio.ServerProc, count: int, timeout: float = 10) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = server.stderr_path.read_text(errors="replace")
        if text.count("forged") >= count or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def send_forged_names(conn):
    # Warn: a notification that fails says its params' words.
    conn.send({"jsonrpc": "2.0", "method": "fetchList", "params": {"list": FORGED}})
    # Debug: an unknown notification is named (a peer could send a flood of them).
    conn.send({"jsonrpc": "2.0", "method": FORGED})
    conn.send({"jsonrpc": "2.0", "method": "initialize", "params": {"clientInfo": {"name": FORGED}}})
    conn.result("stats")  # answered after the notifications before it


@pytest.mark.parametrize("transport", ["stdio", "socket"])
def test_names_a_peer_sends_cannot_forge_log_lines(spawn, socket_server, connect, transport):
    if transport == "stdio":
        server = spawn("--log-level", "debug")
        conn = server.conn
    else:
        server, path = socket_server(None, "--log-level", "debug")
        conn = connect(path)
    send_forged_names(conn)
    check_log(wait_for_log(server, 2), "a notification failed", "ignored a notification")


def test_an_apis_cursor_and_error_text_cannot_forge_log_lines(artsy, rest):
    api = artsy()
    server = rest(api, "--log-level", "info", lists=CURSOR_FEED, retry={"maxRetries": 0})
    c = server.conn
    # A cursor that never advances: the list fails, and the warning names the cursor.
    api.faults({"path": "follow/artists$", "status": 200, "times": None,
                "body": {"items": [follow_object("a")], "next": FORGED}})
    first = c.result("fetchList", {"list": "artistFeed"})
    assert first["state"] == "loaded" and first["hasMore"] is True, first
    failed = c.result("fetchList", {"list": "artistFeed", "page": "next"})
    assert failed["state"] == "failure" and "did not advance" in failed["error"]["message"], failed
    # An API's own words for a 401: the intent waits for credentials, and says why.
    api.faults({"method": "POST", "status": 401, "body": {"error": FORGED}, "times": 1})
    reply = c.call("follow", {"kind": "artist", "id": "kaws", "await": True})
    assert reply["error"]["code"] == UNAUTHORIZED, reply
    check_log(wait_for_log(server, 2), "did not advance", "waits for credentials")
