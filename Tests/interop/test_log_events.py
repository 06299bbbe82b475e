"""The log of a real session (docs/operations.md "Logs"): the binary on the REST backend against the
Artsy demo server, with a 401 then a token, five refused follows, a refused read, a rate
limit, a list that stops paging, evictions under a small --max-entities, and two
connections (stdio and socket) naming themselves in `initialize`. At the default level
each of these is one line at its level, with its fields, in the text form and as JSON;
text from outside (an API's message, a client's name, a cursor) forges no line.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections import Counter

import pytest

import rpcio
from test_bounds import CURSOR_FEED, follow_object
from test_rest import Artsy, artsy, rest  # noqa: F401  (fixtures)

pytestmark = pytest.mark.timeout(120)

TOKEN = "tok-log-3f1a"
UNAUTHORIZED = -32003
FORGED_LINE = "netmodel: error: forged"
FORGED = f"x\n{FORGED_LINE}\x1b]0;owned\x07\x1b[2J\u009b31m\r"
# How the text form shows it: every control made visible.
SHOWN = r"x\nnetmodel: error: forged\x1b]0;owned\x07\x1b[2J\u{9B}31m\r"
REFUSED = [f"nobody-{n}" for n in range(5)]
# The sentence of each event in the text form (the JSON form names the event).
SENTENCES = [
    ("listening", "listening on "),
    ("connection.open", "a connection opened"),
    ("connection.client", "a client said who it is"),
    ("connection.close", "a connection closed"),
    ("credentials.wait", "the API refused the credentials: the intent waits for credentials (configure authToken)"),
    ("credentials.resume", "credentials changed: what waited for them is sent again"),
    ("rollback", "the API refused a follow: rolled back to what it last confirmed"),
    ("rollback", "gave up on a follow after "),
    ("refusal", "the API refused a read"),
    ("ratelimit.hold", "the API asked for a pause: every request to it waits"),
    ("ratelimit.end", "the API's rate limit ended: held requests go out"),
    ("list.stalled", "a list did not advance: it stopped paging"),
    ("token.none", "no auth token at start (until configure sets one)"),
    ("token.source", "the auth token was read at start"),
    ("eviction", "evicted under pressure (over --max-entities, --max-lists or --max-held-bytes), least recently used first"),
]
FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^ "]+)(?: |$)')


def parse_text(line: str) -> dict:
    """A text line as the JSON form's object (values as text shows them, unquoted)."""
    match = re.match(r"netmodel: (debug|info|warn|error): (.*)$", line)
    assert match, f"not a log line: {line!r}"
    level, rest = match.groups()
    sentence, _, fields_text = rest.partition("; ")
    event = {"level": level, "message": sentence}
    for name, value in FIELD.findall(fields_text):
        if value.startswith('"'):
            value = value[1:-1].replace('\\"', '"')
        elif re.fullmatch(r"-?\d+", value):
            value = int(value)
        elif value in ("true", "false"):
            value = value == "true"
        event[name] = value
    names = [name for name, sentence_start in SENTENCES if sentence.startswith(sentence_start)]
    event["event"] = names[0] if names else "message"
    return event


def read_log(server, fmt: str) -> list[dict]:
    text = server.stderr_path.read_bytes().decode("utf-8")
    assert text.endswith("\n"), "the log ends with its own newline"
    lines = text[:-1].split("\n")
    for control in ("\x1b", "\x07", "\r", "\u009b"):
        assert control not in text, f"{control!r} reached the log raw"
    events = []
    for line in lines:
        assert not line.startswith(FORGED_LINE), f"a forged line: {line!r}"
        if fmt == "json":
            event = json.loads(line)
            assert set(event) >= {"time", "level", "event", "message"}, event
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", event["time"]), event
            # The same sentence as the text form's.
            sentences = [start for name, start in SENTENCES if name == event["event"]]
            assert not sentences or any(event["message"].startswith(start) for start in sentences), event
        else:
            event = parse_text(line)
        events.append(event)
    return events


def wait_for_event(server, fmt: str, name: str, count: int = 1, timeout: float = 15) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        events = read_log(server, fmt)
        if sum(e["event"] == name for e in events) >= count or time.monotonic() > deadline:
            return events
        time.sleep(0.05)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_session_logs_each_event_once_at_its_level(artsy, rest, runtime, connect, fmt):
    api = artsy(token=TOKEN)
    socket_path = runtime.root / "log.sock"
    server = rest(api, f"--socket={socket_path}", "--max-entities", 8, "--log-format", fmt, lists=CURSOR_FEED,
                  retry={"maxRetries": 1, "baseDelayMs": 50, "maxDelayMs": 100})
    rpcio.wait_for_socket(server, socket_path)
    c = server.conn
    c.result("initialize", {"clientInfo": {"name": "log-test stdio", "version": "1.2"}})
    # No token yet: the follow waits for credentials; the token ends the wait.
    reply = c.call("follow", {"kind": "artist", "id": "banksy", "await": True})
    assert reply["error"]["code"] == UNAUTHORIZED, reply
    c.result("configure", {"authToken": TOKEN})
    assert rpcio.wait_for(lambda: "banksy" in api.control("GET", "follows").get("artist", []), 10), api.log()
    # Five refused follows, one with an API message that tries to forge a line.
    api.faults({"method": "POST", "status": 404, "body": {"error": "Artist Not Found"}, "times": 4},
               {"method": "POST", "status": 404, "body": {"error": FORGED}, "times": 1})
    for slug in REFUSED:
        assert c.call("follow", {"kind": "artist", "id": slug, "await": True})["error"], slug
    # Retries given up: the API stays unavailable past the policy's one retry.
    api.faults({"method": "POST", "status": 503, "body": {"error": "Down"}, "times": 2})
    assert c.call("follow", {"kind": "artist", "id": "unlucky", "await": True})["error"]
    # A refused read, asked twice: one line (the entity's error did not change).
    api.faults({"method": "GET", "path": "follow/genes", "status": 410, "body": {"error": "Gone"}, "times": 2})
    for _ in range(2):
        assert c.call("getFollowState", {"kind": "gene", "id": "ghost"})["error"]
    # A rate limit: one line when the hold starts, one when it ends.
    # The calls it holds add nothing.
    api.faults({"method": "POST", "status": 429, "headers": {"Retry-After": "1"}, "times": 1})
    c.result("follow", {"kind": "artist", "id": "kaws"})
    assert rpcio.wait_for(lambda: any(entry["status"] == 429 for entry in api.log()), 10), api.log()
    for slug in ("yayoi-kusama", "keith-haring"):
        c.result("follow", {"kind": "artist", "id": slug})
    held = {"kaws", "yayoi-kusama", "keith-haring"}
    assert rpcio.wait_for(lambda: held <= set(api.control("GET", "follows").get("artist", [])), 10), api.log()
    wait_for_event(server, fmt, "ratelimit.end")
    # A list whose cursor never advances, the cursor an attempt at a forged line.
    api.faults({"path": "follow/artists$", "status": 200, "times": None,
                "body": {"items": [follow_object("a")], "next": FORGED}})
    assert c.result("fetchList", {"list": "artistFeed"})["hasMore"] is True
    assert c.result("fetchList", {"list": "artistFeed", "page": "next"})["state"] == "failure"
    api.control("DELETE", "faults")
    # More entities than --max-entities: evicted, and said in one line.
    for n in range(30):
        c.result("getFollowState", {"kind": "gene", "id": f"g{n}"})
    wait_for_event(server, fmt, "eviction")
    # A second client, on the socket, whose name tries to forge a line.
    other = connect(socket_path)
    other.result("initialize", {"clientInfo": {"name": FORGED, "version": "9"}})
    rpcio.close_socket(other.sock)
    # The socket client that named itself; wait_for_socket's probe named none: its open
    # and close are debug lines.
    wait_for_event(server, fmt, "connection.close", 1)
    server.close_stdin()
    server.proc.wait(15)

    events = read_log(server, fmt)
    shown = (lambda text: text) if fmt == "json" else (lambda text: text.replace("\n", "\\n") if False else text)
    forged = FORGED if fmt == "json" else SHOWN

    def same(value, expected):
        # The text form does not tell a number from a string of digits.
        return value == expected if fmt == "json" else str(value) == str(expected)

    def only(name, **fields):
        found = [e for e in events if e["event"] == name and all(same(e.get(k), v) for k, v in fields.items())]
        assert len(found) == 1, f"{name} {fields}: {found}\n{events}"
        return found[0]

    assert only("listening", path=str(socket_path))["level"] == "info"
    assert only("connection.open", connection=1, transport="stdio")["level"] == "info"
    assert only("connection.client", connection=1, client="log-test stdio", clientVersion="1.2")
    assert only("connection.client", client=forged, clientVersion="9")
    assert only("connection.close", client=forged)["level"] == "info"
    assert only("connection.close", connection=1, client="log-test stdio")
    wait = only("credentials.wait")
    assert (wait["level"], wait["kind"], wait["id"], wait["status"]) == ("warn", "artist", "banksy", 401), wait
    assert only("credentials.resume", intents=1, reads=0)["level"] == "info"
    rollbacks = [e for e in events if e["event"] == "rollback"]
    assert [e["id"] for e in rollbacks] == REFUSED + ["unlucky"], rollbacks
    gave_up = rollbacks.pop()
    assert (gave_up["failure"], gave_up["retries"]) == ("unavailable", 1), gave_up
    assert gave_up["message"].startswith("gave up on a follow after 1 retry"), gave_up
    assert all(e["level"] == "warn" and e["kind"] == "artist" and e["status"] == 404 for e in rollbacks), rollbacks
    assert all(e["error"].endswith("Artist Not Found") for e in rollbacks[:4]), rollbacks
    assert rollbacks[4]["error"] == "HTTP 404 from POST /api/v1/me/follow/artist: " + forged, rollbacks[4]
    refusal = only("refusal")
    assert (refusal["level"], refusal["kind"], refusal["id"], refusal["status"]) == ("warn", "gene", "ghost", 410)
    hold = only("ratelimit.hold")
    assert (hold["level"], hold["api"], hold["status"], hold["why"]) == ("warn", api.url, 429, "Retry-After: 1"), hold
    assert 900 <= hold["ms"] <= 1000 and re.fullmatch(r"\d{4}-.*\.\d{3}Z", hold["until"]), hold
    end = only("ratelimit.end", api=api.url)
    assert end["level"] == "info" and end["waiting"] >= 2, end
    stalled = only("list.stalled", list="artistFeed")
    assert stalled["level"] == "warn" and forged in stalled["reason"], stalled
    # The first pass at once; the rest summed, told at the stop when it came within the minute.
    evictions = [e for e in events if e["event"] == "eviction"]
    assert 1 <= len(evictions) <= 2 and (len(evictions) == 1 or events[-1] is evictions[1]), evictions
    assert all(e["level"] == "info" and e["entities"] >= 1 and e["passes"] >= 1 for e in evictions), evictions
    # Every line is one of these events: nothing unnamed, nothing for each call.
    # (three connections: stdio, wait_for_socket's probe, the second client)
    assert Counter(e["event"] for e in events) == {
        "listening": 1, "connection.open": 1, "connection.client": 2, "connection.close": 2, "credentials.wait": 1,
        "credentials.resume": 1, "rollback": 6, "refusal": 1, "ratelimit.hold": 1, "ratelimit.end": 1,
        "list.stalled": 1, "eviction": len(evictions), "token.none": 1}, events
    # Nothing else said at warn or above.
    assert {e["event"] for e in events if e["level"] in ("warn", "error")} == {
        "credentials.wait", "rollback", "refusal", "ratelimit.hold", "list.stalled"}, events
    print("\n".join(map(str, events)))


def test_a_reset_header_hold_says_which_headers(demo, serve_rest):
    """GitHub's primary limit: a 403 whose x-ratelimit-remaining is 0 holds until its
    x-ratelimit-reset, and the one line says so (JSON: the values as sent)."""
    from test_github import TOKEN as GITHUB_TOKEN, GitHub, replies, send

    github = demo(GitHub, GITHUB_TOKEN)
    server = serve_rest(github.config(), "--log-format", "json", state="state-github",
                        env={"GITHUB_TOKEN": GITHUB_TOKEN})
    c = server.conn
    reset = github.control("primary-limit", {"reset_in": 2})["reset"]
    send(c, 1, "follow", {"kind": "user", "id": "octocat", "await": True})
    send(c, 2, "follow", {"kind": "repo", "id": "octocat/hello-world", "await": True})
    got = replies(c, 2)
    assert got[1]["result"]["confirmed"] is True and got[2]["result"]["confirmed"] is True, got
    events = wait_for_event(server, "json", "ratelimit.end")
    holds = [e for e in events if e["event"] == "ratelimit.hold"]
    assert len(holds) == 1, events
    hold = holds[0]
    assert (hold["level"], hold["api"], hold["status"]) == ("warn", github.url, 403), hold
    assert f"x-ratelimit-reset: {reset}" in hold["why"] and "x-ratelimit-remaining: 0" in hold["why"], hold
    assert 0 < hold["ms"] <= 3000, hold
    assert [e["event"] for e in events if e["event"].startswith("ratelimit.")] == ["ratelimit.hold", "ratelimit.end"]


def test_levels_format_and_a_stop(spawn, netmodel_bin, runtime):
    """`--log-level warn` keeps the info lines out; a stdio session open at SIGTERM says
    its close; a bad `--log-format` is a usage error."""
    quiet = spawn("--log-level", "warn", "--log-format", "json")
    quiet.conn.result("initialize", {"clientInfo": {"name": "quiet"}})
    quiet.conn.result("stats")
    quiet.proc.send_signal(signal.SIGTERM)
    assert quiet.proc.wait(15) == 0
    assert quiet.stderr_path.read_text() == ""
    server = spawn()
    server.conn.result("initialize", {"clientInfo": {"name": "ed", "version": "0.1"}})
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(15) == 0
    lines = server.stderr_path.read_text().splitlines()
    assert lines[-1] == "netmodel: info: a connection closed (the server stops); connection=1 client=ed clientVersion=0.1"
    bad = subprocess.run([str(netmodel_bin), "serve", "--log-format", "yaml"], capture_output=True, text=True,
                         env=runtime.env, timeout=15, stdin=subprocess.DEVNULL)
    assert bad.returncode == 2 and "--log-format must be text or json, not yaml" in bad.stderr, bad


def test_a_flood_of_evictions_is_one_line(spawn, runtime):
    """Hundreds of eviction passes (one entity over --max-entities at a time) say one
    line at once; the rest is summed for the next line, a minute later at most."""
    server = spawn("--max-entities", 4, "--log-format", "json", "--state-dir", runtime.root / "flood")
    c = server.conn
    for n in range(300):
        c.result("getFollowState", {"kind": "artist", "id": f"a{n}"})
    evicted = c.result("stats")["entitiesEvicted"]
    events = read_log(server, "json")
    evictions = [e for e in events if e["event"] == "eviction"]
    assert len(evictions) == 1 and evictions[0]["passes"] == 1, evictions
    assert evicted > 100 * evictions[0]["entities"], (evicted, evictions)
    # A stop within the minute still tells the rest: the two lines sum to every eviction.
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(15) == 0
    evictions = [e for e in read_log(server, "json") if e["event"] == "eviction"]
    assert len(evictions) == 2 and evictions[0]["entities"] + evictions[1]["entities"] == evicted, evictions
    assert evictions[0]["passes"] + evictions[1]["passes"] > 100, evictions


def test_a_flood_of_failing_notifications_is_bounded(socket_server, runtime):
    """A peer that sends failing notifications in a loop gets ten lines a minute, and one
    line counting the rest when it goes (stdio and socket alike)."""
    server, path = socket_server(runtime.root / "flood.sock", "--log-format", "json", no_stdio=False)
    socket_conn, sock = rpcio.socket_conn(str(path), rpcio.NDJSON, lambda: "")
    for c in (server.conn, socket_conn):
        for _ in range(40):
            c.notify("follow", {"kind": "artist"})
        assert c.result("stats")["notificationsReceived"] >= 40
    rpcio.close_socket(sock)
    wait_for_event(server, "json", "notification.suppressed")
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(15) == 0
    events = read_log(server, "json")
    # stdio, wait_for_socket's probe, the socket peer
    connections = sorted({e["connection"] for e in events if e["event"] == "notification.failed"})
    assert len(connections) == 2, events
    for connection in connections:
        failed = [e for e in events if e["event"] == "notification.failed" and e["connection"] == connection]
        told = [e for e in events if e["event"] == "notification.suppressed" and e["connection"] == connection]
        assert len(failed) == 10 and "id is required" in failed[0]["error"], events
        assert [e["count"] for e in told] == [30], told
        assert told[0]["level"] == "warn" and "10 a minute" in told[0]["message"], told
