"""Real JSON-RPC clients, nobody here wrote them, against the real binary.

Each client calls `initialize`, then `stats`, and the test asserts on real
content.  The quirks each client shows on the wire are written at the top of
its script in clients/ and summed up here:

Neovim 0.7 vim.lsp.rpc   Content-Length only; integer ids 1,2,..; keys in hash
                         order ("method" first); "/" escaped as "\\/";
                         nil params omitted, {} -> "params":[],
                         vim.empty_dict() -> {}, vim.NIL -> null; `initialized`
                         notification sent with "params":[]; matches replies
                         by tonumber(id); null-id replies are an error.
Emacs 28 jsonrpc.el      Content-Length only; integer ids 1,2,.. (eql lookup);
                         nil params -> "params":null (requests AND the `exit`
                         notification); {} needs a hash table; header lines
                         need ": ".
pylsp_jsonrpc            Content-Length then Content-Type (...charset=utf8);
                         uuid4 STRING ids; None params omitted; ujson (PyPI
                         and Debian both) escapes "/" ("$\\/cancelRequest")
                         and non-ASCII; first reply
                         header line must be exactly "Content-Length: N".
socat                    NDJSON lines on the Unix socket, half-closes after
                         stdin EOF and waits 0.5 s (-t default) for replies.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import rpcio
from rpcio import require_tool

HERE = Path(__file__).resolve().parent
CLIENTS = HERE / "clients"
CLIENT_TIMEOUT = 60


def _client_env(runtime, netmodel_bin, out: Path, **extra) -> dict:
    env = dict(runtime.env)
    env.update(NETMODEL_BIN=str(netmodel_bin), NM_OUT=str(out), HOME=str(runtime.root))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _run(cmd, env, cwd, out: Path) -> dict:
    try:
        cp = subprocess.run(
            cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=CLIENT_TIMEOUT
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{cmd[0]} did not finish within {CLIENT_TIMEOUT}s; stdout={e.stdout!r} stderr={e.stderr!r}")
    assert out.exists(), (
        f"{cmd[0]} wrote no result file (rc={cp.returncode})\nstdout={cp.stdout[-3000:]!r}\nstderr={cp.stderr[-3000:]!r}"
    )
    data = json.loads(out.read_text())
    data["_rc"] = cp.returncode
    data["_stderr"] = cp.stderr.decode("utf-8", "replace")[-3000:]
    return data


def _assert_initialize(result: dict) -> None:
    assert result["serverInfo"]["name"] == "netmodel", result
    assert isinstance(result["serverInfo"]["version"], str) and result["serverInfo"]["version"], result
    assert result["protocolVersion"] == "1.0", result
    methods = result["capabilities"]["methods"]
    for m in ("initialize", "shutdown", "exit", "stats", "rpc.discover"):
        assert m in methods, f"{m} missing from capabilities.methods {methods}"


def _assert_stats(stats: dict, at_least_stats: int = 0) -> None:
    assert isinstance(stats["uptimeMs"], int) and stats["uptimeMs"] >= 0, stats
    assert stats["requests"]["byMethod"]["initialize"] == 1, stats
    assert stats["requests"]["total"] >= 1 + at_least_stats, stats
    assert stats["connections"]["open"] >= 1, stats
    assert stats["bytes"]["in"] > 0, stats


# --------------------------------------------------------------------------
# Neovim


def test_neovim_vim_lsp_rpc(netmodel_bin, runtime, tmp_path):
    nvim = require_tool("nvim", "apt-get install neovim")
    out = tmp_path / "nvim.json"
    env = _client_env(runtime, netmodel_bin, out)
    script = CLIENTS / "nvim_client.lua"
    r = _run([nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {script}", "-c", "qa!"],
             env, runtime.root, out)
    diag = json.dumps(r, indent=1)[:6000]
    assert "lua_error" not in r, diag
    steps = r["steps"]
    for name in r["order"]:
        assert not steps[name].get("timed_out"), f"{name} timed out\n{diag}"
    # vim.lsp.rpc.request hands out integer ids
    assert steps["initialize"]["id_type"] == "number" and steps["initialize"]["id"] == 1, diag

    init = steps["initialize"]
    assert "err" not in init, diag
    _assert_initialize(init["result"])

    # nil params, {} (-> "[]"), vim.empty_dict() (-> "{}") and vim.NIL (-> null)
    for name in ("stats_nil", "stats_empty_table", "stats_empty_dict", "stats_vim_nil"):
        assert "err" not in steps[name], f"{name}: {steps[name]}\n{diag}"
        _assert_stats(steps[name]["result"])

    unknown = steps["unknown"]
    assert unknown["err"]["code"] == -32601, diag

    final = steps["stats_final"]["result"]
    _assert_stats(final, at_least_stats=4)
    assert final["requests"]["byMethod"]["stats"] in (4, 5), final
    assert final["errors"]["byCode"]["-32601"] == 1, final
    # `initialized` and `$/cancelRequest` were notifications
    assert final["notificationsReceived"] >= 2, final

    shutdown = steps["shutdown"]
    assert "err" not in shutdown and shutdown.get("result_is_nil"), diag
    assert not r.get("exit_timed_out"), diag
    assert r["exit"]["code"] == 0 and r["exit"]["signal"] == 0, diag
    # No INVALID_SERVER_MESSAGE / NO_RESULT_CALLBACK_FOUND etc.: the server never
    # answered a notification, never sent a null id, never sent garbage.
    assert r["errors"] == [], diag


# --------------------------------------------------------------------------
# Emacs


def test_emacs_jsonrpc_el(netmodel_bin, runtime, tmp_path):
    emacs = require_tool("emacs", "apt-get install emacs-nox")
    out = tmp_path / "emacs.json"
    env = _client_env(runtime, netmodel_bin, out)
    r = _run([emacs, "--batch", "-Q", "-l", str(CLIENTS / "emacs_client.el")], env, runtime.root, out)
    diag = json.dumps(r, indent=1)[:6000]
    assert "elisp_error" not in r, diag
    assert r["initialize"]["ok"] is True, diag
    _assert_initialize(r["initialize"]["result"])
    # jsonrpc.el sends "params":null for nil params, {} for a hash table, [] for a vector
    for name in ("stats_nil", "stats_empty_object", "stats_empty_array"):
        assert r[name]["ok"] is True, f"{name}: {r[name]}\n{diag}"
        _assert_stats(r[name]["result"])
    assert r["unknown"]["ok"] is False and r["unknown"]["code"] == -32601, diag
    final = r["stats_final"]["result"]
    _assert_stats(final, at_least_stats=3)
    assert final["requests"]["byMethod"]["stats"] in (3, 4), final
    assert final["errors"]["byCode"]["-32601"] == 1, final
    assert final["notificationsReceived"] >= 1, final
    assert r["shutdown"]["ok"] is True and r["shutdown"]["result"] is None, diag
    assert not r.get("exit_timed_out"), diag
    # `exit` arrived as {"jsonrpc":"2.0","method":"exit","params":null} after shutdown
    assert r["exit_status"] == 0, diag


@pytest.mark.parametrize("transport", ["stdio", "socket"])
@pytest.mark.parametrize("backend", ["local", "simulated"])
def test_emacs_jsonrpc_el_sees_a_follow_settle_without_sending_more(
        netmodel_bin, runtime, tmp_path, socket_server, transport, backend):
    """Issue: the settled state reached jsonrpc.el only with the server's next output,
    since Emacs 28 stops reading at a synchronous request's reply."""
    emacs = require_tool("emacs", "apt-get install emacs-nox")
    out = tmp_path / "push.json"
    args = ["--state-dir", str(runtime.root / "sd")]
    if backend == "simulated":
        args += ["--simulate", "latency=30,jitter=10,failure=0", "--seed", "3"]
    extra = {"NM_ARGS": " ".join(args)}
    if transport == "socket":
        _, sock = socket_server(None, *args)
        extra = {"NM_SOCKET": str(sock)}
    env = _client_env(runtime, netmodel_bin, out, **extra)
    r = _run([emacs, "--batch", "-Q", "-l", str(CLIENTS / "emacs_push.el")], env, runtime.root, out)
    diag = json.dumps(r, indent=1)[:4000]
    assert "elisp_error" not in r, diag
    assert r["follow"]["following"] is True, diag
    assert r["settled"] is True, f"no settled state within 2 s of the follow's reply\n{diag}"


# --------------------------------------------------------------------------
# pylsp_jsonrpc


def _debian_python() -> str | None:
    py = "/usr/bin/python3"
    if not os.path.exists(py):
        return None
    ok = subprocess.run([py, "-c", "import pylsp_jsonrpc"], capture_output=True, timeout=30).returncode == 0
    return py if ok else None


@pytest.mark.parametrize("flavour", ["pypi", "debian"])
def test_pylsp_jsonrpc(netmodel_bin, runtime, tmp_path, flavour):
    import sys

    if flavour == "pypi":
        pytest.importorskip("pylsp_jsonrpc", reason="pip install -r Tests/interop/requirements.txt")
        python = sys.executable
    else:
        python = _debian_python()
        if python is None:
            msg = "Debian's python3-pylsp-jsonrpc is not installed (apt-get install python3-pylsp-jsonrpc)"
            if os.environ.get("NETMODEL_INTEROP_SKIP_MISSING_CLIENTS") == "1":
                pytest.skip(msg)
            pytest.fail(msg, pytrace=False)
    out = tmp_path / "pylsp.json"
    env = _client_env(runtime, netmodel_bin, out, NM_STDERR=tmp_path / "server.stderr")
    env.pop("PYTHONPATH", None)
    r = _run([python, str(CLIENTS / "pylsp_client.py")], env, runtime.root, out)
    diag = json.dumps(r, indent=1)[:6000] + "\n" + r["_stderr"]
    steps = r["steps"]
    assert steps["initialize"]["ok"], diag
    _assert_initialize(steps["initialize"]["result"])
    for name in ("stats", "stats_empty"):
        assert steps[name]["ok"], diag
        _assert_stats(steps[name]["result"])
    assert steps["unknown"]["ok"] is False and steps["unknown"]["code"] == -32601, diag
    final = steps["stats_final"]
    assert final["ok"], diag
    _assert_stats(final["result"], at_least_stats=2)
    assert final["result"]["errors"]["byCode"]["-32601"] == 1, diag
    assert steps["shutdown"]["ok"] and steps["shutdown"]["result"] is None, diag
    assert r["exit_code"] == 0, diag
    # string (uuid) ids came back as the same strings; nothing answered the
    # notifications (every received message is a reply to one of our requests).
    replies = [m for m in r["received"] if "method" not in m]
    assert len(replies) == len(steps), diag
    for m in replies:
        assert isinstance(m["id"], str) and len(m["id"]) == 36, m


# --------------------------------------------------------------------------
# socat on the Unix socket


def test_socat_ndjson(socket_server, runtime):
    socat = require_tool("socat", "apt-get install socat")
    server, path = socket_server()
    # exactly what a shell user types
    cmd = (
        "printf '%s\\n%s\\n' "
        "'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}' "
        "'{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"stats\"}' "
        f"| {socat} - UNIX-CONNECT:{path}"
    )
    cp = subprocess.run(["sh", "-c", cmd], capture_output=True, timeout=30, env=runtime.env)
    assert cp.returncode == 0, (cp, server.diagnostics())
    lines = cp.stdout.split(b"\n")
    assert lines[-1] == b"", f"output must end with a newline: {cp.stdout!r}"
    replies = {m["id"]: m for m in (json.loads(l) for l in lines[:-1])}
    assert set(replies) == {1, 2}, f"{cp.stdout!r}\n{server.diagnostics()}"
    _assert_initialize(replies[1]["result"])
    stats = replies[2]["result"]
    _assert_stats(stats)
    # (total also counts the fixture's readiness probe)
    assert stats["connections"]["open"] == 1 and stats["connections"]["total"] >= 1, stats


def test_socat_gets_an_answer_that_comes_after_it_half_closed(socket_server, connect, runtime):
    """`echo … | socat` half-closes as soon as its input ends: a read the backend answers
    later (here 300 ms) is still answered, and the connection closes after it."""
    socat = require_tool("socat", "apt-get install socat")
    server, path = socket_server(None, "--simulate", "latency=300")
    requests = (
        b'{"jsonrpc":"2.0","id":1,"method":"getFollowState","params":{"kind":"artist","id":"banksy"}}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"follow","params":{"kind":"artist","id":"kaws","await":true}}\n'
    )
    cp = subprocess.run([socat, "-t", "3", "-", f"UNIX-CONNECT:{path}"], input=requests, capture_output=True,
                        timeout=30, env=runtime.env)
    assert cp.returncode == 0, (cp, server.diagnostics())
    replies = {m["id"]: m for m in (json.loads(line) for line in cp.stdout.splitlines())}
    assert set(replies) == {1, 2}, f"{cp.stdout!r}\n{server.diagnostics()}"
    assert replies[1]["result"]["confirmed"] is False
    assert replies[2]["result"]["confirmed"] is True
    # The server closed the connection once both were answered: the next stats sees
    # only its own connection.
    assert connect(path).result("stats")["connections"]["open"] == 1


def test_socat_content_length(socket_server, runtime):
    socat = require_tool("socat", "apt-get install socat")
    server, path = socket_server()
    body = b'{"jsonrpc":"2.0","id":"s","method":"stats"}'
    msg = b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n%s" % (len(body), body)
    cp = subprocess.run([socat, "-t", "2", "-", f"UNIX-CONNECT:{path}"], input=msg, capture_output=True,
                        timeout=30, env=runtime.env)
    assert cp.returncode == 0, (cp, server.diagnostics())
    frames = rpcio.parse_all(cp.stdout, rpcio.LSP)
    assert len(frames) == 1, cp.stdout
    assert frames[0].obj["id"] == "s" and "uptimeMs" in frames[0].obj["result"], frames[0].obj
