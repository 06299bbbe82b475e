"""JSON-RPC 2.0 / transport compliance of the real binary, over the process
boundary (stdio in both framings, and the Unix socket).

Spec: docs/protocol.md "Talking to it" and "JSON-RPC, completely", and schema/openrpc.json.
Where a test pins down something the JSON-RPC spec leaves open, the comment
says why (usually: what a real client needs).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import threading
import time

import pytest

import rpcio
from rpcio import wait_for_socket
from rpcio import ABSENT, LSP, NDJSON

STATS_KEYS = {"uptimeMs", "connections", "requests", "notificationsReceived", "bytes", "errors"}


@pytest.fixture(params=[LSP, NDJSON])
def framing(request):
    return request.param


@pytest.fixture
def srv(spawn, framing):
    return spawn(framing=framing)


@pytest.fixture
def conn(srv):
    c = srv.conn
    # Establish the framing with a valid first message (detection looks at the
    # first non-whitespace byte of the connection).
    assert STATS_KEYS <= set(c.result("stats")), "stats result lacks keys"
    return c


def error_of(reply) -> dict:
    assert isinstance(reply, dict) and "error" in reply, f"expected an error response, got {reply!r}"
    return reply["error"]


def assert_error(reply, code: int, id=ABSENT) -> dict:
    err = error_of(reply)
    assert err["code"] == code, f"expected error {code}, got {reply!r}"
    if id is not ABSENT:
        assert reply["id"] == id and type(reply["id"]) is type(id), f"expected id {id!r}, got {reply!r}"
    return err


def follow_up(conn, what="the follow-up request"):
    """Prove the connection goes on, and that nothing else was queued before
    this reply: Conn.call takes the very next message and checks its id."""
    reply = conn.call("stats", id=f"follow-up-{time.monotonic_ns()}")
    assert "result" in reply, f"{what}: {reply!r}"
    return reply["result"]


# ==========================================================================
# initialize, stats, rpc.discover


def test_initialize_result(srv):
    r = srv.conn.result("initialize", {"processId": os.getpid(), "capabilities": {}})
    assert r["serverInfo"]["name"] == "netmodel"
    assert isinstance(r["serverInfo"]["version"], str) and r["serverInfo"]["version"]
    assert r["protocolVersion"] == "1.0"
    methods = r["capabilities"]["methods"]
    assert isinstance(methods, list) and all(isinstance(m, str) for m in methods)
    for m in ("initialize", "shutdown", "exit", "rpc.discover", "stats", "$/cancelRequest"):
        assert m in methods, f"{m} missing from {methods}"


def test_initialize_is_optional(srv):
    # scripts call methods at once
    assert STATS_KEYS <= set(srv.conn.result("stats"))


def test_stats_counts(srv):
    c = srv.conn
    c.result("initialize", {})
    s1 = c.result("stats")
    assert s1["requests"]["byMethod"]["initialize"] == 1, s1
    assert s1["requests"]["total"] >= 1, s1
    assert s1["connections"]["open"] >= 1 and s1["connections"]["total"] >= 1, s1
    assert s1["bytes"]["in"] > 0, s1
    assert isinstance(s1["uptimeMs"], int) and s1["uptimeMs"] >= 0, s1
    assert_error(c.call("noSuchMethod"), -32601)
    c.notify("someNotification")
    s2 = c.result("stats")
    assert s2["requests"]["total"] > s1["requests"]["total"], (s1, s2)
    assert s2["errors"]["byCode"]["-32601"] == 1, s2
    assert s2["errors"]["total"] >= 1, s2
    assert s2["notificationsReceived"] >= s1["notificationsReceived"] + 1, (s1, s2)
    assert s2["bytes"]["in"] > s1["bytes"]["in"] and s2["bytes"]["out"] > s1["bytes"]["out"], (s1, s2)
    assert s2["uptimeMs"] >= s1["uptimeMs"], (s1, s2)


def test_rpc_discover_returns_schema(conn, repo_root):
    path = repo_root / "schema" / "openrpc.json"
    assert path.exists(), f"{path} is missing"
    expected = json.loads(path.read_text(encoding="utf-8"))
    got = conn.result("rpc.discover")
    assert got == expected, "rpc.discover differs from schema/openrpc.json"


def _openrpc(repo_root):
    return json.loads((repo_root / "schema" / "openrpc.json").read_text(encoding="utf-8"))


def _validate(doc, schema, instance, what):
    jsonschema = pytest.importorskip("jsonschema", reason="pip install -r Tests/interop/requirements.txt")
    # "#/components/..." refs resolve against the root, so hang the components there.
    root = {"allOf": [schema], "components": doc.get("components", {})}
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    errors = sorted(cls(root).iter_errors(instance), key=lambda e: list(e.absolute_path))
    assert not errors, f"{what} does not match schema/openrpc.json: " + "; ".join(
        f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]
    )


def test_results_match_openrpc_schema(conn, repo_root):
    doc = _openrpc(repo_root)
    methods = {m["name"]: m for m in doc["methods"]}
    init = conn.result("initialize", {"processId": None, "clientInfo": {"name": "pytest"}, "capabilities": {}})
    _validate(doc, methods["initialize"]["result"]["schema"], init, "initialize result")
    assert sorted(init["capabilities"]["methods"]) == sorted(methods), (
        "initialize's capabilities.methods and the methods of rpc.discover differ"
    )
    conn.call("noSuchMethod")
    conn.send("[]")
    conn.recv_reply()
    stats = conn.result("stats")
    _validate(doc, methods["stats"]["result"]["schema"], stats, "stats result")
    err = conn.call("noSuchMethod")["error"]
    if "ErrorObject" in doc.get("components", {}).get("schemas", {}):
        _validate(doc, {"$ref": "#/components/schemas/ErrorObject"}, err, "error object")
    shutdown = conn.result("shutdown")
    _validate(doc, methods["shutdown"]["result"]["schema"], shutdown, "shutdown result")


# ==========================================================================
# ids


@pytest.mark.parametrize(
    "req_id",
    [1, 0, -7, 2**31, 2**53 + 1, "1", "abc", "", "ключ-🙂", 'a/b"c\\d', "line\nbreak\t",
     "00000000-0000-4000-8000-000000000000"],
    ids=repr,
)
def test_id_echoed_exactly(conn, req_id):
    # Conn.call asserts equal value AND equal JSON type (1 must not come back
    # as 1.0 or "1": Emacs looks ids up with eql, pylsp with a dict).
    reply = conn.call("stats", id=req_id)
    assert "result" in reply


def test_null_id_is_a_request(conn):
    # "id": null is discouraged but it is a request, not a notification.
    conn.send({"jsonrpc": "2.0", "id": None, "method": "stats"})
    reply = conn.recv_reply()
    assert reply["id"] is None and "result" in reply, reply
    follow_up(conn)


def test_id_of_error_reply_echoed(conn):
    assert_error(conn.call("noSuchMethod", id="x-1"), -32601, id="x-1")
    assert_error(conn.call("noSuchMethod", id=17), -32601, id=17)


# ==========================================================================
# params


@pytest.mark.parametrize("params", [ABSENT, None, [], {}], ids=["absent", "null", "empty-array", "empty-object"])
def test_stats_accepts_empty_params(conn, params):
    # absent: pylsp/nvim with nil; null: Emacs with nil; []: nvim with {}; {}: everyone else
    r = conn.result("stats", params)
    assert STATS_KEYS <= set(r), r


@pytest.mark.parametrize("params", [ABSENT, None, [], {}], ids=["absent", "null", "empty-array", "empty-object"])
def test_shutdown_accepts_empty_params(srv, params):
    r = srv.conn.call("shutdown", params)
    assert "result" in r and r["result"] is None, r


# ==========================================================================
# errors


def test_unknown_method(conn):
    err = assert_error(conn.call("noSuchMethod", {}), -32601)
    assert isinstance(err["message"], str) and err["message"]
    follow_up(conn)


def test_unknown_notification_gets_no_reply(conn):
    conn.notify("noSuchNotification", {})
    conn.notify("noSuchNotification")
    follow_up(conn, "the request after two unknown notifications")


def test_escaped_method_names(conn):
    # vim.json and ujson write "$/cancelRequest" as "$\\/cancelRequest"
    conn.send_raw(rpcio.frame(b'{"jsonrpc":"2.0","method":"$\\/cancelRequest","params":{"id":5}}', conn.framing))
    conn.send_raw(rpcio.frame(b'{"jsonrpc":"2.0","id":"esc","method":"st\\u0061ts"}', conn.framing))
    r = conn.recv_reply()
    assert r["id"] == "esc" and "result" in r, r
    conn.send_raw(rpcio.frame(b'{"jsonrpc":"2.0","id":"esc2","method":"rpc\\u002ediscover"}', conn.framing))
    r = conn.recv_reply()
    assert r["id"] == "esc2" and "result" in r, str(r)[:300]


def test_cancel_unknown_id_is_ignored(conn):
    conn.notify("$/cancelRequest", {"id": 987654})
    conn.notify("$/cancelRequest", {"id": "never-sent"})
    follow_up(conn, "the request after $/cancelRequest for unknown ids")


INVALID_REQUESTS = [
    # (body, id expected in the reply)
    # The id is echoed when it can be read: a client (nvim, Emacs) only ever
    # sees an error whose id matches one of its requests.
    ('{"jsonrpc":"2.0","id":1}', 1),
    ('{"jsonrpc":"1.0","id":2,"method":"stats"}', 2),
    ('{"id":3,"method":"stats"}', 3),
    ('{"jsonrpc":2.0,"id":4,"method":"stats"}', 4),
    ('{"jsonrpc":"2.0","id":5,"method":1}', 5),
    ('{"jsonrpc":"2.0","id":6,"method":null}', 6),
    ('{"jsonrpc":"2.0","id":7,"method":["stats"]}', 7),
    # an id that is not a string/number/null cannot be echoed
    ('{"jsonrpc":"2.0","id":{"a":1},"method":"stats"}', None),
    ('{"jsonrpc":"2.0","id":[1],"method":"stats"}', None),
    ('{"jsonrpc":"2.0","id":true,"method":"stats"}', None),
    # not an object at all
    ("1", None),
    ('"foo"', None),
    ("null", None),
    ("true", None),
]


@pytest.mark.parametrize("body,expected_id", INVALID_REQUESTS, ids=[b for b, _ in INVALID_REQUESTS])
def test_invalid_request(conn, body, expected_id):
    conn.send(body)
    reply = conn.recv_reply(what=f"the -32600 reply to {body}")
    assert_error(reply, -32600, id=expected_id)
    follow_up(conn)


def test_params_must_be_structured(conn):
    # JSON-RPC: params MUST be an object or array. Either -32600 (invalid
    # request) or -32602 (invalid params) is a fair answer; silence is not.
    conn.send('{"jsonrpc":"2.0","id":8,"method":"stats","params":"bar"}')
    reply = conn.recv_reply()
    assert error_of(reply)["code"] in (-32600, -32602), reply
    assert reply["id"] == 8, reply
    follow_up(conn)


# (body, the id of the -32700 reply). JSON-RPC answers a parse error with id null; where
# the envelope still shows an integer or plain string id, the server gives it back, so
# a client can match the error to its call (a lone surrogate in params, invalid UTF-8).
PARSE_ERRORS = [
    (b'{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]', None),
    (b'[ {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method" ]', None),
    (b'{"jsonrpc":"2.0","id":1,"method":"stats"}}', 1),
    (b'{"jsonrpc":"2.0","id":1,"method":"st\xffats"}', 1),  # not UTF-8
    (b'{"jsonrpc":"2.0","id":7,"method":"follow","params":{"kind":"artist","id":"\\ud800"}}', 7),
    (b'{"jsonrpc":"2.0","method":"follow","params":{"a":[{"b":"}\\""}],"id":"\xff"},"id":"k-9"}', "k-9"),
    (b'{"jsonrpc":"2.0","id":"\\ud800","method":"stats"}', None),  # the id itself is unreadable
    (b'{"jsonrpc":"2.0","id":"x\xff","method":"stats"}', None),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"st\xffats"}', None),
    (b"{", None),
]


@pytest.mark.parametrize("body,id", PARSE_ERRORS, ids=[repr(b[:30]) for b, _ in PARSE_ERRORS])
def test_parse_error_and_connection_continues(conn, body, id):
    conn.send(body)
    reply = conn.recv_reply(what=f"the -32700 reply to {body!r}")
    assert_error(reply, -32700, id=id)
    follow_up(conn, "the request after a parse error")


# ==========================================================================
# batches


def test_empty_batch_is_one_invalid_request(conn):
    conn.send("[]")
    reply = conn.recv_reply()
    assert isinstance(reply, dict), f"an empty batch gets ONE error object, not an array: {reply!r}"
    assert_error(reply, -32600, id=None)
    follow_up(conn)


def test_batch_of_invalid_elements(conn):
    conn.send("[1,2,3]")
    reply = conn.recv_reply()
    assert isinstance(reply, list) and len(reply) == 3, reply
    for r in reply:
        assert_error(r, -32600, id=None)
    follow_up(conn)


def test_batch_of_one_request_is_an_array(conn):
    conn.send([{"jsonrpc": "2.0", "id": "only", "method": "stats"}])
    reply = conn.recv_reply()
    assert isinstance(reply, list) and len(reply) == 1 and reply[0]["id"] == "only" and "result" in reply[0], reply


def test_batch_of_notifications_gets_no_reply(conn):
    before = conn.result("stats")["notificationsReceived"]
    conn.send(
        [
            {"jsonrpc": "2.0", "method": "stats"},
            {"jsonrpc": "2.0", "method": "noSuchNotification", "params": {}},
            {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 424242}},
        ]
    )
    # The very next message must be the follow-up's reply.
    after = follow_up(conn, "the request after an all-notification batch")["notificationsReceived"]
    assert after >= before + 3, (before, after)


def test_mixed_batch(conn):
    conn.send(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "stats"},
            {"jsonrpc": "2.0", "method": "stats"},
            {"jsonrpc": "2.0", "id": "two", "method": "noSuchMethod", "params": []},
            {"jsonrpc": "2.0", "method": "noSuchNotification"},
            {"foo": "boo"},
            {"jsonrpc": "2.0", "id": None, "method": "stats", "params": {}},
        ]
    )
    reply = conn.recv_reply()
    assert isinstance(reply, list), reply
    assert len(reply) == 4, f"one reply per request (ids 1, 'two', the invalid one, null): {reply!r}"
    by_id = {}
    for r in reply:
        by_id.setdefault(json.dumps(r["id"]), []).append(r)
    assert set(by_id) == {"1", '"two"', "null"}, reply
    assert "result" in by_id["1"][0] and STATS_KEYS <= set(by_id["1"][0]["result"]), reply
    assert_error(by_id['"two"'][0], -32601)
    nulls = by_id["null"]
    assert len(nulls) == 2, reply
    assert sorted("error" in r for r in nulls) == [False, True], reply
    assert [r for r in nulls if "error" in r][0]["error"]["code"] == -32600, reply
    follow_up(conn)


# ==========================================================================
# pipelining and split/coalesced input


def test_pipelined_requests(conn):
    n = 50
    data = b"".join(rpcio.frame({"jsonrpc": "2.0", "id": i, "method": "stats"}, conn.framing) for i in range(n))
    conn.send_raw(data)
    seen = set()
    for _ in range(n):
        r = conn.recv_reply()
        assert "result" in r, r
        seen.add(r["id"])
    assert seen == set(range(n))
    follow_up(conn)


def test_message_split_into_tiny_writes(conn):
    data = rpcio.frame({"jsonrpc": "2.0", "id": "split", "method": "stats", "params": {}}, conn.framing)
    for i in range(0, len(data), 3):
        conn.send_raw(data[i : i + 3])
        time.sleep(0.002)
    r = conn.recv_reply()
    assert r["id"] == "split" and "result" in r, r


def test_unicode_round_trip(conn):
    # LSP: Content-Length counts bytes, not characters (the strict parser
    # checks the reply's length); NDJSON: raw UTF-8 in the line.
    reply = conn.call("noSuchMethod-ключ-🙂", {"x": "é"}, id="ид-🙂")
    assert_error(reply, -32601)


# --- Content-Length specifics ------------------------------------------------


LSP_FIRST_MESSAGES = {
    # pylsp_jsonrpc's order: Content-Length, then Content-Type (charset=utf8)
    "pylsp-order": b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf8\r\n\r\n",
    # Content-Type first is legal too
    "type-first": b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n",
    # first byte 'c'
    "lowercase": b"content-length: %d\r\n\r\n",
}


@pytest.mark.parametrize("variant", sorted(LSP_FIRST_MESSAGES))
def test_lsp_header_variants(spawn, variant):
    srv = spawn(framing=LSP)
    body = b'{"jsonrpc":"2.0","id":1,"method":"stats"}'
    srv.conn.send_raw(LSP_FIRST_MESSAGES[variant] % len(body) + body)
    r = srv.conn.recv_reply()
    assert r["id"] == 1 and "result" in r, r
    # the same variants mid-connection
    for v in sorted(LSP_FIRST_MESSAGES):
        srv.conn.send_raw(LSP_FIRST_MESSAGES[v] % len(body) + body)
        r = srv.conn.recv_reply(what=f"reply to a {v} message")
        assert r["id"] == 1 and "result" in r, r


def test_lsp_reply_headers_suit_every_client(spawn):
    srv = spawn(framing=LSP)
    srv.conn.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    f = srv.conn.recv_frame()
    # pylsp_jsonrpc reads the FIRST line as "Content-Length: N" (exact case,
    # one space); Emacs's regexp needs ": " in every header line and the
    # whole header within 100 chars; nvim only needs "Content-*".
    assert f.headers, f.raw
    assert f.headers[0] == ("Content-Length", str(len(f.body))), f.raw[:200]
    head_len = f.raw.index(b"\r\n\r\n") + 4
    assert head_len <= 100, f.raw[:200]


# --- NDJSON specifics ---------------------------------------------------------


def test_ndjson_leading_whitespace_before_first_message(spawn):
    srv = spawn(framing=NDJSON)
    srv.conn.send_raw(b"\n \r\n\t" + rpcio.frame({"jsonrpc": "2.0", "id": 1, "method": "stats"}, NDJSON))
    r = srv.conn.recv_reply()
    assert r["id"] == 1 and "result" in r, r


def test_lsp_leading_whitespace_before_first_message(spawn):
    srv = spawn(framing=LSP)
    srv.conn.send_raw(b"\r\n \n" + rpcio.frame({"jsonrpc": "2.0", "id": 1, "method": "stats"}, LSP))
    r = srv.conn.recv_reply()
    assert r["id"] == 1 and "result" in r, r


def test_ndjson_crlf_line_endings(spawn):
    srv = spawn(framing=NDJSON)
    srv.conn.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"stats"}\r\n{"jsonrpc":"2.0","id":2,"method":"stats"}\r\n')
    ids = {srv.conn.recv_reply()["id"], srv.conn.recv_reply()["id"]}
    assert ids == {1, 2}


def test_ndjson_batch_starts_connection(spawn):
    # '[' as the first byte selects NDJSON too
    srv = spawn(framing=NDJSON)
    srv.conn.send([{"jsonrpc": "2.0", "id": 1, "method": "stats"}])
    r = srv.conn.recv_reply()
    assert isinstance(r, list) and r[0]["id"] == 1, r


# ==========================================================================
# message size limit


def test_oversize_message_is_skipped(spawn, framing):
    limit = 1000
    srv = spawn("--max-message-bytes", limit, framing=framing)
    c = srv.conn
    c.result("stats")
    # under the limit: fine (initialize takes any params, as LSP clients send)
    small = c.request_obj("initialize", {"pad": "x" * 850}, id=6)
    assert len(rpcio.encode(small)) < limit
    c.send(small)
    r = c.recv_reply()
    assert r["id"] == 6 and "result" in r, r

    big = c.request_obj("initialize", {"pad": "y" * 2000}, id=7)
    c.send(big)
    r = c.recv_reply(what="the error for an over-size message")
    err = assert_error(r, -32600)
    assert r["id"] in (7, None), r
    assert str(limit) in json.dumps(err), f"the error should name the limit ({limit}): {r!r}"
    follow_up(c, "the request after an over-size message")

    # two over-size messages and a normal one in one write
    huge = c.request_obj("initialize", {"pad": "z" * 100_000}, id=9)
    data = rpcio.frame(big, framing) + rpcio.frame(huge, framing) + rpcio.frame(c.request_obj("stats", id=10), framing)
    c.send_raw(data)
    replies = [c.recv_reply() for _ in range(3)]
    errors = [r for r in replies if "error" in r]
    oks = [r for r in replies if "result" in r]
    assert len(errors) == 2 and all(e["error"]["code"] == -32600 for e in errors), replies
    assert len(oks) == 1 and oks[0]["id"] == 10, replies
    c.assert_quiet(0.2)


def test_default_limit_is_16_mib(spawn, framing):
    limit = 16 * 1024 * 1024
    srv = spawn(framing=framing)
    c = srv.conn
    c.result("stats")
    under = c.request_obj("initialize", {"pad": "u" * (limit - 4096)}, id="under")
    r = c.call("initialize", under["params"], id="under", timeout=30)
    assert "result" in r, str(r)[:300]
    over = c.request_obj("initialize", {"pad": "o" * (limit + 4096)}, id="over")
    c.send(over)
    r = c.recv_reply(timeout=30)
    err = assert_error(r, -32600)
    text = json.dumps(err)
    assert str(limit) in text or "16 MiB" in text or "16MiB" in text, r
    follow_up(c, "the request after a 16 MiB+ message")


# ==========================================================================
# lifecycle


def test_shutdown_then_exit_exits_0(srv):
    r = srv.conn.call("shutdown")
    assert "result" in r and r["result"] is None, f'shutdown must answer "result": null: {r!r}'
    srv.conn.notify("exit")
    assert srv.wait() == 0, srv.diagnostics()


def test_exit_without_shutdown_exits_1(srv):
    srv.conn.result("stats")
    srv.conn.notify("exit")
    assert srv.wait() == 1, srv.diagnostics()


def test_request_after_shutdown_is_refused(srv):
    # LSP: requests after shutdown error with InvalidRequest; schema/openrpc.json
    # (`shutdown`) has -32005 "server shutting down". Either is fine; a normal answer is not.
    srv.conn.result("shutdown")
    r = srv.conn.call("stats")
    assert error_of(r)["code"] in (-32600, -32005), r
    srv.conn.notify("exit")
    assert srv.wait() == 0, srv.diagnostics()


def test_eof_exits_0_after_answering(srv):
    # The request and the EOF arrive together: the reply must still be written.
    srv.conn.send({"jsonrpc": "2.0", "id": "last", "method": "stats"})
    srv.close_stdin()
    r = srv.conn.recv_reply(what="the reply to a request sent just before EOF")
    assert r["id"] == "last" and "result" in r, r
    assert srv.wait() == 0, srv.diagnostics()
    assert srv.conn.reader.wait_eof(5)


def test_eof_without_any_input_exits_0(spawn):
    srv = spawn()
    srv.close_stdin()
    assert srv.wait() == 0, srv.diagnostics()
    assert srv.conn.reader.wait_eof(5) and bytes(srv.conn.reader.all) == b""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_exits_0(conn, srv, sig):
    srv.signal(sig)
    assert srv.wait() == 0, srv.diagnostics()


def test_stdout_is_protocol_only_at_debug(spawn, framing):
    srv = spawn("--log-level", "debug", framing=framing)
    c = srv.conn
    c.result("initialize", {"capabilities": {}})
    c.result("stats")
    c.call("noSuchMethod")
    c.send("{not json")
    c.recv_reply()
    c.send([{"jsonrpc": "2.0", "id": "b1", "method": "stats"}, {"jsonrpc": "2.0", "method": "stats"}])
    c.recv_reply()
    c.notify("$/cancelRequest", {"id": 1})
    c.result("shutdown")
    c.notify("exit")
    assert srv.wait() == 0, srv.diagnostics()
    assert c.reader.wait_eof(5)
    frames = rpcio.parse_all(bytes(c.reader.all), framing)  # raises on any stray byte
    assert len(frames) == 6, [f.raw[:100] for f in frames]
    assert srv.stderr().strip(), "at --log-level debug the server should log something to stderr"


def test_cli_version_and_help(netmodel_bin, runtime, spawn):
    v = subprocess.run([str(netmodel_bin), "--version"], capture_output=True, timeout=10, env=runtime.env)
    assert v.returncode == 0, v
    out = v.stdout.decode()
    h = subprocess.run([str(netmodel_bin), "--help"], capture_output=True, timeout=10, env=runtime.env)
    assert h.returncode == 0, h
    assert b"serve" in h.stdout + h.stderr, h
    version = spawn().conn.result("initialize", {})["serverInfo"]["version"]
    assert version in out, f"--version says {out!r}, initialize says {version!r}"


# ==========================================================================
# Unix socket


def _stats_until(conn, pred, timeout=3.0):
    deadline = time.monotonic() + timeout
    while True:
        s = conn.result("stats")
        if pred(s) or time.monotonic() > deadline:
            return s
        time.sleep(0.05)


def test_socket_default_path_and_permissions(socket_server, runtime, connect):
    server, path = socket_server()  # bare --socket: $XDG_RUNTIME_DIR/netmodel/netmodel.sock
    assert path == runtime.default_socket
    st = os.stat(path)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
    dst = os.stat(path.parent)
    assert stat.S_IMODE(dst.st_mode) == 0o700, oct(dst.st_mode)
    c = connect(path, NDJSON, server.diagnostics)
    assert STATS_KEYS <= set(c.result("stats"))


def test_socket_two_connections_at_once(socket_server, runtime, connect):
    server, path = socket_server(runtime.run / "two.sock")
    a = connect(path, NDJSON, server.diagnostics)
    b = connect(path, LSP, server.diagnostics)
    # interleave; each gets replies in its own framing
    a.send(a.request_obj("initialize", {}, id="a1"))
    b.send(b.request_obj("initialize", {}, id="b1"))
    ra, rb = a.recv_reply(), b.recv_reply()
    assert ra["id"] == "a1" and rb["id"] == "b1", (ra, rb)
    sa = a.result("stats")
    assert sa["connections"]["open"] == 2, sa
    assert sa["connections"]["total"] >= 2, sa
    assert sa["requests"]["byMethod"]["initialize"] == 2, sa
    sb = b.result("stats")
    assert sb["connections"]["open"] == 2, sb
    # the stdio-less server keeps running when stdin is /dev/null
    assert server.alive()


def test_socket_stdin_eof_ignored_with_no_stdio(socket_server, runtime, connect):
    server, path = socket_server(runtime.run / "nostdio.sock")
    time.sleep(0.5)
    assert server.alive(), f"--no-stdio server exited on stdin EOF\n{server.diagnostics()}"
    c = connect(path, NDJSON, server.diagnostics)
    c.result("stats")


def test_socket_and_stdio_together(spawn, runtime, connect):
    path = runtime.run / "both.sock"
    srv = spawn(f"--socket={path}", framing=LSP)
    wait_for_socket(srv, path)
    s = connect(path, NDJSON, srv.diagnostics)
    s.result("initialize", {})
    st = srv.conn.result("stats")
    assert st["requests"]["byMethod"]["initialize"] == 1, "all connections share one server"
    assert st["connections"]["open"] >= 2, st
    srv.close_stdin()
    assert srv.wait() == 0, srv.diagnostics()


def test_socket_sigterm_exits_0(socket_server, runtime, connect):
    server, path = socket_server(runtime.run / "term.sock")
    c = connect(path, NDJSON, server.diagnostics)
    c.result("stats")
    server.signal(signal.SIGTERM)
    assert server.wait() == 0, server.diagnostics()


def test_stale_socket_file_is_replaced(socket_server, runtime, connect):
    path = runtime.run / "stale" / "netmodel.sock"
    path.parent.mkdir(mode=0o700)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()  # file stays, nobody listens
    assert stat.S_ISSOCK(os.stat(path).st_mode)
    server, _ = socket_server(path)
    c = connect(path, NDJSON, server.diagnostics)
    assert STATS_KEYS <= set(c.result("stats"))


def test_live_socket_is_not_hijacked(socket_server, spawn, runtime, connect):
    path = runtime.run / "live.sock"
    first, _ = socket_server(path)
    before = os.stat(path).st_ino
    second = spawn(f"--socket={path}", "--no-stdio", stdio=False)
    rc = second.wait(timeout=10)
    assert rc != 0, f"a second server on a live socket must fail\n{second.diagnostics()}"
    err = second.stderr()
    assert err.strip(), "the second server must say why it exits"
    low = err.lower()
    assert str(path) in err or "already" in low or "in use" in low or "running" in low, err
    # the first server is untouched
    assert first.alive()
    assert os.stat(path).st_ino == before, "the socket file was replaced"
    c = connect(path, NDJSON, first.diagnostics)
    assert STATS_KEYS <= set(c.result("stats"))


def test_disconnect_mid_frame_does_not_disturb_others(socket_server, runtime, connect):
    server, path = socket_server(runtime.run / "mid.sock")
    a = connect(path, NDJSON, server.diagnostics)
    a.result("initialize", {})
    # LSP client dies inside a body
    b = connect(path, LSP, server.diagnostics)
    b.send_raw(b'Content-Length: 200\r\n\r\n{"jsonrpc":"2.0","id":1,')
    # LSP client dies inside the header
    c = connect(path, LSP, server.diagnostics)
    c.send_raw(b"Content-Len")
    # NDJSON client dies mid-line
    d = connect(path, NDJSON, server.diagnostics)
    d.send_raw(b'{"jsonrpc":"2.0","id":1,"meth')
    s = _stats_until(a, lambda s: s["connections"]["open"] == 4)
    assert s["connections"]["open"] == 4, s
    for x in (b, c, d):
        rpcio.close_socket(x.sock)
    s = _stats_until(a, lambda s: s["connections"]["open"] == 1)
    assert s["connections"]["open"] == 1, s
    assert s["requests"]["byMethod"]["initialize"] == 1, s
    # a new connection works too
    e = connect(path, LSP, server.diagnostics)
    assert STATS_KEYS <= set(e.result("stats"))
    assert server.alive()


def test_peer_gone_before_reply(socket_server, runtime, connect):
    # Writing the reply to a closed socket (EPIPE) must not kill the server.
    server, path = socket_server(runtime.run / "gone.sock")
    a = connect(path, NDJSON, server.diagnostics)
    a.result("stats")
    for i in range(5):
        b = connect(path, NDJSON, server.diagnostics)
        b.send_raw(b"".join(rpcio.frame(b.request_obj("rpc.discover", id=j), NDJSON) for j in range(20)))
        rpcio.close_socket(b.sock)
    time.sleep(0.2)
    assert server.alive(), server.diagnostics()
    s = _stats_until(a, lambda s: s["connections"]["open"] == 1)
    assert s["connections"]["open"] == 1, s


def test_slow_reader_does_not_block_others(socket_server, runtime, connect):
    """A connection that does not read its replies must not stall the server
    or other connections, and gets every reply once it reads."""
    server, path = socket_server(runtime.run / "slow.sock")
    n = 300  # rpc.discover answers ~the whole OpenRPC document: megabytes in all
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.connect(str(path))
    data = b"".join(rpcio.frame({"jsonrpc": "2.0", "id": i, "method": "rpc.discover"}, NDJSON) for i in range(n))
    # The server may stop reading a connection whose replies back up; so send
    # from a thread, which then blocks until we start reading.
    sender = threading.Thread(target=lambda: slow.sendall(data), daemon=True)
    sender.start()
    try:
        time.sleep(0.5)
        fast = connect(path, LSP, server.diagnostics)
        for _ in range(5):
            t0 = time.monotonic()
            fast.result("stats", timeout=5)
            assert time.monotonic() - t0 < 2.0, "a slow reader stalled another connection"
        # now read everything
        conn = rpcio.Conn(slow.recv, slow.sendall, NDJSON, "slow", server.diagnostics)
        seen = set()
        deadline = time.monotonic() + 60
        while len(seen) < n and time.monotonic() < deadline:
            r = conn.recv_reply(timeout=max(0.1, deadline - time.monotonic()))
            assert "result" in r, str(r)[:300]
            seen.add(r["id"])
        assert seen == set(range(n)), f"{n - len(seen)} replies missing"
        sender.join(timeout=10)
        assert not sender.is_alive()
    finally:
        rpcio.close_socket(slow)
    assert server.alive(), server.diagnostics()


def test_socket_parent_folder_created_0700(socket_server, runtime, connect):
    path = runtime.run / "new" / "deeper" / "n.sock"
    server, _ = socket_server(path)
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700, oct(os.stat(path.parent).st_mode)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, oct(os.stat(path).st_mode)
    c = connect(path, NDJSON, server.diagnostics)
    c.result("stats")


def test_socket_path_too_long_is_a_clear_error(spawn, runtime):
    path = runtime.run / ("d" * 120) / "netmodel.sock"  # sun_path holds 108 bytes
    server = spawn(f"--socket={path}", "--no-stdio", stdio=False)
    rc = server.wait(timeout=10)
    assert rc != 0, server.diagnostics()
    assert server.stderr().strip(), "say why"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the server as another user")
def test_peer_with_other_uid_is_refused(netmodel_bin, runtime):
    """SO_PEERCRED: the server runs as nobody, we (root) connect: refused.
    Root can connect despite the 0600 socket, which is what makes this testable."""
    nobody = 65534
    home = runtime.root / "nobody"
    home.mkdir(mode=0o700)
    os.chown(home, nobody, nobody)
    os.chmod(runtime.root, 0o755)  # let nobody reach its folder
    path = home / "n.sock"
    env = dict(runtime.env, XDG_RUNTIME_DIR=str(home), XDG_STATE_HOME=str(home))

    def drop():
        os.setgid(nobody)
        os.setuid(nobody)

    errpath = runtime.logs / "nobody.stderr"
    with open(errpath, "wb") as errf:
        proc = subprocess.Popen(
            [str(netmodel_bin), "serve", "--no-stdio", f"--socket={path}", "--log-level", "debug"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf, env=env, cwd="/",
            preexec_fn=drop,
        )
    try:
        if not rpcio.wait_for(lambda: path.exists() or proc.poll() is not None, 10) or proc.poll() is not None:
            pytest.fail(f"server as nobody did not listen (rc={proc.poll()})\n{rpcio.stderr_tail(errpath)}")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(str(path))
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"stats"}\n')
            got = b""
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    got += chunk
            except ConnectionResetError:
                pass
            except socket.timeout:
                pytest.fail(f"connection from another uid was neither closed nor refused; got {got!r}")
        except (ConnectionResetError, BrokenPipeError):
            got = b""
        finally:
            s.close()
        # closed without serving: no result (an error reply before closing is fine)
        assert b'"result"' not in got, got
        assert proc.poll() is None, "the server must survive a refused peer"
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
