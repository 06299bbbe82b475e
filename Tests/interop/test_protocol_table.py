"""The clients' protocol table (schema/openrpc.json: components.errors and
x-netmodel-protocol, written into each client by scripts/gen-protocol; docs/clients.md)
against the real server, and the generator's --check against drift."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(90)

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "schema" / "openrpc.json").read_text(encoding="utf-8"))
GEN = REPO / "scripts" / "gen-protocol"
GENERATED = [
    "clients/python/netmodel_client/_protocol.py",
    "clients/node/lib/protocol.js",
    "clients/node/lib/protocol.d.ts",
    "clients/nvim/lua/netmodel/protocol.lua",
    "clients/emacs/netmodel-protocol.el",
]
# The result types (components.schemas, methods[].result), for the clients with types.
GENERATED_TYPES = [
    "clients/python/netmodel_client/results.py",
    "clients/node/lib/results.d.ts",
]
# The server's packed names (the schema's param names and JSON-RPC's envelope members).
GENERATED_SWIFT = [
    "Sources/Service/ParamKeys.swift",
    "Sources/JSON/JSONScanner+EnvelopeNames.swift",
]


def client_table():
    """The Python client's generated table, loaded by path (no install needed)."""
    spec = importlib.util.spec_from_file_location("nm_protocol", REPO / GENERATED[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


T = client_table()


# -- the server agrees with the table ---------------------------------------------


def test_discover_answers_the_table(spawn):
    doc = spawn().conn.result("rpc.discover")
    assert doc["x-netmodel-protocol"] == SCHEMA["x-netmodel-protocol"]
    assert doc["components"]["errors"] == SCHEMA["components"]["errors"]


def test_server_error_codes_are_the_table(spawn):
    conn = spawn().conn
    codes = {}
    conn.send_raw(b'{"jsonrpc":"2.0","id":1,"method":\n')
    codes["ParseError"] = conn.recv()["error"]["code"]
    codes["InvalidRequest"] = conn.call(5)["error"]["code"]
    codes["MethodNotFound"] = conn.call("noSuchMethod")["error"]["code"]
    codes["InvalidParams"] = conn.call("follow", {"kind": "Artist", "id": "x"})["error"]["code"]
    codes["UnknownKindOrList"] = conn.call("fetchList", {"list": "no/such-list"})["error"]["code"]
    assert codes == {name: T.ERROR_CODES[name] for name in codes}
    assert T.ERROR_CODES["UnknownKindOrList"] == T.UNKNOWN_KIND_OR_LIST


def test_null_list_params_name_the_list_without_them(spawn):
    """The server drops null list params; the clients' canonical key does too."""
    conn = spawn().conn
    state = conn.result("fetchList", {"list": "following/artist", "params": {"gone": None}})
    assert json.dumps(state["params"], separators=(",", ":")) == "{}"
    assert T.LIST_PARAMS_DROP_NULL is True


def test_default_socket_is_the_table(socket_server, runtime, netmodel_bin):
    server, path = socket_server()  # bare --socket: the default path
    assert path == Path(runtime.env[T.SOCKET_ENV]) / T.SOCKET_UNDER_ENV
    assert path.is_socket()
    # `netmodel call` looks there too, and names the path when nothing listens
    empty = runtime.root / "empty"
    empty.mkdir(mode=0o700)
    env = {**runtime.env, T.SOCKET_ENV: str(empty)}
    out = subprocess.run([str(netmodel_bin), "call", "stats"], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and str(empty / T.SOCKET_UNDER_ENV) in out.stderr, out.stderr
    # the fallback, as the help states it
    help_text = subprocess.run([str(netmodel_bin), "--help"], capture_output=True, text=True, timeout=30).stdout
    assert T.SOCKET_FALLBACK.replace("{uid}", "$UID") in help_text
    assert f"${T.SOCKET_ENV}/{T.SOCKET_UNDER_ENV}" in help_text


def test_watch_takes_the_table_shorthands(socket_server, runtime, netmodel_bin):
    """`netmodel watch` takes every shorthand the clients take (it refuses a bad one
    with a usage error before connecting)."""
    socket_server()
    for form in SCHEMA["x-netmodel-protocol"]["topicShorthands"]["forms"]:
        spec = form["shorthand"].replace("KIND", "artist").replace("ID", "banksy").replace("NAME", "following/artist")
        proc = subprocess.Popen(
            [str(netmodel_bin), "watch", spec], env=runtime.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            try:
                _, err = proc.communicate(timeout=1.5)
                pytest.fail(f"watch {spec} ended (code {proc.returncode}): {err.decode()}")
            except subprocess.TimeoutExpired:
                pass  # watching, as it should
        finally:
            proc.kill()
            proc.communicate()


# -- scripts/gen-protocol --check ---------------------------------------------------


@pytest.fixture
def copy(tmp_path):
    """The schema, the generator and the generated files, in a temporary repository."""
    for rel in ["schema/openrpc.json", "scripts/gen-protocol", *GENERATED, *GENERATED_TYPES, *GENERATED_SWIFT]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, tmp_path / rel)
    return tmp_path


def check(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(GEN), "--root", str(root), *args], capture_output=True, text=True, timeout=60
    )


def test_generated_files_are_up_to_date():
    out = subprocess.run([sys.executable, str(GEN), "--check"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("rel", GENERATED)
def test_check_fails_when_a_generated_file_is_edited(copy, rel):
    assert check(copy, "--check").returncode == 0
    path = copy / rel
    path.write_text(path.read_text(encoding="utf-8").replace("-31999", "-31990"), encoding="utf-8")
    out = check(copy, "--check")
    assert out.returncode == 1
    assert rel in out.stderr and "-31990" in out.stdout and "-31999" in out.stdout, out.stdout + out.stderr
    assert check(copy).returncode == 0  # writing them again
    assert check(copy, "--check").returncode == 0


def test_check_fails_when_the_schema_changes_and_a_file_is_missing(copy):
    doc = json.loads((copy / "schema/openrpc.json").read_text(encoding="utf-8"))
    doc["x-netmodel-protocol"]["versions"]["deliverWhen"] = ">="
    (copy / "schema/openrpc.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (copy / GENERATED[3]).unlink()
    out = check(copy, "--check")
    assert out.returncode == 1
    for rel in GENERATED:  # the .d.ts declares newerVersion whatever it compares
        assert (rel in out.stderr) == (not rel.endswith(".d.ts")), out.stderr
    assert "version >= held" in out.stdout
    assert not (copy / GENERATED[3]).exists()  # --check writes nothing
    assert check(copy).returncode == 0 and check(copy, "--check").returncode == 0
    assert "return version >= held" in (copy / GENERATED[0]).read_text(encoding="utf-8")


def test_check_fails_when_a_packed_key_is_edited_or_a_param_is_new(copy):
    path = copy / GENERATED_SWIFT[0]
    text = path.read_text(encoding="utf-8")
    # "kind" packed with one byte wrong: the hand edit the generated file exists to prevent.
    assert 'Key(name: "kind", low: 0x646E_696B, count: 4)' in text
    path.write_text(text.replace("0x646E_696B", "0x646E_696C"), encoding="utf-8")
    out = check(copy, "--check")
    assert out.returncode == 1 and GENERATED_SWIFT[0] in out.stderr
    assert check(copy).returncode == 0 and path.read_text(encoding="utf-8") == text

    doc = json.loads((copy / "schema/openrpc.json").read_text(encoding="utf-8"))
    method = next(m for m in doc["methods"] if m["name"] == "getFollowState")
    method["params"].append({"name": "longestNameHere", "schema": {"type": "boolean"}})
    (copy / "schema/openrpc.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert check(copy, "--check").returncode == 1
    assert check(copy).returncode == 0
    # 15 bytes: "longestN" little-endian in the low word, "ameHere" in the high one.
    want = 'Key(name: "longestNameHere", low: 0x4E74_7365_676E_6F6C, high: 0x0065_7265_4865_6D61, count: 15)'
    assert want in path.read_text(encoding="utf-8")


def test_no_packed_key_is_written_by_hand():
    """A packed literal (`Key(name: "kind", low: 0x646E_696B, count: 4)`) appears only in
    the generated files: one byte wrong and a param is never found."""
    packed = re.compile(r'Key\(name: "[^"]*", low:')
    written = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sorted((REPO / "Sources").rglob("*.swift"))
        if str(path.relative_to(REPO)) not in GENERATED_SWIFT
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if packed.search(line)
    ]
    assert written == []


def test_check_fails_when_a_result_type_is_not_the_schema(copy):
    doc = json.loads((copy / "schema/openrpc.json").read_text(encoding="utf-8"))
    lists = doc["components"]["schemas"]["Stats"]["properties"]["lists"]["properties"]
    lists["dropped"] = {"type": "integer", "minimum": 0}
    (copy / "schema/openrpc.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    out = check(copy, "--check")
    assert out.returncode == 1
    for rel in GENERATED + GENERATED_TYPES:
        assert (rel in out.stderr) == (rel in GENERATED_TYPES), out.stderr
    assert '"dropped": NotRequired[int],' in out.stdout and "dropped?: number;" in out.stdout, out.stdout
    assert check(copy).returncode == 0 and check(copy, "--check").returncode == 0


def test_generator_refuses_a_client_code_in_the_reserved_range(copy):
    doc = json.loads((copy / "schema/openrpc.json").read_text(encoding="utf-8"))
    doc["x-netmodel-protocol"]["clientErrors"]["codes"]["Timeout"] = -32001
    (copy / "schema/openrpc.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    out = check(copy, "--check")
    assert out.returncode != 0 and "gen-protocol:" in out.stderr


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
