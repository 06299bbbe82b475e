"""Checks schema/openrpc.json, offline, against the official OpenRPC meta-schema.

The meta-schema (schema/meta/openrpc-meta-schema-1.3.2.json) declares its dialect as
https://meta.json-schema.tools/ and `$ref`s that document for every embedded JSON
Schema; both are vendored in schema/meta/ and served from a local `referencing`
registry, so nothing is fetched from the network (a `$ref` that is not in the registry
fails instead).
"""

import copy
import json
from pathlib import Path

import pytest
from jsonschema import Draft7Validator
from referencing import Registry
from referencing.jsonschema import DRAFT7

ROOT = Path(__file__).resolve().parents[2]
DOC_PATH = ROOT / "schema" / "openrpc.json"
META_DIR = ROOT / "schema" / "meta"

# Where the document under test lives in the registry, so that `#/components/...`
# inside its schemas resolves against the document itself. (.invalid: never fetched.)
DOC_URI = "https://netmodel.invalid/schema/openrpc.json"

JSON_SCHEMA_TOOLS_URI = "https://meta.json-schema.tools/"

# The dialects a meta-schema may declare in `$schema`, and the validator for each.
# json-schema-tools' meta-schema is draft-07's vocabulary with titles added
# (test_json_schema_tools_dialect_is_draft_07 checks that claim).
DIALECTS = {
    JSON_SCHEMA_TOOLS_URI: Draft7Validator,
    "http://json-schema.org/draft-07/schema#": Draft7Validator,
}

# The methods the server answers at this stage of the project, and which of them are
# notifications. Later issues add methods here together with their description.
EXPECTED_METHODS = {
    "initialize": "request",
    "shutdown": "request",
    "exit": "notification",
    "rpc.discover": "request",
    "stats": "request",
    "inspect": "request",
    "$/cancelRequest": "notification",
    # Network models: follows and subscriptions.
    "follow": "request",
    "unfollow": "request",
    "setFollowState": "request",
    "getFollowState": "request",
    "subscribe": "request",
    "unsubscribe": "request",
    "configure": "request",
    # Lists and preload.
    "fetchList": "request",
    "getEntity": "request",
    "setInterfaceState": "request",
    # Waiting for intents to settle.
    "sync": "request",
    # The ledger of outcomes.
    "getMutations": "request",
}

# Notifications the server sends to clients. OpenRPC describes only client-to-server
# methods, so the document lists these under the top-level `x-notifications`, each
# shaped like a method object (params as content descriptors, examples) with
# `x-params-schema` pointing at the schema of its whole params object.
EXPECTED_SERVER_NOTIFICATIONS = {
    "stateChanged": "#/components/schemas/StateChangedParams",
    "statsChanged": "#/components/schemas/StatsParams",
    "configurationChanged": "#/components/schemas/ConfigurationChangedParams",
    "mutationOutcome": "#/components/schemas/MutationOutcomeParams",
}

EXPECTED_ERRORS = {
    "ParseError": -32700,
    "InvalidRequest": -32600,
    "MethodNotFound": -32601,
    "InvalidParams": -32602,
    "InternalError": -32603,
    "RequestCancelled": -32800,
    "BackendUnavailable": -32001,
    "BackendRejected": -32002,
    "Unauthorized": -32003,
    "UnknownKindOrList": -32004,
    "ShuttingDown": -32005,
}


def _load(path):
    return json.loads(path.read_text(encoding="utf-8"))


OPENRPC_META = _load(META_DIR / "openrpc-meta-schema-1.3.2.json")
JSON_SCHEMA_TOOLS_META = _load(META_DIR / "json-schema-tools-meta-schema.json")
DOC = _load(DOC_PATH)


def make_registry(doc):
    tools = DRAFT7.create_resource(JSON_SCHEMA_TOOLS_META)
    return Registry().with_resources(
        [
            # The OpenRPC meta-schema refers to it both with and without the slash.
            (JSON_SCHEMA_TOOLS_URI, tools),
            (JSON_SCHEMA_TOOLS_URI.rstrip("/"), tools),
            (OPENRPC_META["$id"], DRAFT7.create_resource(OPENRPC_META)),
            (DOC_URI, DRAFT7.create_resource(doc)),
        ]
    )


def meta_validator(doc):
    cls = DIALECTS[OPENRPC_META["$schema"]]
    return cls(OPENRPC_META, registry=make_registry(doc), format_checker=cls.FORMAT_CHECKER)


def validator_at(doc, pointer):
    """A validator for the schema at `pointer` ("/methods/0/result/schema") of `doc`."""
    return Draft7Validator(
        {"$ref": DOC_URI + "#" + pointer},
        registry=make_registry(doc),
        format_checker=Draft7Validator.FORMAT_CHECKER,
    )


def resolve_local(doc, ref):
    """Follows a `#/a/b` reference inside `doc` (RFC 6901 unescaping)."""
    assert ref.startswith("#/"), ref
    node = doc
    for token in ref[2:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def is_notification(method):
    return method.get("x-notification") is True


def result_schema_problems(doc):
    """Every request method must describe its result with a schema; a notification must not."""
    problems = []
    for method in doc["methods"]:
        name = method.get("name", "?")
        result = method.get("result")
        if is_notification(method):
            if result is not None:
                problems.append(f"{name}: a notification has no result")
            continue
        if result is None:
            problems.append(f"{name}: no result")
            continue
        if "$ref" in result:
            result = resolve_local(doc, result["$ref"])
        if not isinstance(result.get("schema"), (dict, bool)):
            problems.append(f"{name}: result has no schema")
    return problems


def method_ids():
    return [m["name"] for m in DOC["methods"]]


def describe(errors):
    return "\n".join(f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors)


# --- the meta-schemas -------------------------------------------------------------


def test_meta_schema_is_the_released_1_3_document():
    assert OPENRPC_META["$id"] == "https://meta.open-rpc.org/"
    assert OPENRPC_META["title"] == "openrpcDocument"
    assert "1.3.2" in OPENRPC_META["properties"]["openrpc"]["enum"]
    assert OPENRPC_META["$schema"] in DIALECTS
    DIALECTS[OPENRPC_META["$schema"]].check_schema(OPENRPC_META)


def test_json_schema_tools_dialect_is_draft_07():
    assert JSON_SCHEMA_TOOLS_META["$id"] == JSON_SCHEMA_TOOLS_URI
    Draft7Validator.check_schema(JSON_SCHEMA_TOOLS_META)
    keywords = set(JSON_SCHEMA_TOOLS_META["definitions"]["JSONSchemaObject"]["properties"])
    assert keywords <= set(Draft7Validator.META_SCHEMA["properties"])


def test_no_remote_reference_is_needed():
    registry = make_registry(DOC)
    resolver = registry.resolver()
    for uri in (
        "https://meta.json-schema.tools",
        "https://meta.json-schema.tools/#/definitions/JSONSchemaObject/properties/$ref",
        "https://meta.open-rpc.org/#/definitions/methodObject",
    ):
        resolver.lookup(uri)


# --- the document -------------------------------------------------------------------


def test_document_is_valid_openrpc():
    errors = sorted(meta_validator(DOC).iter_errors(DOC), key=lambda e: list(e.absolute_path))
    assert not errors, describe(errors)


def test_invalid_document_is_rejected():
    broken = copy.deepcopy(DOC)
    broken["methods"][0]["params"] = [{"name": "processId"}]  # a content descriptor needs a schema
    assert list(meta_validator(broken).iter_errors(broken))


def test_document_header():
    assert DOC["openrpc"] == "1.3.2"
    assert DOC["info"]["title"] == "netmodel"
    assert DOC["info"]["version"] == "0.1.0"
    for topic in ("Content-Length", "newline-delimited", "data.limit", "atch"):
        assert topic in DOC["info"]["description"], topic


def test_document_is_two_space_indented_json():
    text = DOC_PATH.read_text(encoding="utf-8")
    assert text == json.dumps(DOC, indent=2, ensure_ascii=False) + "\n"


def test_methods_are_exactly_the_expected_methods():
    names = [m["name"] for m in DOC["methods"]]
    assert len(names) == len(set(names)), "method names must be unique"
    assert set(names) == set(EXPECTED_METHODS)
    for method in DOC["methods"]:
        kind = "notification" if is_notification(method) else "request"
        assert kind == EXPECTED_METHODS[method["name"]], method["name"]


def test_every_ref_resolves():
    registry = make_registry(DOC)

    def walk(node, where):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                if ref.startswith("#"):
                    resolve_local(DOC, ref)
                else:
                    registry.resolver().lookup(ref)
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}")

    walk(DOC, "")


def test_error_components():
    errors = DOC["components"]["errors"]
    assert {name: e["code"] for name, e in errors.items()} == EXPECTED_ERRORS
    assert errors["ShuttingDown"]["message"] == "server shutting down"
    check = validator_at(DOC, "/components/schemas/ErrorObject")
    for name, error in errors.items():
        problems = list(check.iter_errors(error))
        assert not problems, f"{name}: {describe(problems)}"


def test_error_object_schema_demands_data_per_code():
    check = validator_at(DOC, "/components/schemas/ErrorObject")
    assert check.is_valid({"code": -32600, "message": "too large", "data": {"limit": 16777216}})
    assert check.is_valid({"code": -32601, "message": "Method not found"})
    assert not check.is_valid({"code": -32602, "message": "Invalid params"})
    assert not check.is_valid({"code": -32001, "message": "x", "data": {"retryable": False}})
    assert not check.is_valid({"code": -32003, "message": "x", "data": {"status": 500, "retryable": False}})


@pytest.mark.parametrize("name", method_ids())
def test_method_errors_reference_components(name):
    method = next(m for m in DOC["methods"] if m["name"] == name)
    for entry in method.get("errors", []):
        assert entry.get("$ref", "").startswith("#/components/errors/"), entry
        resolve_local(DOC, entry["$ref"])
    if not is_notification(method):
        codes = {resolve_local(DOC, e["$ref"])["code"] for e in method["errors"]}
        assert -32005 in codes, "every request is answered -32005 after shutdown"


# --- results and examples ---------------------------------------------------------------


def test_every_request_method_has_a_result_schema():
    assert result_schema_problems(DOC) == []


@pytest.mark.parametrize(
    "name", [n for n, kind in EXPECTED_METHODS.items() if kind == "request"]
)
def test_a_missing_result_schema_is_caught(name):
    without_result = copy.deepcopy(DOC)
    method = next(m for m in without_result["methods"] if m["name"] == name)
    del method["result"]
    assert result_schema_problems(without_result) == [f"{name}: no result"]

    without_schema = copy.deepcopy(DOC)
    method = next(m for m in without_schema["methods"] if m["name"] == name)
    del method["result"]["schema"]
    assert result_schema_problems(without_schema) == [f"{name}: result has no schema"]


@pytest.mark.parametrize("name", method_ids())
def test_method_has_an_example(name):
    method = next(m for m in DOC["methods"] if m["name"] == name)
    assert method.get("examples"), f"{name} has no example"


@pytest.mark.parametrize("name", method_ids())
def test_example_results_match_the_result_schema(name):
    index, method = next((i, m) for i, m in enumerate(DOC["methods"]) if m["name"] == name)
    check = None if is_notification(method) else validator_at(DOC, f"/methods/{index}/result/schema")
    for example in method["examples"]:
        if check is None:
            assert "result" not in example, f"{name}: a notification's example has no result"
            continue
        assert "result" in example, f"{name}: example {example['name']!r} has no result"
        problems = list(check.iter_errors(example["result"]["value"]))
        assert not problems, f"{name}: example {example['name']!r}: {describe(problems)}"


@pytest.mark.parametrize("name", method_ids())
def test_example_params_match_the_param_descriptors(name):
    index, method = next((i, m) for i, m in enumerate(DOC["methods"]) if m["name"] == name)
    assert method.get("paramStructure") == "by-name"
    declared = {p["name"]: j for j, p in enumerate(method["params"])}
    required = {p["name"] for p in method["params"] if p.get("required")}
    for example in method["examples"]:
        given = {p["name"]: p["value"] for p in example["params"]}
        assert set(given) <= set(declared), f"{name}: undeclared params {set(given) - set(declared)}"
        assert required <= set(given), f"{name}: missing required params {required - set(given)}"
        for param, value in given.items():
            check = validator_at(DOC, f"/methods/{index}/params/{declared[param]}/schema")
            problems = list(check.iter_errors(value))
            assert not problems, f"{name}.{param}: {describe(problems)}"


def test_result_schemas_reject_wrong_values():
    by_name = {m["name"]: i for i, m in enumerate(DOC["methods"])}
    stats = validator_at(DOC, f"/methods/{by_name['stats']}/result/schema")
    assert not stats.is_valid({"uptimeMs": 1})
    initialize = validator_at(DOC, f"/methods/{by_name['initialize']}/result/schema")
    assert not initialize.is_valid(
        {"serverInfo": {"name": "other", "version": "1"}, "protocolVersion": "1.0", "capabilities": {"methods": []}}
    )
    shutdown = validator_at(DOC, f"/methods/{by_name['shutdown']}/result/schema")
    assert not shutdown.is_valid({})
    discover = validator_at(DOC, f"/methods/{by_name['rpc.discover']}/result/schema")
    assert discover.is_valid(DOC)
    assert not discover.is_valid({"openrpc": "1.3.2"})


def test_initialize_example_lists_every_method():
    method = next(m for m in DOC["methods"] if m["name"] == "initialize")
    for example in method["examples"]:
        listed = example["result"]["value"]["capabilities"]["methods"]
        assert sorted(listed) == sorted(EXPECTED_METHODS)


# --- network models -----------------------------------------------------------------------


def entity_state(**changes):
    state = {
        "kind": "artist",
        "id": "banksy",
        "following": True,
        "confirmed": None,
        "pending": True,
        "error": None,
        "attributes": None,
        "version": 1,
    }
    state.update(changes)
    return state


def test_entity_state_schema():
    check = validator_at(DOC, "/components/schemas/EntityState")
    assert check.is_valid(entity_state())
    assert check.is_valid(entity_state(following=None, pending=False, version=0))
    assert check.is_valid(
        entity_state(error={"code": -32001, "message": "backend unavailable", "retryable": True}, attributes={})
    )
    assert not check.is_valid(entity_state(kind="Artist"))
    assert not check.is_valid(entity_state(kind="a" * 65))
    assert check.is_valid(entity_state(kind="a" * 64))
    assert not check.is_valid(entity_state(id=""))
    assert not check.is_valid(entity_state(id="x" * 257))
    assert not check.is_valid(entity_state(version=-1))
    assert not check.is_valid(entity_state(pending=None))
    assert not check.is_valid(entity_state(error={"code": -32001, "message": "x"}))
    assert not check.is_valid(entity_state(attributes=[]))
    without_version = entity_state()
    del without_version["version"]
    assert not check.is_valid(without_version)


def test_topic_schema():
    check = validator_at(DOC, "/components/schemas/Topic")
    assert check.is_valid({"type": "entity", "kind": "artist", "id": "banksy"})
    assert check.is_valid({"type": "entity", "kind": "artist"})
    assert check.is_valid({"type": "entity"})
    assert check.is_valid({"type": "list", "list": "following/artist", "params": {}})
    assert not check.is_valid({"type": "entity", "id": "banksy"}), "an id needs a kind"
    assert not check.is_valid({"type": "list"})
    assert not check.is_valid({"type": "gallery"})
    assert not check.is_valid({"kind": "artist"})


def test_subscribe_needs_a_topic():
    by_name = {m["name"]: i for i, m in enumerate(DOC["methods"])}
    index = by_name["subscribe"]
    topics = next(j for j, p in enumerate(DOC["methods"][index]["params"]) if p["name"] == "topics")
    check = validator_at(DOC, f"/methods/{index}/params/{topics}/schema")
    assert not check.is_valid([])
    assert check.is_valid([{"type": "entity"}])


def test_stats_schema_demands_the_model_counters():
    by_name = {m["name"]: i for i, m in enumerate(DOC["methods"])}
    index = by_name["stats"]
    check = validator_at(DOC, f"/methods/{index}/result/schema")
    example = copy.deepcopy(DOC["methods"][index]["examples"][0]["result"]["value"])
    assert check.is_valid(example)
    for field in ("backend", "dedupeHits", "cacheHits", "entities", "subscriptions", "notifications", "outbox",
                  "residentMemoryBytes"):
        without = copy.deepcopy(example)
        del without[field]
        assert not check.is_valid(without), field


def test_application_errors_may_carry_the_state():
    check = validator_at(DOC, "/components/schemas/ErrorObject")
    rolled_back = entity_state(following=False, confirmed=False, pending=False, version=3,
                               error={"code": -32002, "message": "rejected", "retryable": False})
    assert check.is_valid(
        {"code": -32002, "message": "rejected", "data": {"status": 422, "retryable": False, "state": rolled_back}}
    )
    assert not check.is_valid(
        {"code": -32001, "message": "unavailable", "data": {"retryable": True, "state": {"kind": "artist"}}}
    )


def server_notifications():
    return DOC.get("x-notifications", [])


def test_server_notifications_are_exactly_the_expected_ones():
    names = [n["name"] for n in server_notifications()]
    assert len(names) == len(set(names))
    assert set(names) == set(EXPECTED_SERVER_NOTIFICATIONS)
    assert not set(names) & set(EXPECTED_METHODS), "a server notification is not a method clients call"
    for entry in server_notifications():
        assert entry["x-params-schema"] == {"$ref": EXPECTED_SERVER_NOTIFICATIONS[entry["name"]]}
        assert entry.get("description"), entry["name"]
        assert "result" not in entry and "errors" not in entry, "a notification is never answered"


@pytest.mark.parametrize("name", sorted(EXPECTED_SERVER_NOTIFICATIONS))
def test_server_notification_is_shaped_like_a_method_object(name):
    index = next(i for i, n in enumerate(server_notifications()) if n["name"] == name)
    entry = copy.deepcopy(server_notifications()[index])
    del entry["x-params-schema"]
    # Validate the entry as OpenRPC would validate a method object (its content
    # descriptors, schemas and examples), inside a copy of the document.
    as_method = copy.deepcopy(DOC)
    as_method["methods"].append(entry)
    errors = list(meta_validator(as_method).iter_errors(as_method))
    assert not errors, describe(errors)


@pytest.mark.parametrize("name", sorted(EXPECTED_SERVER_NOTIFICATIONS))
def test_server_notification_examples_validate(name):
    index, entry = next((i, n) for i, n in enumerate(server_notifications()) if n["name"] == name)
    assert entry.get("examples"), f"{name} has no example"
    assert entry.get("paramStructure") == "by-name"
    declared = {p["name"]: j for j, p in enumerate(entry["params"])}
    required = {p["name"] for p in entry["params"] if p.get("required")}
    whole = validator_at(DOC, EXPECTED_SERVER_NOTIFICATIONS[name][1:])
    for example in entry["examples"]:
        assert "result" not in example
        given = {p["name"]: p["value"] for p in example["params"]}
        assert set(given) <= set(declared), f"{name}: undeclared params {set(given) - set(declared)}"
        assert required <= set(given), f"{name}: missing required params {required - set(given)}"
        for param, value in given.items():
            check = validator_at(DOC, f"/x-notifications/{index}/params/{declared[param]}/schema")
            problems = list(check.iter_errors(value))
            assert not problems, f"{name}.{param}: {describe(problems)}"
        problems = list(whole.iter_errors(given))
        assert not problems, f"{name}: example {example['name']!r}: {describe(problems)}"


def test_state_changed_params_schema():
    check = validator_at(DOC, "/components/schemas/StateChangedParams")
    assert check.is_valid({"subscription": "s1", "seq": 1, "state": entity_state()})
    assert not check.is_valid({"subscription": "s1", "seq": 0, "state": entity_state()})
    assert not check.is_valid({"subscription": "s1", "seq": 1})
    assert not check.is_valid({"subscription": "s1", "seq": 1, "state": {"kind": "artist", "id": "banksy"}})


def test_list_state_schema():
    check = validator_at(DOC, "/components/schemas/ListState")
    state = {
        "list": "followedArtists", "params": {}, "state": "loaded",
        "items": [{"kind": "artist", "id": "banksy", "following": True, "attributes": {"name": "Banksy"}}],
        "sections": [{"title": "B", "start": 0, "count": 1}], "hasMore": False, "error": None, "version": 2,
    }
    assert check.is_valid(state)
    assert check.is_valid({**state, "state": "failure", "error": {"code": -32001, "message": "x", "retryable": True}})
    assert not check.is_valid({**state, "state": "done"})
    assert not check.is_valid({**state, "sections": [{"title": "B", "start": 0, "count": 0}]})
    assert not check.is_valid({**state, "items": [{"kind": "artist", "id": "banksy"}]})
    notification = validator_at(DOC, "/components/schemas/StateChangedParams")
    assert notification.is_valid({"subscription": "s1", "seq": 3, "state": state})
