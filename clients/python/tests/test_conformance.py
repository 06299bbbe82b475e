"""The shared conformance vectors (clients/conformance/vectors.json), fed to this
client's own state logic; the Node and Neovim suites run the same file."""

import json
import os
from pathlib import Path

import pytest

import netmodel_client as nmc
from netmodel_client import AsyncClient, EntityState, ListState, RPCError, parse_state, topic
from netmodel_client.aio import Subscription

VECTORS = json.loads((Path(__file__).resolve().parents[2] / "conformance" / "vectors.json").read_text())
STATES = VECTORS["states"]


def name_of(state):
    """The vector's name for a delivered state (same object and version)."""
    for name, s in STATES.items():
        if s["version"] != state.version:
            continue
        if isinstance(state, ListState) and s.get("list") == state.list and s["params"] == state.params:
            return name
        if isinstance(state, EntityState) and (s.get("kind"), s.get("id")) == (state.kind, state.id):
            return name
    raise AssertionError(f"delivered a state no vector names: {state!r}")


@pytest.mark.parametrize("v", VECTORS["deliver"], ids=lambda v: v["name"])
def test_deliver(v):
    sub = Subscription(None, "s1", [parse_state(STATES[n]) for n in v["snapshot"]], [])
    sub.instance = v["instance"]
    seen = []
    sub.on_change(seen.append)
    sub._release()  # as subscribe() does once its caller ran
    for n, step in enumerate(v["steps"], 1):
        if "notify" in step:
            sub._deliver(parse_state(STATES[step["notify"]]), n)
        else:
            r = step["reconnect"]
            sub._restart(f"s{n + 1}", [parse_state(STATES[x]) for x in r["snapshot"]], r["instance"])
    assert [name_of(s) for s in seen] == v["expect"]


@pytest.mark.parametrize("v", VECTORS["topics"], ids=lambda v: v["spec"])
def test_topics(v):
    if v.get("error"):
        with pytest.raises(ValueError):
            topic(v["spec"])
        return
    wire = json.loads(AsyncClient._encode({"jsonrpc": "2.0", "id": 1, "method": "subscribe",
                                           "params": {"topics": [topic(v["spec"])]}}))
    assert wire["params"]["topics"] == [v["topic"]]


@pytest.mark.parametrize("v", VECTORS["encode"], ids=lambda v: v["name"])
def test_encode(v):
    line = AsyncClient._encode({"jsonrpc": "2.0", "id": 1, "method": v["method"], "params": v["params"]}).decode()
    compact = line.replace(" ", "")
    for text in v["contains"]:
        assert text in compact
    for text in v["absent"]:
        assert text not in compact


@pytest.mark.parametrize("v", VECTORS["errors"], ids=lambda v: v["class"])
def test_errors(v):
    err = RPCError.from_json(v["error"])
    assert (type(err).__name__, err.code) == (v["class"], v["code"])
    if "state_version" in v:
        assert err.state is not None and err.state.version == v["state_version"]


def test_client_codes():
    assert {name: getattr(nmc, name) for name in VECTORS["client_codes"]} == VECTORS["client_codes"]


@pytest.mark.parametrize("v", VECTORS["needs_credentials"])
def test_needs_credentials(v):
    assert EntityState.from_json(v["state"]).needs_credentials is v["expect"]


@pytest.mark.parametrize("v", VECTORS["list_keys"], ids=lambda v: v["name"])
def test_list_keys(v):
    assert nmc.params_key(v["params"]) == v["key"]
    # a subscription finds a list's state by the params its caller gave
    state = ListState.from_json({"list": "search", "params": json.loads(v["key"]), "version": 1})
    sub = Subscription(None, "s1", [state], [])
    assert sub.list_state("search", v["params"]) == state


@pytest.mark.parametrize("v", VECTORS["default_socket"], ids=lambda v: repr(v["env"]))
def test_default_socket(v, monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    for name, value in v["env"].items():
        monkeypatch.setenv(name, value)
    assert nmc.default_socket_path() == v["path"].replace("{uid}", str(os.getuid()))


# The generated table (clients/python/netmodel_client/_protocol.py, from schema/openrpc.json
# by scripts/gen-protocol) is what the client's public names are.
SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "schema" / "openrpc.json").read_text())


def test_error_classes_and_constants_are_the_table():
    from netmodel_client import _protocol
    from netmodel_client.errors import _BY_CODE

    renamed = SCHEMA["x-netmodel-protocol"]["errorNames"]["renamed"]
    table = {renamed.get(name, name): e["code"] for name, e in SCHEMA["components"]["errors"].items()}
    assert _protocol.ERROR_CODES == table
    assert _protocol.CLIENT_ERROR_CODES == SCHEMA["x-netmodel-protocol"]["clientErrors"]["codes"]
    for name, code in table.items():
        assert getattr(nmc, name).code == code, name  # the class
        assert _BY_CODE[code] is getattr(nmc, name)
        assert getattr(nmc, name_upper(name)) == code  # the constant
    for name, code in _protocol.CLIENT_ERROR_CODES.items():
        assert getattr(nmc, name_upper(name)) == code


def name_upper(name):
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(name)).upper()


def test_topic_shorthands_are_the_table():
    forms = [f["shorthand"] for f in SCHEMA["x-netmodel-protocol"]["topicShorthands"]["forms"]]
    for f in SCHEMA["x-netmodel-protocol"]["topicShorthands"]["forms"]:
        assert topic(f["shorthand"]) == f["topic"]
    with pytest.raises(ValueError, match=", ".join(forms[:-1]) + " or " + forms[-1]):
        topic("nope")
