"""schema/backend.schema.json against the parser it documents (`netmodel check-config`).

The Swift parser (Sources/NetworkModels/REST/Configuration/RESTConfiguration+Parsing.swift) *is* the
format; the schema is its documentation for people and editors. These tests keep the
two in step:

- the schema is a valid JSON Schema 2020-12 (checked offline against jsonschema's
  bundled meta-schemas), every `$ref` is local, every object says
  `additionalProperties` and allows `$schema` and `description`;
- the known-good configurations (examples/artsy/config.json, the Swift tests'
  `artsyLikeConfiguration`) pass both;
- a differential table of configurations, each with one field changed, gets the same
  verdict from the schema and from `check-config` (exit 0 or 2), and for a refused one
  the JSON Pointer `check-config` prints is the pointer jsonschema reports for the
  error, or a prefix (parent) of it;
- the same for `lists` (LIST_ACCEPTED, LIST_REFUSED, LIST_KNOWN_DIFFERENCES), over
  BASE plus LISTS, and the lists of Tests/NetworkModelsTests/REST/Lists/RESTListTests.swift;
- what a JSON Schema cannot say (KNOWN_DIFFERENCES) is refused by `check-config`
  alone, with its pointer;
- `check-config`'s command line: a missing file, a file that is not JSON, `--help`.

The table found six parser bugs (CRLF in header values and auth.scheme, "+404" and
"0404" status keys, `pointer` with `nonEmpty`, a pointer whose "/" is followed by a
combining mark); they are fixed and stay in the table as ordinary cases. The cases
marked xfail(strict=True) are parser bugs not fixed yet: the schema says what the
format should be, check-config still accepts them (see each reason).
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "schema" / "backend.schema.json"
ARTSY_EXAMPLE = ROOT / "examples" / "artsy" / "config.json"
SWIFT_TEST = ROOT / "Tests" / "NetworkModelsTests" / "REST" / "Configuration" / "RESTConfigurationTests.swift"
SWIFT_LIST_TEST = ROOT / "Tests" / "NetworkModelsTests" / "REST" / "Lists" / "RESTListTests.swift"

pytestmark = pytest.mark.timeout(60)

# A copy of `artsyLikeConfiguration` in Tests/NetworkModelsTests/REST/Configuration/RESTConfigurationTests.swift
# (test_swift_test_configuration_is_valid also checks the live one): every feature of
# the format at least once, and the base of the mutations below.
ARTSY_LIKE_CONFIGURATION = r"""
{
  "$schema": "../schema/backend.schema.json",
  "environments": {"test": "http://127.0.0.1:1", "production": "https://api.example.com/"},
  "auth": {"header": "X-Access-Token", "tokenEnv": "TEST_TOKEN"},
  "headers": {"Accept": "application/json"},
  "timeoutMs": 2000,
  "maxInFlight": 4,
  "retry": {"maxRetries": 2, "baseDelayMs": 10, "maxDelayMs": 40},
  "kinds": {
    "artist": {
      "follow": {"method": "POST", "path": "/api/v1/me/follow/artist", "form": {"artist_id": "{id}"},
                 "attributes": "/artist"},
      "unfollow": {"method": "DELETE", "path": "/api/v1/me/follow/artist/{id}", "onStatus": {"404": "done"}},
      "state": {"method": "GET", "path": "/api/v1/me/follow/artists", "query": {"artists[]": "{ids}"},
                "batch": {"maxIds": 50, "windowMs": 2, "id": "/artist/id"}, "onStatus": {"404": "notFollowing"}}
    },
    "profile": {
      "follow": {"method": "POST", "path": "/api/v1/me/follow/profile", "json": {"profile_id": "{id}"}},
      "unfollow": {"method": "DELETE", "path": "/api/v1/me/follow/profile/{id}"},
      "state": {"method": "GET", "path": "/api/v1/me/follow/profile/{id}", "onStatus": {"404": "notFollowing"}}
    },
    "gene": {
      "follow": {"method": "PUT", "path": "/genes/{id}/follow", "json": {"kind": "{kind}", "ids": ["{id}"]}},
      "unfollow": {"method": "DELETE", "path": "/genes/{id}/follow"},
      "state": {"method": "GET", "path": "/genes/{id}", "following": {"pointer": "/is_followed"}}
    },
    "show": {
      "retry": {"maxRetries": 0},
      "follow": {"method": "POST", "path": "/shows/{id}/follow"},
      "unfollow": {"method": "DELETE", "path": "/shows/{id}/follow"},
      "state": {"method": "GET", "path": "/me/follows", "query": {"show_id": "{id}"}, "following": "nonEmpty"}
    }
  }
}
"""
BASE = json.loads(ARTSY_LIKE_CONFIGURATION)


# --------------------------------------------------------------------------
# helpers


@pytest.fixture(scope="module")
def schema():
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def validator(schema):
    # The schema is self-contained (every $ref is "#/$defs/…"), so nothing is fetched.
    return Draft202012Validator(schema)


def pointer(tokens) -> str:
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


def tokens(ptr: str) -> list[str]:
    if ptr == "":
        return []
    assert ptr.startswith("/"), ptr
    return [t.replace("~1", "/").replace("~0", "~") for t in ptr[1:].split("/")]


def is_prefix(parent: str, child: str) -> bool:
    """True when `parent` is `child` or one of its ancestors (token-wise)."""
    p, c = tokens(parent), tokens(child)
    return c[: len(p)] == p


def error_pointers(error) -> set[str]:
    """The pointers one jsonschema error is about. jsonschema reports a bad *key* at the
    object holding it (propertyNames, additionalProperties: false); netmodel reports it
    at the key, so the key is appended here."""
    base = list(error.absolute_path)
    if "propertyNames" in error.absolute_schema_path:
        return {pointer(base + [error.instance])}
    if error.validator == "additionalProperties" and error.validator_value is False:
        known = set(error.schema.get("properties", {}))
        patterns = list(error.schema.get("patternProperties", {}))
        extras = [
            key for key in error.instance if key not in known and not any(re.search(p, key) for p in patterns)
        ]
        return {pointer(base + [key]) for key in extras}
    return {pointer(base)}


def all_error_pointers(error) -> set[str]:
    """error_pointers of the error and of the errors inside it (anyOf, oneOf branches)."""
    result = error_pointers(error)
    for sub in error.context or []:
        result |= all_error_pointers(sub)
    return result


def mutate(doc, *ops):
    """A deep copy of `doc` with ops applied: ("set", ptr, value), ("del", ptr),
    ("rename", ptr, new_name); ("set", "", value) replaces the whole document."""
    doc = copy.deepcopy(doc)
    for op, ptr, *rest in ops:
        if ptr == "":
            assert op == "set"
            doc = copy.deepcopy(rest[0])
            continue
        *parents, last = tokens(ptr)
        target = doc
        for t in parents:
            target = target[int(t)] if isinstance(target, list) else target[t]
        if op == "set":
            target[last] = copy.deepcopy(rest[0])
        elif op == "del":
            del target[last]
        elif op == "rename":
            target[rest[0]] = target.pop(last)
        else:
            raise ValueError(op)
    return doc


def S(ptr, value):
    return ("set", ptr, value)


def D(ptr):
    return ("del", ptr)


def R(ptr, new_name):
    return ("rename", ptr, new_name)


class CheckConfig:
    """`netmodel check-config FILE`'s verdict: exit code, and for a refusal the pointer."""

    MESSAGE = re.compile(r"netmodel: (?P<file>.+?)(?: at (?P<pointer>/.*?))?: (?P<reason>.+)\n?\Z", re.DOTALL)

    def __init__(self, netmodel_bin, folder: Path):
        self.bin = netmodel_bin
        self.folder = folder
        self.count = 0

    def run_text(self, text: str):
        self.count += 1
        path = self.folder / f"config{self.count}.json"
        path.write_text(text, encoding="utf-8")
        return self.run_file(path)

    def run(self, doc, warnings=()):
        self.count += 1
        path = self.folder / f"config{self.count}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        return self.run_file(path, warnings)

    def run_file(self, path, warnings=()):
        """`warnings`: the pointers of the warnings expected on stderr for an accepted file."""
        proc = subprocess.run(
            [str(self.bin), "check-config", str(path)], capture_output=True, text=True, timeout=30
        )
        assert proc.returncode in (0, 2), f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
        if proc.returncode == 0:
            assert proc.stdout.startswith(f"{path}: ok — kinds: "), proc.stdout
            assert proc.stderr.splitlines() == [
                line for line in proc.stderr.splitlines() if line.startswith(f"netmodel: warning: {path} at ")
            ], proc.stderr
            said = [line.split(" at ", 1)[1].split(": ", 1)[0] for line in proc.stderr.splitlines()]
            assert said == list(warnings), proc.stderr
            return 0, None, proc.stdout + proc.stderr
        assert proc.stdout == ""
        match = self.MESSAGE.match(proc.stderr)
        assert match and match["file"] == str(path), f"unexpected message: {proc.stderr!r}"
        return 2, match["pointer"] or "", proc.stderr


@pytest.fixture
def check_config(netmodel_bin, tmp_path):
    return CheckConfig(netmodel_bin, tmp_path)


def explain(errors) -> str:
    return "\n".join(f"  {sorted(all_error_pointers(e))}: {e.message}" for e in errors) or "  (none)"


# --------------------------------------------------------------------------
# the schema itself


def test_schema_is_a_valid_2020_12_schema(schema):
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert validator_for(schema) is Draft202012Validator
    # Against the 2020-12 meta-schema bundled with jsonschema (no network).
    Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith("/schema/backend.schema.json")
    assert schema["title"] and len(schema["description"]) > 200


def _subschemas(node, path="#"):
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _subschemas(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _subschemas(value, f"{path}/{index}")


def test_every_ref_is_local_and_resolves(schema):
    refs = [(path, node["$ref"]) for path, node in _subschemas(schema) if isinstance(node.get("$ref"), str)]
    assert refs
    for path, ref in refs:
        assert ref.startswith("#/$defs/"), f"{path}: {ref} is not local"
        assert ref[len("#/$defs/") :] in schema["$defs"], f"{path}: {ref} does not resolve"


def test_every_object_is_closed_and_allows_schema_and_description(schema):
    objects = [
        (path, node)
        for path, node in _subschemas(schema)
        if node.get("type") == "object" and "/properties/$schema" not in path
    ]
    assert len(objects) >= 14
    for path, node in objects:
        assert "additionalProperties" in node, f"{path} says nothing of unknown fields"
        props = node.get("properties", {})
        assert "$schema" in props and "description" in props, f"{path} must allow $schema and description"


def test_every_field_is_described(schema):
    defs = schema["$defs"]

    def described(node):
        return "description" in node or ("$ref" in node and "description" in defs[node["$ref"].split("/")[-1]])

    for name, node in defs.items():
        assert described(node), f"$defs/{name} has no description"
    for path, node in _subschemas(schema):
        for name, sub in (node.get("properties") or {}).items():
            if isinstance(sub, dict):
                assert described(sub), f"{path}/properties/{name} has no description"


# --------------------------------------------------------------------------
# known-good configurations


def test_swift_fixture_copy_is_valid(validator, check_config):
    errors = list(validator.iter_errors(BASE))
    assert not errors, explain(errors)
    code, _, out = check_config.run_text(ARTSY_LIKE_CONFIGURATION)
    assert code == 0
    assert "kinds: artist, gene, profile, show; environments: test, production (default test)" in out


def test_swift_test_configuration_is_valid(validator, check_config):
    """The live `artsyLikeConfiguration` (it may have grown since the copy above)."""
    assert SWIFT_TEST.exists(), f"{SWIFT_TEST} is gone: point SWIFT_TEST at where it went"
    match = re.search(r'let artsyLikeConfiguration = #"""\n(.*?)\n\s*"""#', SWIFT_TEST.read_text(encoding="utf-8"), re.S)
    assert match, "artsyLikeConfiguration not found in the Swift test"
    text = match[1]
    doc = json.loads(text)
    errors = list(validator.iter_errors(doc))
    assert not errors, explain(errors)
    assert check_config.run_text(text)[0] == 0


def test_artsy_example_is_valid(validator, check_config):
    if not ARTSY_EXAMPLE.exists():
        pytest.skip(f"{ARTSY_EXAMPLE} does not exist yet")
    doc = json.loads(ARTSY_EXAMPLE.read_text(encoding="utf-8"))
    errors = list(validator.iter_errors(doc))
    assert not errors, explain(errors)
    code, _, out = check_config.run_file(ARTSY_EXAMPLE)
    assert code == 0, out


@pytest.mark.parametrize("example", sorted(ROOT.glob("examples/*/config.json")), ids=lambda p: p.parent.name)
def test_every_example_is_valid(example, validator, check_config):
    doc = json.loads(example.read_text(encoding="utf-8"))
    errors = list(validator.iter_errors(doc))
    assert not errors, explain(errors)
    code, _, out = check_config.run_file(example)
    assert code == 0, out


def test_swift_list_test_configuration_is_valid(validator, check_config):
    """The configuration of Tests/NetworkModelsTests/REST/Lists/RESTListTests.swift: a list of each
    paging style, params, sections, following both ways."""
    assert SWIFT_LIST_TEST.exists(), f"{SWIFT_LIST_TEST} is gone: point SWIFT_LIST_TEST at where it went"
    source = SWIFT_LIST_TEST.read_text(encoding="utf-8")
    match = re.search(r'RESTConfiguration\.parse\(\s*#"""\n(.*?)\n\s*"""#', source, re.S)
    assert match, "the list configuration was not found in the Swift test"
    text = match[1].replace(r"\#(server.baseURL)", "http://127.0.0.1:1")
    doc = json.loads(text)
    assert {"byPage", "byOffset", "byCursor", "byLink", "ofGene"} <= set(doc["lists"])
    errors = list(validator.iter_errors(doc))
    assert not errors, explain(errors)
    assert check_config.run_text(text)[0] == 0


def test_lists_base_is_valid(validator, check_config):
    errors = list(validator.iter_errors(LIST_BASE))
    assert not errors, explain(errors)
    assert check_config.run(LIST_BASE)[0] == 0


# --------------------------------------------------------------------------
# the differential table: one field changed, same verdict from both

_LONG_KIND = "k" + "-" * 63  # 64 characters: the longest kind name
_ALL_OBJECTS_DOCUMENTED = [
    S("/description", ["any", "value"]),
    S("/environments/description", 5),
    S("/auth/$schema", None),
    S("/headers/description", {"not": "a header"}),
    S("/retry/description", "r"),
    S("/kinds/description", "not a kind"),
    S("/kinds/$schema", 1),
    S("/kinds/artist/description", "a"),
    S("/kinds/artist/follow/description", "f"),
    S("/kinds/artist/follow/form/description", 7),
    S("/kinds/artist/unfollow/onStatus/description", "s"),
    S("/kinds/artist/state/query/$schema", True),
    S("/kinds/artist/state/batch/description", "b"),
    S("/kinds/gene/state/following/description", "g"),
    S("/kinds/show/retry/description", "x"),
]

ACCEPTED = [
    pytest.param([], id="unchanged"),
    pytest.param(_ALL_OBJECTS_DOCUMENTED, id="description-and-$schema-in-every-object"),
    pytest.param([S("/environment", "production")], id="environment-named"),
    pytest.param([S("/environments/plain", "https://")], id="environment-https-prefix-only"),
    # With auth set, plain http:// only to loopback (issue 16): the token never travels in clear.
    pytest.param(
        [S("/environments/a", "http://localhost"), S("/environments/b", "http://127.10.0.1:8080/api/"),
         S("/environments/c", "http://[::1]:1?x"), S("/environments/d", "http://127.0.0.1#f")],
        id="plain-http-to-loopback",
    ),
    pytest.param([D("/auth"), S("/environments/lan", "http://10.0.0.5:8080")], id="plain-http-without-auth"),
    pytest.param([S("/timeoutMs", 1), S("/connectTimeoutMs", 600000), S("/maxInFlight", 1024)], id="root-limits"),
    pytest.param([S("/retry", {"maxRetries": 100, "baseDelayMs": 1, "maxDelayMs": 3600000, "whenExhausted": "queue"})], id="retry-limits"),
    pytest.param([S("/kinds/show/retry", {"maxRetries": 0, "whenExhausted": "rollback"})], id="kind-retry"),
    pytest.param([S("/retry", {"onUnauthorized": "rollback"})], id="retry-onUnauthorized-rollback"),
    # Issue 11 (GitHub): status meanings that depend on a header, "retry", reset headers, {id*}.
    pytest.param([S("/retry/maxWaitMs", 0)], id="retry-maxWaitMs-0"),
    pytest.param([S("/retry/maxWaitMs", 86400000)], id="retry-maxWaitMs-a-day"),
    pytest.param([S("/rateLimit", {"resetHeader": "x-ratelimit-reset", "remainingHeader": "x-ratelimit-remaining", "description": "GitHub"})], id="rateLimit-both"),
    pytest.param([S("/rateLimit", {})], id="rateLimit-empty"),
    # Issue 27 §5: what a 403 means, per API.
    pytest.param([S("/forbidden", "credentials")], id="forbidden-credentials"),
    pytest.param([S("/forbidden", "refusal")], id="forbidden-refusal"),
    pytest.param([S("/forbidden", {"messages": ["/message", "/error/message"], "credentialWords": ["token"], "description": "GitHub"})], id="forbidden-github"),
    pytest.param([S("/forbidden", {"credentialWords": []})], id="forbidden-every-message-refuses"),
    pytest.param([S("/kinds/artist/follow/onStatus", {"403": {"means": "retry", "when": {"header": "x-ratelimit-remaining", "equals": "0"}}, "429": "retry"})], id="onStatus-rule-follow"),
    pytest.param([S("/kinds/artist/unfollow/onStatus/403", [{"means": "retry", "when": {"header": "x-ratelimit-remaining", "equals": "0"}}, {"means": "retry", "when": {"header": "retry-after"}}, {"means": "done"}])], id="onStatus-rules-array"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "notFollowing", "description": "no when: always", "$schema": 1})], id="onStatus-rule-without-when"),
    pytest.param([S("/kinds/artist/state/onStatus/403", [{"means": "retry", "when": {"header": "retry-after", "description": "w"}}])], id="onStatus-rule-batched-state"),
    pytest.param([S("/kinds/profile/detail", {"method": "GET", "path": "/p/{id}", "onStatus": {"403": [{"means": "retry", "when": {"header": "x-ratelimit-remaining", "equals": "0"}}]}})], id="onStatus-detail-retry"),
    # Rules on the answer's body: a JSON Pointer, compared with `equals` or `contains`.
    pytest.param([S("/kinds/artist/follow/onStatus", {"400": {"means": "following", "when": {"pointer": "/error/errors/0/reason", "equals": "subscriptionDuplicate"}}, "403": [{"means": "retry", "when": {"pointer": "/error/errors/0/reason", "equals": "quotaExceeded"}}]})], id="onStatus-rule-pointer-equals"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "notFollowing", "when": {"pointer": "/blocked", "description": "present, not null"}})], id="onStatus-rule-pointer-present"),
    pytest.param([S("/kinds/artist/unfollow/onStatus/403", [{"means": "retry", "waitMs": 60000, "when": {"pointer": "/message", "contains": "secondary rate limit"}}, {"means": "retry", "when": {"header": "x-reason", "contains": "quota"}}])], id="onStatus-rule-contains-and-waitMs"),
    pytest.param([S("/kinds/profile/detail", {"method": "GET", "path": "/p/{id}", "onStatus": {"429": {"means": "retry", "waitMs": 1}}})], id="onStatus-rule-waitMs-without-when"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"pointer": "", "equals": "quota"}})], id="onStatus-rule-pointer-whole-answer"),
    pytest.param([S("/kinds/profile/detail", {"method": "GET", "path": "/p/{id}", "onStatus": {}})], id="onStatus-detail-empty"),
    pytest.param([S("/kinds/profile/follow/path", "/stars/{id*}"), S("/kinds/profile/unfollow/path", "/stars/{kind}/{id*}/x")], id="path-id-exploded"),
    pytest.param([S("/kinds/show/retry", {"onUnauthorized": "wait"})], id="kind-retry-onUnauthorized-wait"),
    pytest.param([S("/kinds/artist/state/batch", {"maxIds": 1000, "windowMs": 0, "items": "", "id": ""})], id="batch-limits"),
    pytest.param([S("/kinds/artist/state/batch/maxIds", 1)], id="batch-maxIds-1"),
    pytest.param([R("/kinds/show", _LONG_KIND)], id="kind-name-64-chars"),
    pytest.param([R("/kinds/show", "a_b-9")], id="kind-name-underscore-dash"),
    pytest.param([S("/kinds/gene/state/following", {"nonEmpty": ""})], id="following-nonEmpty-root"),
    pytest.param([S("/kinds/gene/state/following", "success")], id="following-success"),
    pytest.param([S("/kinds/show/state/query/show_id", ["{id}", "x"]), S("/kinds/show/state/query/e", [])], id="query-arrays"),
    pytest.param([S("/kinds/profile/follow/json", None)], id="json-null"),
    pytest.param([S("/kinds/profile/follow/json", [1, 2.5, True, {"a": ["{id}", None]}])], id="json-nested"),
    pytest.param([S("/kinds/profile/state/onStatus", {"100": "following", "599": "following", "404": "notFollowing"})], id="onStatus-limits"),
    # Each endpoint takes the meanings it can honour (issue 10): the state a change makes
    # stands for "done", and a batched state endpoint's meaning holds for all its ids.
    pytest.param([S("/kinds/artist/follow/onStatus", {"409": "following", "404": "done"})], id="onStatus-follow-following"),
    pytest.param([S("/kinds/artist/unfollow/onStatus", {"404": "notFollowing", "410": "done"})], id="onStatus-unfollow-notFollowing"),
    pytest.param([S("/kinds/artist/state/onStatus", {"404": "notFollowing", "299": "following"})], id="onStatus-batched-state"),
    pytest.param([S("/kinds/profile/detail", {"method": "GET", "path": "/p/{id}", "description": "no onStatus"})], id="detail-without-onStatus"),
    pytest.param([S("/kinds/profile/state/path", "/")], id="path-slash"),
    pytest.param([S("/kinds/profile/state/path", "/a{b")], id="path-unclosed-brace-is-text"),
    # Dots that are not a whole segment, and dot segments after "?" (a query), are plain text.
    pytest.param([S("/kinds/profile/state/path", "/a/.../.b/c./%2e%2e%2e/{id}.json?x=/../")], id="path-dots-not-segments"),
    pytest.param([S("/kinds/profile/state/path", "/d/.{id}")], id="path-dot-before-placeholder"),
    pytest.param([S("/kinds/profile/detail", {"method": "PATCH", "path": "/p/{kind}/{id}", "attributes": "/a~0b~1c", "timeoutMs": 600000})], id="detail-endpoint"),
    pytest.param([S("/kinds/profile/state/headers", {"X-!#$%&'*+.^_`|~": "v: 1"})], id="header-token-chars"),
    pytest.param([S("/auth", {"header": "Authorization", "scheme": "Bearer"})], id="auth-scheme"),
    # Where the token comes from (issue 27): a file of the user's, a systemd credential.
    pytest.param([S("/auth/tokenFile", "~/.config/netmodel/token")], id="auth-tokenFile-home"),
    pytest.param([S("/auth/tokenFile", "token"), S("/auth/tokenCredential", "artsy-token")], id="auth-token-sources"),
    pytest.param([S("/auth/tokenCredential", "a.b_c-d")], id="auth-tokenCredential-dots"),
    pytest.param([S("/kinds/artist/state/json", {"ids": "{ids}"}), D("/kinds/artist/state/query")], id="batched-json-ids"),
    pytest.param([S("/kinds/artist/state/form", {"a[]": ["{ids}"]}), D("/kinds/artist/state/query")], id="batched-form-ids"),
    pytest.param(
        [S("/kinds/gene/state/following/pointer", "/\u0301is_followed")],
        id="pointer-token-starting-with-combining-mark",
    ),
    # GraphQL (issue 11): the body form, an errors pointer, literal braces.
    pytest.param(
        [S("/kinds/profile/follow", {"path": "/v2", "graphql": {
            "query": "mutation F($input: I!) { f(input: $input) { ok } }", "operationName": "F",
            "variables": {"input": {"id": "{id}", "kind": "{kind}", "b": True, "n": 1.5, "x": None, "l": ["{id}"]}}}})],
        id="graphql-follow-without-method",
    ),
    pytest.param(
        [S("/kinds/profile/unfollow", {"method": "POST", "path": "/v2", "errors": "/errs/0",
                                       "graphql": {"query": "q", "description": "c", "$schema": "s"}})],
        id="graphql-post-with-errors-and-comments",
    ),
    pytest.param(
        [S("/kinds/profile/follow", {"path": "/v2", "graphql": {"query": "q", "variables": {"description": "{id}"}}})],
        id="graphql-variable-named-description",
    ),
    pytest.param(
        [S("/kinds/gene/state", {"path": "/v2", "graphql": {"query": "query { gene(id: $id) { isFollowed } }",
                                                            "variables": {"id": "{id}"}},
                                 "following": {"pointer": "/data/gene/isFollowed"}})],
        id="graphql-state-by-query",
    ),
    pytest.param(
        [S("/kinds/artist/state", {"path": "/v2", "graphql": {"query": "q", "variables": {"ids": "{ids}"}},
                                   "batch": {"items": "/data/artists", "id": "/id"}})],
        id="graphql-batched-state-ids",
    ),
    pytest.param([S("/kinds/profile/state/errors", "/errors"), S("/kinds/profile/detail", {"method": "GET", "path": "/p/{id}", "errors": "/e"})], id="errors-on-plain-endpoints"),
    pytest.param(
        [S("/kinds/profile/state/query", {"q": "{{x}}"}), S("/kinds/profile/follow/json", {"a": "{{{id}}}", "b": "}}{{"}),
         S("/kinds/profile/state/path", "/a/{{b}}/{id}")],
        id="literal-braces",
    ),
    pytest.param(
        [S("/kinds/profile/state/errors", {"pointer": "/errors", "status": "/extensions/httpStatusCodes/0", "description": "d"}),
         S("/kinds/gene/follow/errors", {"pointer": "/e"})],
        id="errors-with-status",
    ),
    # Issue 31 §6: a part of a value captured; a flag read by a test of a value.
    pytest.param(
        [S("/kinds/profile/follow/capture", {"rkey": {"pointer": "/uri", "pattern": "^at://[^/]+/app\\.bsky\\.graph\\.follow/([^/]+)$", "description": "c"}}),
         S("/kinds/profile/unfollow/path", "/records/{rkey}")],
        id="capture-pattern",
    ),
    pytest.param(
        [S("/kinds/artist/state/capture", {"rkey": {"pointer": "/viewer/following", "segment": "last"}}),
         S("/kinds/artist/state/batch/following", {"nonEmpty": "/viewer/following"}),
         S("/kinds/artist/unfollow/query", {"r": "{rkey}"})],
        id="capture-segment-and-batch-flag-present",
    ),
    pytest.param([S("/kinds/artist/state/batch/following", {"pointer": "/state", "equals": "followed"})], id="batch-flag-equals"),
    pytest.param([S("/kinds/gene/state/following", {"pointer": "/state", "equals": "followed"})], id="state-following-equals"),
    pytest.param([S("/kinds/profile/follow/following", {"pointer": "/following"})], id="answer-flag-boolean-object"),
    pytest.param([S("/kinds/profile/follow/following", {"pointer": "/state", "contains": "follow", "description": "d"})], id="answer-flag-contains"),
    # Issue 11: values captured from answers, ids joined in one value, batches read by position.
    pytest.param(
        [S("/kinds/profile/follow/capture", {"followId": "/id", "description": "c"}),
         S("/kinds/profile/unfollow/path", "/api/v1/me/follow/{followId}")],
        id="capture-on-follow-used-by-unfollow",
    ),
    pytest.param(
        [S("/kinds/artist/state/capture", {"f_1": "/follow/id"}), S("/kinds/artist/unfollow/query", {"f": "{f_1}"})],
        id="capture-on-batched-state",
    ),
    pytest.param([S("/kinds/gene/state/capture", {"x": ""})], id="capture-on-state-unused"),
    pytest.param([S("/kinds/artist/state/batch/join", ",")], id="batch-join"),
    pytest.param([S("/kinds/artist/state/batch/join", ",;|:!*'(")], id="batch-join-8-chars"),
    pytest.param([S("/kinds/artist/state/batch/by", "subset")], id="batch-by-subset"),
    pytest.param([S("/kinds/artist/state/batch", {"by": "position", "join": ",", "items": "/flags"})], id="batch-by-position"),
    pytest.param(
        [S("/kinds/artist/state/json", {"ids": "{ids}"}), D("/kinds/artist/state/query"), S("/kinds/artist/state/batch/join", "|")],
        id="batch-join-json",
    ),
    # Answers that state the result (issue 11, Mastodon's Relationship).
    pytest.param(
        [S("/kinds/artist/follow/following", "/following"), S("/kinds/artist/follow/requested", "/requested"),
         S("/kinds/artist/unfollow/following", "/following")],
        id="mutation-answer-pointers",
    ),
    pytest.param([S("/kinds/profile/follow/requested", "")], id="mutation-requested-alone"),
    pytest.param(
        [S("/values", {"me": {"env": "MASTODON_ACCOUNT_ID"}, "_x9": {"value": "a b"}, "description": "d"}),
         S("/kinds/profile/state/path", "/accounts/{me}/x/{id}"), S("/kinds/profile/follow/headers", {"X-Me": "{me} {now}"}),
         S("/headers/Date", "{now}"), S("/kinds/artist/state/query/at", "{now}")],
        id="values-and-now",
    ),
    pytest.param([S("/kinds/gene/state/requested", "/requested")], id="state-requested"),
    pytest.param(
        [S("/kinds/artist/state/batch/following", "/following"), S("/kinds/artist/state/batch/requested", "/requested")],
        id="batch-flags-per-item",
    ),
    pytest.param(
        [S("/kinds/artist/state/batch/following", "/following"), S("/kinds/artist/state/capture", {"f": "/follow_id"}),
         S("/kinds/artist/unfollow/query", {"f": "{f}"})],
        id="batch-flags-with-capture",
    ),
]

# (mutation, the pointer check-config prints)
REFUSED = [
    pytest.param([S("/kinds/profile/follow/capture", {"r": {"pointer": "/uri"}})], "/kinds/profile/follow/capture/r", id="capture-part-without-pattern-or-segment"),
    pytest.param([S("/kinds/profile/follow/capture", {"r": {"pattern": "(x)"}})], "/kinds/profile/follow/capture/r", id="capture-part-without-pointer"),
    pytest.param([S("/kinds/profile/follow/capture", {"r": {"pointer": "/uri", "segment": "first"}})], "/kinds/profile/follow/capture/r/segment", id="capture-segment-unknown"),
    pytest.param([S("/kinds/profile/follow/capture", {"r": {"pointer": "/uri", "group": 1, "segment": "last"}})], "/kinds/profile/follow/capture/r/group", id="capture-part-unknown-field"),
    pytest.param([S("/kinds/artist/state/batch/following", {"pointer": "/s", "equals": "a", "contains": "b"})], "/kinds/artist/state/batch/following", id="batch-flag-equals-and-contains"),
    pytest.param([S("/kinds/artist/state/batch/following", {"equals": "a"})], "/kinds/artist/state/batch/following", id="batch-flag-without-pointer"),
    pytest.param([S("/kinds/gene/state/following", {"pointer": "/a", "nonEmpty": "/b"})], "/kinds/gene/state/following", id="state-following-pointer-and-nonEmpty"),
    pytest.param([S("/kinds/profile/follow/following", {"pointer": "/s", "contains": ""})], "/kinds/profile/follow/following/contains", id="answer-flag-contains-empty"),
    pytest.param([S("/forbidden", "sometimes")], "/forbidden", id="forbidden-unknown-word"),
    pytest.param([S("/forbidden", 403)], "/forbidden", id="forbidden-number"),
    pytest.param([S("/forbidden", {"messages": []})], "/forbidden/messages", id="forbidden-no-messages"),
    pytest.param([S("/forbidden", {"messages": ["error"]})], "/forbidden/messages/0", id="forbidden-message-not-a-pointer"),
    pytest.param([S("/forbidden", {"credentialWords": ["ok", ""]})], "/forbidden/credentialWords/1", id="forbidden-empty-word"),
    pytest.param([S("/forbidden", {"credentialWords": ["line\nbreak"]})], "/forbidden/credentialWords/0", id="forbidden-word-line-break"),
    pytest.param([S("/forbidden", {"words": []})], "/forbidden/words", id="forbidden-unknown-field"),
    pytest.param(
        [S("/kinds/artist/state/batch/by", "position"), D("/kinds/artist/state/batch/id"),
         S("/kinds/artist/state/batch/following", "/following")],
        "/kinds/artist/state/batch/following", id="batch-by-position-with-flags",
    ),
    pytest.param([S("", [])], "", id="root-not-object"),
    pytest.param([S("/timeout", 5)], "/timeout", id="root-unknown-field"),
    pytest.param([D("/environments")], "", id="environments-missing"),
    pytest.param([S("/environments", {})], "/environments", id="environments-empty"),
    pytest.param([S("/environments", {"description": "only a comment"})], "/environments", id="environments-only-description"),
    pytest.param([S("/environments", ["http://x"])], "/environments", id="environments-not-object"),
    pytest.param([S("/environments/test", "ftp://x")], "/environments/test", id="environment-url-scheme"),
    pytest.param([S("/environments/test", "HTTP://X")], "/environments/test", id="environment-url-uppercase"),
    pytest.param([S("/environments/test", 80)], "/environments/test", id="environment-url-not-string"),
    # A token over plain http:// to another host than loopback, not opted in (issue 16).
    pytest.param([S("/environments/lan", "http://10.0.0.5:8080")], "/environments/lan", id="plain-http-token-lan"),
    pytest.param([S("/environments/plain", "http://")], "/environments/plain", id="plain-http-no-host"),
    pytest.param([S("/environments/x", "http://127.0.0.1.evil.example")], "/environments/x", id="plain-http-127-prefix-host"),
    pytest.param([S("/environments/x", "http://localhost@evil.example/")], "/environments/x", id="plain-http-user-info"),
    pytest.param([S("/environments/x", "http://127.0.0.1:80@evil.example")], "/environments/x", id="plain-http-port-user-info"),
    pytest.param([S("/environments/x", "http://localhost.evil.example")], "/environments/x", id="plain-http-localhost-prefix"),
    pytest.param([S("/environments/x", "http://LOCALHOST")], "/environments/x", id="plain-http-upper-case-host"),
    pytest.param([S("/auth/allowPlainHTTP", False), S("/environments/x", "http://api.example.com")], "/environments/x", id="plain-http-opt-in-false"),
    pytest.param([S("/auth/allowPlainHTTP", "yes")], "/auth/allowPlainHTTP", id="allowPlainHTTP-not-boolean"),
    pytest.param([S("/environment", 1)], "/environment", id="environment-not-string"),
    pytest.param([S("/auth", None)], "/auth", id="auth-null"),
    pytest.param([D("/auth/header")], "/auth", id="auth-header-missing"),
    pytest.param([S("/auth/header", "X Token")], "/auth/header", id="auth-header-space"),
    pytest.param([S("/auth/header", "")], "/auth/header", id="auth-header-empty"),
    pytest.param([S("/auth/token", "t")], "/auth/token", id="auth-unknown-field"),
    pytest.param([S("/auth/tokenEnv", ["A"])], "/auth/tokenEnv", id="auth-tokenEnv-not-string"),
    pytest.param([S("/auth/tokenFile", "")], "/auth/tokenFile", id="auth-tokenFile-empty"),
    pytest.param([S("/auth/tokenFile", 1)], "/auth/tokenFile", id="auth-tokenFile-not-string"),
    pytest.param([S("/auth/tokenFile", "~bob/token")], "/auth/tokenFile", id="auth-tokenFile-other-home"),
    pytest.param([S("/auth/tokenFile", "a\u0000b")], "/auth/tokenFile", id="auth-tokenFile-nul"),
    pytest.param([S("/auth/tokenCredential", "")], "/auth/tokenCredential", id="auth-tokenCredential-empty"),
    pytest.param([S("/auth/tokenCredential", "a/b")], "/auth/tokenCredential", id="auth-tokenCredential-slash"),
    pytest.param([S("/auth/tokenCredential", "..")], "/auth/tokenCredential", id="auth-tokenCredential-dotdot"),
    pytest.param([S("/auth/tokenCredential", ".")], "/auth/tokenCredential", id="auth-tokenCredential-dot"),
    pytest.param([S("/headers/Accept", "a\rb")], "/headers/Accept", id="header-value-cr"),
    pytest.param([S("/headers/Accept", 1)], "/headers/Accept", id="header-value-not-string"),
    pytest.param([S("/headers/Bad Header", "x")], "/headers/Bad Header", id="header-name-space"),
    pytest.param([S("/headers/Ünïcode", "x")], "/headers/Ünïcode", id="header-name-non-ascii"),
    pytest.param([S("/timeoutMs", 0)], "/timeoutMs", id="timeoutMs-0"),
    pytest.param([S("/timeoutMs", 600001)], "/timeoutMs", id="timeoutMs-too-big"),
    pytest.param([S("/timeoutMs", "2000")], "/timeoutMs", id="timeoutMs-string"),
    pytest.param([S("/timeoutMs", 10**20)], "", id="timeoutMs-beyond-int64"),  # jansson: "not JSON: too big integer"
    pytest.param([S("/connectTimeoutMs", -1)], "/connectTimeoutMs", id="connectTimeoutMs-negative"),
    pytest.param([S("/maxInFlight", 1025)], "/maxInFlight", id="maxInFlight-too-big"),
    pytest.param([S("/maxInFlight", True)], "/maxInFlight", id="maxInFlight-bool"),
    pytest.param([S("/retry/maxRetries", 101)], "/retry/maxRetries", id="retry-maxRetries-too-big"),
    pytest.param([S("/retry/baseDelayMs", 0)], "/retry/baseDelayMs", id="retry-baseDelayMs-0"),
    pytest.param([S("/retry/maxDelayMs", 3600001)], "/retry/maxDelayMs", id="retry-maxDelayMs-too-big"),
    pytest.param([S("/retry/whenExhausted", "retry")], "/retry/whenExhausted", id="retry-whenExhausted"),
    pytest.param([S("/retry/onUnauthorized", "ignore")], "/retry/onUnauthorized", id="retry-onUnauthorized"),
    pytest.param([S("/kinds/show/retry/onUnauthorized", True)], "/kinds/show/retry/onUnauthorized",
                 id="kind-retry-onUnauthorized-type"),
    pytest.param([S("/retry/maxDelay", 5)], "/retry/maxDelay", id="retry-unknown-field"),
    pytest.param([S("/kinds", {})], "/kinds", id="kinds-empty"),
    pytest.param([S("/kinds", {"description": "no kinds"})], "/kinds", id="kinds-only-description"),
    pytest.param([R("/kinds/artist", "Artist")], "/kinds/Artist", id="kind-name-uppercase"),
    pytest.param([R("/kinds/artist", "9lives")], "/kinds/9lives", id="kind-name-digit-first"),
    pytest.param([R("/kinds/artist", "a.b")], "/kinds/a.b", id="kind-name-dot"),
    pytest.param([R("/kinds/artist", _LONG_KIND + "x")], "/kinds/" + _LONG_KIND + "x", id="kind-name-65-chars"),
    pytest.param([S("/kinds/gene", [])], "/kinds/gene", id="kind-not-object"),
    pytest.param([D("/kinds/profile/state")], "/kinds/profile", id="kind-state-missing"),
    pytest.param([R("/kinds/profile/unfollow", "unfolow")], "/kinds/profile/unfolow", id="kind-unknown-field"),
    pytest.param([S("/kinds/show/retry/maxRetries", -1)], "/kinds/show/retry/maxRetries", id="kind-retry-negative"),
    pytest.param([S("/kinds/show/retry/tries", 1)], "/kinds/show/retry/tries", id="kind-retry-unknown-field"),
    pytest.param([S("/kinds/profile/state/method", "FETCH")], "/kinds/profile/state/method", id="method-unknown"),
    pytest.param([S("/kinds/profile/state/method", "get")], "/kinds/profile/state/method", id="method-lowercase"),
    pytest.param([D("/kinds/gene/follow/method")], "/kinds/gene/follow", id="method-missing"),
    pytest.param([S("/kinds/gene/follow/path", "genes/{id}")], "/kinds/gene/follow/path", id="path-relative"),
    pytest.param([S("/kinds/gene/follow/path", ["/a"])], "/kinds/gene/follow/path", id="path-not-string"),
    pytest.param([D("/kinds/gene/unfollow/path")], "/kinds/gene/unfollow", id="path-missing"),
    # Sent as written (issue 16): a dot segment of the template's own is refused.
    pytest.param([S("/kinds/gene/follow/path", "/genes/../{id}")], "/kinds/gene/follow/path", id="path-dot-dot-segment"),
    pytest.param([S("/kinds/gene/follow/path", "/genes/./{id}")], "/kinds/gene/follow/path", id="path-dot-segment"),
    pytest.param([S("/kinds/gene/follow/path", "/genes/{id}/..")], "/kinds/gene/follow/path", id="path-trailing-dot-dot"),
    pytest.param([S("/kinds/gene/follow/path", "/genes/%2E%2e?x=1")], "/kinds/gene/follow/path", id="path-encoded-dot-dot"),
    pytest.param([S("/kinds/gene/follow/path", "/genes/.%2E/x")], "/kinds/gene/follow/path", id="path-mixed-dot-dot"),
    pytest.param([S("/kinds/show/state/query/show_id", 5)], "/kinds/show/state/query/show_id", id="query-value-number"),
    pytest.param([S("/kinds/show/state/query/show_id", ["{id}", 2])], "/kinds/show/state/query/show_id/1", id="query-array-item"),
    pytest.param([S("/kinds/show/state/query/show_id", [["{id}"]])], "/kinds/show/state/query/show_id/0", id="query-nested-array"),
    pytest.param([S("/kinds/show/state/query", "show_id={id}")], "/kinds/show/state/query", id="query-not-object"),
    pytest.param([S("/kinds/profile/follow/form", {"profile_id": "{id}"})], "/kinds/profile/follow/form", id="json-and-form"),
    pytest.param([S("/kinds/artist/follow/form/artist_id", {"v": "{id}"})], "/kinds/artist/follow/form/artist_id", id="form-value-object"),
    pytest.param([S("/kinds/artist/unfollow/onStatus/99", "done")], "/kinds/artist/unfollow/onStatus/99", id="onStatus-99"),
    pytest.param([S("/kinds/artist/unfollow/onStatus/600", "done")], "/kinds/artist/unfollow/onStatus/600", id="onStatus-600"),
    pytest.param([S("/kinds/artist/unfollow/onStatus/4xx", "done")], "/kinds/artist/unfollow/onStatus/4xx", id="onStatus-4xx"),
    pytest.param([S("/kinds/artist/unfollow/onStatus/404", "gone")], "/kinds/artist/unfollow/onStatus/404", id="onStatus-meaning"),
    pytest.param([S("/kinds/artist/unfollow/onStatus", ["404"])], "/kinds/artist/unfollow/onStatus", id="onStatus-not-object"),
    # Meanings netmodel could not honour at run time (issue 10): a contradiction would
    # resend the change forever; "done" says nothing of a state; a detail is an object.
    pytest.param([S("/kinds/artist/follow/onStatus", {"404": "notFollowing"})], "/kinds/artist/follow/onStatus/404", id="onStatus-follow-notFollowing"),
    pytest.param([S("/kinds/artist/unfollow/onStatus/409", "following")], "/kinds/artist/unfollow/onStatus/409", id="onStatus-unfollow-following"),
    pytest.param([S("/kinds/profile/state/onStatus/404", "done")], "/kinds/profile/state/onStatus/404", id="onStatus-state-done"),
    pytest.param([S("/kinds/artist/state/onStatus/404", "done")], "/kinds/artist/state/onStatus/404", id="onStatus-batched-state-done"),
    pytest.param([S("/kinds/profile/detail", {"method": "GET", "path": "/p/{id}", "onStatus": {"404": "notFollowing"}})], "/kinds/profile/detail/onStatus/404", id="onStatus-detail"),
    pytest.param([S("/kinds/profile/detail", {"method": "GET", "path": "/p/{id}", "onStatus": {"404": {"means": "done"}}})], "/kinds/profile/detail/onStatus/404/means", id="onStatus-detail-rule-done"),
    pytest.param([S("/kinds/artist/follow/onStatus", {"403": {"means": "notFollowing"}})], "/kinds/artist/follow/onStatus/403/means", id="onStatus-rule-follow-notFollowing"),
    pytest.param([S("/kinds/artist/unfollow/onStatus/403", [{"means": "retry"}, {"means": "following"}])], "/kinds/artist/unfollow/onStatus/403/1/means", id="onStatus-rules-unfollow-following"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "done"})], "/kinds/profile/state/onStatus/403/means", id="onStatus-rule-state-done"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "wait"})], "/kinds/profile/state/onStatus/403/means", id="onStatus-rule-unknown-meaning"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"when": {"header": "x"}})], "/kinds/profile/state/onStatus/403", id="onStatus-rule-without-means"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "if": {"header": "x"}})], "/kinds/profile/state/onStatus/403/if", id="onStatus-rule-unknown-field"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"equals": "0"}})], "/kinds/profile/state/onStatus/403/when", id="onStatus-rule-when-without-header"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"header": "x y"}})], "/kinds/profile/state/onStatus/403/when/header", id="onStatus-rule-bad-header-name"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"header": "x", "equals": 0}})], "/kinds/profile/state/onStatus/403/when/equals", id="onStatus-rule-equals-not-string"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"header": "x", "equals": "0\r\n"}})], "/kinds/profile/state/onStatus/403/when/equals", id="onStatus-rule-equals-line-break"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"header": "x", "value": "0"}})], "/kinds/profile/state/onStatus/403/when/value", id="onStatus-rule-when-unknown-field"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"header": "x", "pointer": "/x"}})], "/kinds/profile/state/onStatus/403/when", id="onStatus-rule-header-and-pointer"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {}})], "/kinds/profile/state/onStatus/403/when", id="onStatus-rule-when-empty"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"pointer": "error/reason"}})], "/kinds/profile/state/onStatus/403/when/pointer", id="onStatus-rule-pointer-not-a-pointer"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"pointer": "/x", "equals": 403}})], "/kinds/profile/state/onStatus/403/when/equals", id="onStatus-rule-pointer-equals-number"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"pointer": "/x", "equals": "a", "contains": "a"}})], "/kinds/profile/state/onStatus/403/when", id="onStatus-rule-equals-and-contains"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"pointer": "/x", "contains": ""}})], "/kinds/profile/state/onStatus/403/when/contains", id="onStatus-rule-contains-empty"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"header": "x", "contains": "a\nb"}})], "/kinds/profile/state/onStatus/403/when/contains", id="onStatus-rule-contains-line-break"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "when": {"header": "x", "contains": ["a"]}})], "/kinds/profile/state/onStatus/403/when/contains", id="onStatus-rule-contains-not-string"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "waitMs": 0})], "/kinds/profile/state/onStatus/403/waitMs", id="onStatus-rule-waitMs-zero"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "waitMs": 86400001})], "/kinds/profile/state/onStatus/403/waitMs", id="onStatus-rule-waitMs-too-big"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "retry", "waitMs": "60000"})], "/kinds/profile/state/onStatus/403/waitMs", id="onStatus-rule-waitMs-string"),
    pytest.param([S("/kinds/profile/state/onStatus/403", {"means": "notFollowing", "waitMs": 1000})], "/kinds/profile/state/onStatus/403/means", id="onStatus-rule-waitMs-not-retry"),
    pytest.param([S("/kinds/profile/state/onStatus/403", [])], "/kinds/profile/state/onStatus/403", id="onStatus-rules-empty"),
    pytest.param([S("/kinds/profile/state/onStatus/403", [{"means": "retry"}, 5])], "/kinds/profile/state/onStatus/403/1", id="onStatus-rules-not-object"),
    pytest.param([S("/kinds/profile/state/onStatus/403", 5)], "/kinds/profile/state/onStatus/403", id="onStatus-rule-number"),
    pytest.param([S("/retry/maxWaitMs", 86400001)], "/retry/maxWaitMs", id="retry-maxWaitMs-too-big"),
    pytest.param([S("/rateLimit", {"remainingHeader": "x-ratelimit-remaining"})], "/rateLimit", id="rateLimit-remaining-without-reset"),
    pytest.param([S("/rateLimit", {"resetHeader": "x reset"})], "/rateLimit/resetHeader", id="rateLimit-bad-header-name"),
    pytest.param([S("/rateLimit", {"reset": "x-ratelimit-reset"})], "/rateLimit/reset", id="rateLimit-unknown-field"),
    pytest.param([S("/rateLimit", "x-ratelimit-reset")], "/rateLimit", id="rateLimit-not-object"),
    pytest.param([S("/kinds/profile/state/timeoutMs", 0)], "/kinds/profile/state/timeoutMs", id="endpoint-timeoutMs-0"),
    pytest.param([S("/kinds/profile/state/headers", {"X-A": "a\nb"})], "/kinds/profile/state/headers/X-A", id="endpoint-header-lf"),
    pytest.param([S("/kinds/artist/follow/attributes", "artist")], "/kinds/artist/follow/attributes", id="attributes-no-slash"),
    pytest.param([S("/kinds/artist/follow/attributes", "/a~2")], "/kinds/artist/follow/attributes", id="attributes-bad-tilde"),
    pytest.param([S("/kinds/artist/follow/attributes", "/a~")], "/kinds/artist/follow/attributes", id="attributes-trailing-tilde"),
    pytest.param([S("/kinds/gene/state/following", "yes")], "/kinds/gene/state/following", id="following-string"),
    pytest.param([S("/kinds/gene/state/following", True)], "/kinds/gene/state/following", id="following-bool"),
    pytest.param([S("/kinds/gene/state/following", {})], "/kinds/gene/state/following", id="following-empty-object"),
    pytest.param([S("/kinds/gene/state/following/pointer", "is_followed")], "/kinds/gene/state/following/pointer", id="following-bad-pointer"),
    pytest.param([S("/kinds/gene/state/following", {"nonEmpty": 3})], "/kinds/gene/state/following/nonEmpty", id="following-nonEmpty-not-string"),
    pytest.param([S("/kinds/gene/state/following/flag", "/x")], "/kinds/gene/state/following/flag", id="following-unknown-field"),
    pytest.param([S("/kinds/gene/follow/following", "success")], "/kinds/gene/follow/following", id="following-on-follow"),
    pytest.param([S("/kinds/artist/state/following", "success")], "/kinds/artist/state/following", id="batch-and-following"),
    pytest.param([D("/kinds/artist/state/batch/id")], "/kinds/artist/state/batch", id="batch-id-missing"),
    pytest.param([S("/kinds/artist/state/batch/maxIds", 0)], "/kinds/artist/state/batch/maxIds", id="batch-maxIds-0"),
    pytest.param([S("/kinds/artist/state/batch/maxIds", 1001)], "/kinds/artist/state/batch/maxIds", id="batch-maxIds-too-big"),
    pytest.param([S("/kinds/artist/state/batch/windowMs", 10001)], "/kinds/artist/state/batch/windowMs", id="batch-windowMs-too-big"),
    pytest.param([S("/kinds/artist/state/batch/items", "items")], "/kinds/artist/state/batch/items", id="batch-items-bad-pointer"),
    pytest.param([S("/kinds/artist/state/batch/size", 5)], "/kinds/artist/state/batch/size", id="batch-unknown-field"),
    pytest.param([S("/kinds/artist/follow/batch", {"id": "/id"})], "/kinds/artist/follow/batch", id="batch-on-follow"),
    pytest.param([S("/kinds/artist/follow/following", "following")], "/kinds/artist/follow/following", id="mutation-following-bad-pointer"),
    pytest.param([S("/kinds/artist/unfollow/requested", True)], "/kinds/artist/unfollow/requested", id="mutation-requested-not-pointer"),
    pytest.param([S("/kinds/profile/detail", {"method": "GET", "path": "/p/{id}", "following": "/f"})], "/kinds/profile/detail/following", id="detail-following"),
    pytest.param([S("/kinds/artist/state/requested", "/requested")], "/kinds/artist/state/requested", id="batch-and-state-requested"),
    pytest.param([S("/kinds/artist/state/batch/requested", "/requested")], "/kinds/artist/state/batch", id="batch-requested-without-following"),
    pytest.param([S("/kinds/artist/state/batch/following", 1)], "/kinds/artist/state/batch/following", id="batch-following-not-pointer"),
    pytest.param([S("/kinds/gene/state/requested", "requested")], "/kinds/gene/state/requested", id="state-requested-bad-pointer"),
    pytest.param([S("/values", [])], "/values", id="values-not-object"),
    pytest.param([S("/values", {}), S("/values/me", {"value": "1", "env": "X"})], "/values/me", id="value-both-sources"),
    pytest.param([S("/values", {}), S("/values/me", {})], "/values/me", id="value-no-source"),
    pytest.param([S("/values", {}), S("/values/me", {"env": ""})], "/values/me/env", id="value-env-empty"),
    pytest.param([S("/values", {}), S("/values/me", {"value": 1})], "/values/me/value", id="value-not-string"),
    pytest.param([S("/values", {}), S("/values/me", {"value": "a\nb"})], "/values/me/value", id="value-line-break"),
    pytest.param([S("/values", {}), S("/values/me", {"value": "1", "from": "x"})], "/values/me/from", id="value-unknown-field"),
    pytest.param([S("/values", {}), S("/values/now", {"value": "1"})], "/values/now", id="value-name-built-in"),
    pytest.param([S("/values", {}), S("/values/id", {"value": "1"})], "/values/id", id="value-name-id"),
    pytest.param([S("/values", {}), S("/values/9a", {"value": "1"})], "/values/9a", id="value-name-digit-first"),
    pytest.param([S("/kinds/profile/detail", {"method": "GET"})], "/kinds/profile/detail", id="detail-path-missing"),
    pytest.param([S("/kinds/profile/detail", {"method": "GET", "path": "/d", "retry": {}})], "/kinds/profile/detail/retry", id="detail-unknown-field"),
    # Swift parser bugs (see the reasons): the schema is right, check-config lets them through.
    pytest.param(
        [S("/kinds/gene/state/following", {"pointer": "/is_followed", "nonEmpty": 5})],
        "/kinds/gene/state/following",
        id="following-pointer-and-nonEmpty",
    ),
    pytest.param(
        [S("/kinds/artist/unfollow/onStatus/+404", "done")],
        "/kinds/artist/unfollow/onStatus/+404",
        id="onStatus-plus-sign",
    ),
    pytest.param(
        [S("/kinds/artist/unfollow/onStatus/0404", "following")],
        "/kinds/artist/unfollow/onStatus/0404",
        id="onStatus-leading-zero",
    ),
    pytest.param(
        [S("/headers/Accept", "application/json\r\nX-Evil: 1")],
        "/headers/Accept",
        id="header-value-crlf",
    ),
    pytest.param(
        [S("/auth/scheme", "Bearer\r\nX-Evil: 1")],
        "/auth/scheme",
        id="auth-scheme-crlf",
    ),
    pytest.param([S("/kinds/profile/follow", {"method": "GET", "path": "/v2", "graphql": {"query": "q"}})], "/kinds/profile/follow/method", id="graphql-method-get"),
    pytest.param([S("/kinds/profile/follow/graphql", {"query": "q"})], "/kinds/profile/follow/json", id="graphql-and-json"),
    pytest.param([S("/kinds/artist/follow/graphql", {"query": "q"})], "/kinds/artist/follow/form", id="graphql-and-form"),
    pytest.param([S("/kinds/profile/follow", {"path": "/v2", "graphql": "query { x }"})], "/kinds/profile/follow/graphql", id="graphql-not-object"),
    pytest.param([S("/kinds/profile/follow", {"path": "/v2", "graphql": {"variables": {}}})], "/kinds/profile/follow/graphql", id="graphql-query-missing"),
    pytest.param([S("/kinds/profile/follow", {"path": "/v2", "graphql": {"query": " \n"}})], "/kinds/profile/follow/graphql/query", id="graphql-query-blank"),
    pytest.param([S("/kinds/profile/follow", {"path": "/v2", "graphql": {"query": 1}})], "/kinds/profile/follow/graphql/query", id="graphql-query-not-string"),
    pytest.param([S("/kinds/profile/follow", {"path": "/v2", "graphql": {"query": "q", "variables": ["{id}"]}})], "/kinds/profile/follow/graphql/variables", id="graphql-variables-array"),
    pytest.param([S("/kinds/profile/follow", {"path": "/v2", "graphql": {"query": "q", "operationName": ""}})], "/kinds/profile/follow/graphql/operationName", id="graphql-operationName-empty"),
    pytest.param([S("/kinds/profile/follow", {"path": "/v2", "graphql": {"query": "q", "extensions": {}}})], "/kinds/profile/follow/graphql/extensions", id="graphql-unknown-field"),
    pytest.param([S("/kinds/profile/follow", {"path": "/v2"})], "/kinds/profile/follow", id="method-missing-without-graphql"),
    pytest.param([S("/kinds/profile/state/errors", "")], "/kinds/profile/state/errors", id="errors-root"),
    pytest.param([S("/kinds/profile/state/errors", "errors")], "/kinds/profile/state/errors", id="errors-not-pointer"),
    pytest.param([S("/kinds/profile/state/errors", ["/errors"])], "/kinds/profile/state/errors", id="errors-not-string"),
    pytest.param([S("/kinds/profile/state/errors", {"status": "/s"})], "/kinds/profile/state/errors", id="errors-object-without-pointer"),
    pytest.param([S("/kinds/profile/state/errors", {"pointer": ""})], "/kinds/profile/state/errors/pointer", id="errors-object-pointer-root"),
    pytest.param([S("/kinds/profile/state/errors", {"pointer": "/e", "status": "s"})], "/kinds/profile/state/errors/status", id="errors-status-not-pointer"),
    pytest.param([S("/kinds/profile/state/errors", {"pointer": "/e", "code": "/c"})], "/kinds/profile/state/errors/code", id="errors-object-unknown-field"),
    # Issue 11: capture names, where captures go, join separators, batches by position.
    pytest.param([S("/kinds/profile/follow/capture", {"id": "/id"})], "/kinds/profile/follow/capture/id", id="capture-shadows-id"),
    pytest.param([S("/kinds/profile/follow/capture", {"ids": "/id"})], "/kinds/profile/follow/capture/ids", id="capture-shadows-ids"),
    pytest.param([S("/kinds/profile/state/capture", {"kind": "/id"})], "/kinds/profile/state/capture/kind", id="capture-shadows-kind"),
    pytest.param([S("/kinds/profile/follow/capture", {"a-b": "/id"})], "/kinds/profile/follow/capture/a-b", id="capture-name-dash"),
    pytest.param([S("/kinds/profile/follow/capture", {"1a": "/id"})], "/kinds/profile/follow/capture/1a", id="capture-name-digit-first"),
    pytest.param([S("/kinds/profile/follow/capture", {"x": "id"})], "/kinds/profile/follow/capture/x", id="capture-bad-pointer"),
    pytest.param([S("/kinds/profile/follow/capture", {"x": 1})], "/kinds/profile/follow/capture/x", id="capture-pointer-not-string"),
    pytest.param([S("/kinds/profile/follow/capture", {})], "/kinds/profile/follow/capture", id="capture-empty"),
    pytest.param([S("/kinds/profile/follow/capture", "/id")], "/kinds/profile/follow/capture", id="capture-not-object"),
    pytest.param([S("/kinds/profile/unfollow/capture", {"x": "/id"})], "/kinds/profile/unfollow/capture", id="capture-on-unfollow"),
    pytest.param([S("/kinds/profile/detail", {"method": "GET", "path": "/p/{id}", "capture": {"x": "/id"}})], "/kinds/profile/detail/capture", id="capture-on-detail"),
    pytest.param(
        [S("/kinds/artist/state/batch/by", "position"), D("/kinds/artist/state/batch/id"), S("/kinds/artist/state/capture", {"x": "/id"})],
        "/kinds/artist/state/capture", id="capture-on-batch-by-position",
    ),
    pytest.param([S("/kinds/artist/state/batch/by", "position")], "/kinds/artist/state/batch/id", id="batch-by-position-with-id"),
    pytest.param([S("/kinds/artist/state/batch/by", "index")], "/kinds/artist/state/batch/by", id="batch-by-unknown"),
    pytest.param([S("/kinds/artist/state/batch/by", "subset"), D("/kinds/artist/state/batch/id")], "/kinds/artist/state/batch", id="batch-by-subset-without-id"),
    pytest.param([S("/kinds/artist/state/batch/join", "&")], "/kinds/artist/state/batch/join", id="batch-join-ampersand"),
    pytest.param([S("/kinds/artist/state/batch/join", "+")], "/kinds/artist/state/batch/join", id="batch-join-plus"),
    pytest.param([S("/kinds/artist/state/batch/join", "")], "/kinds/artist/state/batch/join", id="batch-join-empty"),
    pytest.param([S("/kinds/artist/state/batch/join", "," * 9)], "/kinds/artist/state/batch/join", id="batch-join-too-long"),
    pytest.param([S("/kinds/artist/state/batch/join", 1)], "/kinds/artist/state/batch/join", id="batch-join-not-string"),
]


# --------------------------------------------------------------------------
# lists: the same table over BASE with LISTS (every list feature at least once)

LISTS = {
    "description": "the lists a client pages through",
    "followedArtists": {
        "description": "The artists the user follows, 20 a page, in sections A-Z.",
        "method": "GET",
        "path": "/api/v1/me/follow/artists",
        "query": {"total_count": "1"},
        "paging": {"style": "page", "pageParameter": "page", "sizeParameter": "size", "size": 20, "first": 1},
        "item": {"kind": "artist", "id": "/artist/id", "following": True, "attributes": "/artist", "keep": ["id", "name"]},
        "sections": {"pointer": "/artist/name", "by": "firstLetter"},
        "dependsOn": ["artist"],
    },
    "genes/artists": {
        "method": "GET",
        "path": "/genes/{gene}/artists",
        "params": ["gene", "sort"],
        "query": {"sort": "{sort}", "tags[]": ["a", "{gene}"]},
        "headers": {"X-List": "1"},
        "timeoutMs": 5000,
        "paging": {"style": "offset", "offsetParameter": "from", "limitParameter": "n", "limit": 50},
        "items": "/data",
        "item": {"kind": "artist", "id": "/id", "following": {"pointer": "/is_followed"}, "attributes": ""},
        "sections": {"pointer": "/category", "by": "value"},
        "dependsOn": ["artist", "gene"],
    },
    "search": {
        "method": "POST",
        "path": "/search",
        "params": ["q"],
        "json": {"query": "{q}", "types": ["gene"], "n": 1},
        "paging": {"style": "cursor", "parameter": "after", "next": "/meta/next", "sizeParameter": "first", "size": 30},
        "items": "/results",
        "item": {"kind": "gene", "id": "/id"},
    },
    "shows": {"method": "GET", "path": "/shows", "paging": {"style": "link"}, "item": {"kind": "show", "id": "/id"}},
    "profiles": {"method": "GET", "path": "/profiles", "paging": {"style": "none"}, "item": {"kind": "profile", "id": ""}},
}
LIST_BASE = mutate(BASE, S("/lists", LISTS))

FA = "/lists/followedArtists"  # a page-style list
GA = "/lists/genes~1artists"  # "genes/artists": offset style, params
SE = "/lists/search"  # cursor style
SH = "/lists/shows"  # link style


def L(*ops):
    """Ops over BASE with LISTS."""
    return [S("/lists", LISTS), *ops]


def parser_bug(reason):
    return pytest.mark.xfail(strict=True, reason="Swift parser bug: " + reason)


_LONG_LIST = "l" * 128  # 128 bytes: the longest list name
_WIDE_LIST = "é" * 64  # 64 characters, 128 bytes

LIST_ACCEPTED = [
    pytest.param(L(), id="lists-unchanged"),
    pytest.param(
        L(S("/values", {"me": {"env": "ACCOUNT_ID"}}), S(SH + "/path", "/accounts/{me}/following"),
          S(SH + "/query", {"before": "{now}"}), S(GA + "/headers/X-Me", "{me}")),
        id="list-values-and-now",
    ),
    pytest.param([S("/lists", {})], id="lists-empty"),
    pytest.param([S("/lists", {"description": "none yet", "$schema": 1})], id="lists-only-comments"),
    pytest.param(
        L(
            S(FA + "/$schema", "x"),
            S(FA + "/paging/description", "p"),
            S(FA + "/item/description", ["i"]),
            S(FA + "/sections/$schema", None),
            S(GA + "/item/following/description", "f"),
            S(SE + "/paging/description", "c"),
            S(SH + "/paging/$schema", 1),
            S("/lists/profiles/paging/description", "n"),
        ),
        id="list-description-and-$schema-in-every-object",
    ),
    pytest.param(L(R(FA, _LONG_LIST)), id="list-name-128-bytes"),
    pytest.param(L(R(FA, _WIDE_LIST)), id="list-name-128-bytes-of-64-characters"),
    pytest.param(L(R(FA, "following/artist")), id="list-name-with-slash"),
    pytest.param(L(S(SH + "/onStatus", {"403": [{"means": "retry", "when": {"header": "retry-after"}}], "503": "retry"})), id="list-onStatus-retry"),
    pytest.param(L(S(FA, {"method": "GET", "path": "/", "item": {"kind": "artist", "id": ""}})), id="list-minimal"),
    pytest.param(L(D(FA + "/paging")), id="paging-absent"),
    pytest.param(L(S(FA + "/paging", {"style": "page"})), id="paging-page-defaults"),
    pytest.param(
        L(S(FA + "/paging", {"style": "page", "pageParameter": "p", "sizeParameter": "per_page", "size": 1000, "first": 0})),
        id="paging-page-limits",
    ),
    pytest.param(L(S(FA + "/paging/size", 1)), id="paging-page-size-1"),
    pytest.param(L(S(GA + "/paging", {"style": "offset"})), id="paging-offset-defaults"),
    pytest.param(L(S(GA + "/paging/limit", 1000)), id="paging-offset-limit-1000"),
    pytest.param(L(S(GA + "/paging/overlap", True), S(GA + "/paging/limit", 2)), id="paging-offset-overlap-limit-2"),
    pytest.param(L(S(GA + "/paging/overlap", False), S(GA + "/paging/limit", 1)), id="paging-offset-no-overlap-limit-1"),
    pytest.param(L(S(GA + "/paging/overlap", True)), id="paging-offset-overlap-default-limit"),
    pytest.param(L(S(FA + "/total", "/meta/total"), S(SE + "/total", "")), id="list-total"),
    pytest.param(L(S(SE + "/paging", {"style": "cursor", "next": ""})), id="paging-cursor-minimal"),
    pytest.param(L(S(SE + "/paging/size", 1)), id="paging-cursor-size-1"),
    pytest.param(L(D(SE + "/paging/sizeParameter")), id="paging-cursor-size-without-sizeParameter"),
    pytest.param(L(S(FA + "/item/following", False)), id="item-following-false"),
    pytest.param(L(S(FA + "/item/following", {"pointer": ""})), id="item-following-pointer-root"),
    pytest.param(L(S(FA + "/item/keep", [])), id="item-keep-empty"),
    pytest.param(L(D(FA + "/item/attributes")), id="item-keep-without-attributes"),  # keep has no effect then
    pytest.param(L(S(FA + "/sections", {"pointer": "/artist/name"})), id="sections-by-default"),
    pytest.param(L(S(FA + "/dependsOn", [])), id="dependsOn-empty"),
    pytest.param(L(S(FA + "/items", "/a~0b~1c/0")), id="items-escaped-pointer"),
    pytest.param(L(S(GA + "/params", ["gene", "sort", "gene", "$schema", "{x}"])), id="params-odd-but-allowed"),
    pytest.param(L(S(SE + "/json", {"{q}": ["{q}", {"deep": "x{q}y"}], "k": None})), id="list-json-template"),
    pytest.param(L(D(SE + "/json"), S(SE + "/form", {"q": ["{q}", "x"]})), id="list-form-template"),
    pytest.param(L(S(SH + "/method", "DELETE"), S(SH + "/path", "/a{b")), id="list-method-and-unclosed-brace"),
    pytest.param(
        L(S("/lists/gql", {
            "path": "/v2", "params": ["q"], "errors": "/errors",
            "graphql": {"query": "query($after: String, $n: Int) { x }", "variables": {"q": "{q}", "k": 1}},
            "paging": {"style": "connection", "after": "cursor", "first": "n", "size": 5, "pageInfo": "/data/x/pageInfo"},
            "items": "/data/x/edges", "item": {"kind": "artist", "id": "/node/id"}})),
        id="paging-connection",
    ),
    pytest.param(
        L(S("/lists/gql", {"path": "/v2", "method": "POST", "graphql": {"query": "q"},
                           "paging": {"style": "connection", "pageInfo": "", "size": 1000, "description": "d"},
                           "item": {"kind": "artist", "id": "/id"}})),
        id="paging-connection-minimal-size-without-first",
    ),
    pytest.param(L(S(SH + "/graphql", {"query": "q"}), D(SH + "/method")), id="list-graphql-with-link-paging"),
]

LIST_REFUSED = [
    pytest.param([S("/lists", [])], "/lists", id="lists-not-object"),
    pytest.param([S("/lists", None)], "/lists", id="lists-null"),
    pytest.param(L(S(SH, "GET /shows")), SH, id="list-not-object"),
    pytest.param(L(R(SH, "")), "/lists/", id="list-name-empty"),
    pytest.param(L(R(SH, _LONG_LIST + "l")), "/lists/" + _LONG_LIST + "l", id="list-name-129-bytes"),
    pytest.param(L(S(SH + "/pagination", {})), SH + "/pagination", id="list-unknown-field"),
    pytest.param(L(S(GA + "/path", "/genes/{gene}/../artists")), GA + "/path", id="list-path-dot-segment"),
    pytest.param(L(S(SH + "/following", True)), SH + "/following", id="list-following-outside-item"),
    pytest.param(L(D(SH + "/item")), SH, id="list-item-missing"),
    pytest.param(L(D(SH + "/method")), SH, id="list-method-missing"),
    pytest.param(L(S(SH + "/method", "HEAD")), SH + "/method", id="list-method-unknown"),
    pytest.param(L(D(SH + "/path")), SH, id="list-path-missing"),
    pytest.param(L(S(SH + "/path", "shows")), SH + "/path", id="list-path-relative"),
    pytest.param(L(S(SE + "/form", {"q": "{q}"})), SE + "/form", id="list-json-and-form"),
    pytest.param(L(S(SH + "/timeoutMs", 0)), SH + "/timeoutMs", id="list-timeoutMs-0"),
    pytest.param(L(S(SH + "/headers", {"X-A": "a\r\nb"})), SH + "/headers/X-A", id="list-header-crlf"),
    pytest.param(L(S(GA + "/query/sort", 1)), GA + "/query/sort", id="list-query-value-number"),
    pytest.param(L(S(GA + "/params", "gene")), GA + "/params", id="params-not-array"),
    pytest.param(L(S(GA + "/params", ["gene", 5])), GA + "/params/1", id="params-name-not-string"),
    pytest.param(L(S(GA + "/params", ["gene", "sort", ""])), GA + "/params/2", id="params-name-empty"),
    pytest.param(L(S(GA + "/params", ["gene", "sort", "id"])), GA + "/params/2", id="params-id"),
    pytest.param(L(S(GA + "/params", ["ids", "gene", "sort"])), GA + "/params/0", id="params-ids"),
    pytest.param(L(S(GA + "/params", ["gene", "kind", "sort"])), GA + "/params/1", id="params-kind"),
    pytest.param(L(S(FA + "/paging", "page")), FA + "/paging", id="paging-not-object"),
    pytest.param(L(S(FA + "/paging", {"size": 20})), FA + "/paging", id="paging-style-missing"),
    pytest.param(L(S(FA + "/paging/style", "pages")), FA + "/paging/style", id="paging-style-unknown"),
    pytest.param(L(S(FA + "/paging/style", "Page")), FA + "/paging/style", id="paging-style-case"),
    pytest.param(L(S(FA + "/paging/style", None)), FA + "/paging/style", id="paging-style-null"),
    pytest.param(L(S(FA + "/paging/size", 0)), FA + "/paging/size", id="paging-page-size-0"),
    pytest.param(L(S(FA + "/paging/size", 1001)), FA + "/paging/size", id="paging-page-size-1001"),
    pytest.param(L(S(FA + "/paging/size", "20")), FA + "/paging/size", id="paging-page-size-string"),
    pytest.param(L(S(FA + "/paging/first", 2)), FA + "/paging/first", id="paging-page-first-2"),
    pytest.param(L(S(FA + "/paging/first", -1)), FA + "/paging/first", id="paging-page-first-negative"),
    pytest.param(L(S(FA + "/paging/first", "1")), FA + "/paging/first", id="paging-page-first-string"),
    pytest.param(L(S(SE + "/paging", {"style": "connection", "pageInfo": "/p"})), SE + "/paging", id="paging-connection-without-graphql"),
    pytest.param(L(S("/lists/gql", {"path": "/v2", "graphql": {"query": "q"}, "item": {"kind": "artist", "id": "/id"},
                                    "paging": {"style": "connection"}})), "/lists/gql/paging", id="paging-connection-pageInfo-missing"),
    pytest.param(L(S("/lists/gql", {"path": "/v2", "graphql": {"query": "q"}, "item": {"kind": "artist", "id": "/id"},
                                    "paging": {"style": "connection", "first": "n", "pageInfo": "/p"}})), "/lists/gql/paging", id="paging-connection-first-without-size"),
    pytest.param(L(S("/lists/gql", {"path": "/v2", "graphql": {"query": "q"}, "item": {"kind": "artist", "id": "/id"},
                                    "paging": {"style": "connection", "first": 10, "size": 10, "pageInfo": "/p"}})), "/lists/gql/paging/first", id="paging-connection-first-number"),
    pytest.param(L(S("/lists/gql", {"path": "/v2", "graphql": {"query": "q"}, "item": {"kind": "artist", "id": "/id"},
                                    "paging": {"style": "connection", "after": "$after", "pageInfo": "/p"}})), "/lists/gql/paging/after", id="paging-connection-after-with-dollar"),
    pytest.param(L(S("/lists/gql", {"path": "/v2", "graphql": {"query": "q"}, "item": {"kind": "artist", "id": "/id"},
                                    "paging": {"style": "connection", "next": "/n", "pageInfo": "/p"}})), "/lists/gql/paging/next", id="paging-connection-cursor-field"),
    pytest.param(L(S(SE + "/paging", {"style": "cursor", "next": "/n", "pageInfo": "/p"})), SE + "/paging/pageInfo", id="paging-cursor-pageInfo"),
    pytest.param(L(S(SH + "/graphql", {"query": "q"})), SH + "/method", id="list-graphql-method-get"),
    pytest.param(L(S(SE + "/graphql", {"query": "q"}), D(SE + "/method")), SE + "/json", id="list-graphql-and-json"),
    pytest.param(L(S(SH + "/errors", "")), SH + "/errors", id="list-errors-root"),
    pytest.param(L(S(FA + "/paging/pageParameter", 1)), FA + "/paging/pageParameter", id="paging-page-parameter-not-string"),
    pytest.param(L(S(FA + "/paging/limit", 20)), FA + "/paging/limit", id="paging-page-with-limit"),
    pytest.param(L(S(FA + "/paging/next", "/next")), FA + "/paging/next", id="paging-page-with-next"),
    pytest.param(L(S(FA + "/paging/pages", 3)), FA + "/paging/pages", id="paging-unknown-field"),
    pytest.param(L(S(GA + "/paging/limit", 0)), GA + "/paging/limit", id="paging-offset-limit-0"),
    pytest.param(L(S(GA + "/paging/limit", 1001)), GA + "/paging/limit", id="paging-offset-limit-1001"),
    pytest.param(L(S(GA + "/paging/size", 20)), GA + "/paging/size", id="paging-offset-with-size"),
    pytest.param(L(S(GA + "/paging/first", 0)), GA + "/paging/first", id="paging-offset-with-first"),
    pytest.param(L(D(SE + "/paging/next")), SE + "/paging", id="paging-cursor-next-missing"),
    pytest.param(L(S(SE + "/paging/next", "next")), SE + "/paging/next", id="paging-cursor-next-bad-pointer"),
    pytest.param(L(S(SE + "/paging/next", None)), SE + "/paging/next", id="paging-cursor-next-null"),
    pytest.param(L(S(SE + "/paging/size", 1001)), SE + "/paging/size", id="paging-cursor-size-1001"),
    pytest.param(L(S(SE + "/paging/parameter", ["after"])), SE + "/paging/parameter", id="paging-cursor-parameter-not-string"),
    pytest.param(L(S(SE + "/paging/first", 1)), SE + "/paging/first", id="paging-cursor-with-first"),
    pytest.param(L(S(SE + "/paging/limitParameter", "n")), SE + "/paging/limitParameter", id="paging-cursor-with-limitParameter"),
    pytest.param(L(S(SH + "/paging/next", "/next")), SH + "/paging/next", id="paging-link-with-next"),
    pytest.param(L(S(SH + "/paging/rel", "next")), SH + "/paging/rel", id="paging-link-unknown-field"),
    pytest.param(L(S("/lists/profiles/paging/size", 20)), "/lists/profiles/paging/size", id="paging-none-with-size"),
    pytest.param(L(S(FA + "/items", "data")), FA + "/items", id="items-bad-pointer"),
    pytest.param(L(S(FA + "/items", [])), FA + "/items", id="items-not-string"),
    pytest.param(L(S(FA + "/item", ["artist"])), FA + "/item", id="item-not-object"),
    pytest.param(L(D(FA + "/item/kind")), FA + "/item", id="item-kind-missing"),
    pytest.param(L(S(FA + "/item/kind", "Artist")), FA + "/item/kind", id="item-kind-uppercase"),
    pytest.param(L(S(FA + "/item/kind", "")), FA + "/item/kind", id="item-kind-empty"),
    pytest.param(L(S(FA + "/item/kind", _LONG_KIND + "x")), FA + "/item/kind", id="item-kind-65-chars"),
    pytest.param(L(S(FA + "/item/kind", 1)), FA + "/item/kind", id="item-kind-not-string"),
    pytest.param(L(D(FA + "/item/id")), FA + "/item", id="item-id-missing"),
    pytest.param(L(S(FA + "/item/id", "artist/id")), FA + "/item/id", id="item-id-bad-pointer"),
    pytest.param(L(S(FA + "/item/id", "/a~")), FA + "/item/id", id="item-id-trailing-tilde"),
    pytest.param(L(S(FA + "/item/sections", {})), FA + "/item/sections", id="item-unknown-field"),
    pytest.param(L(S(FA + "/item/following", "yes")), FA + "/item/following", id="item-following-string"),
    pytest.param(L(S(FA + "/item/following", None)), FA + "/item/following", id="item-following-null"),
    pytest.param(L(S(FA + "/item/following", 1)), FA + "/item/following", id="item-following-number"),
    pytest.param(L(S(FA + "/item/following", {})), FA + "/item/following", id="item-following-empty-object"),
    pytest.param(L(S(FA + "/item/following", {"nonEmpty": "/f"})), FA + "/item/following/nonEmpty", id="item-following-nonEmpty"),
    pytest.param(L(S(GA + "/item/following/pointer", "is_followed")), GA + "/item/following/pointer", id="item-following-bad-pointer"),
    pytest.param(L(S(FA + "/item/attributes", "artist")), FA + "/item/attributes", id="item-attributes-bad-pointer"),
    pytest.param(L(S(FA + "/item/keep", "name")), FA + "/item/keep", id="item-keep-not-array"),
    pytest.param(L(S(FA + "/item/keep", ["id", ["name"]])), FA + "/item/keep/1", id="item-keep-field-not-string"),
    pytest.param(L(S(FA + "/sections", "/artist/name")), FA + "/sections", id="sections-not-object"),
    pytest.param(L(D(FA + "/sections/pointer")), FA + "/sections", id="sections-pointer-missing"),
    pytest.param(L(S(FA + "/sections/pointer", "name")), FA + "/sections/pointer", id="sections-bad-pointer"),
    pytest.param(L(S(FA + "/sections/by", "letter")), FA + "/sections/by", id="sections-by-unknown"),
    pytest.param(L(S(FA + "/sections/by", True)), FA + "/sections/by", id="sections-by-not-string"),
    pytest.param(L(S(FA + "/sections/title", "x")), FA + "/sections/title", id="sections-unknown-field"),
    pytest.param(L(S(FA + "/dependsOn", "artist")), FA + "/dependsOn", id="dependsOn-not-array"),
    pytest.param(L(S(FA + "/total", 3)), FA + "/total", id="list-total-not-a-pointer"),
    pytest.param(L(S(FA + "/total", "meta")), FA + "/total", id="list-total-pointer-without-slash"),
    pytest.param(L(S(GA + "/paging/overlap", "yes")), GA + "/paging/overlap", id="paging-offset-overlap-not-boolean"),
    pytest.param(L(S(GA + "/paging/overlap", True), S(GA + "/paging/limit", 1)), GA + "/paging/limit", id="paging-offset-overlap-limit-1"),
    pytest.param(L(S(FA + "/paging/overlap", True)), FA + "/paging/overlap", id="paging-page-no-overlap"),
    pytest.param(L(S(FA + "/dependsOn", ["artist", 1])), FA + "/dependsOn/1", id="dependsOn-not-string"),
    # Swift parser bugs: the schema is right, check-config lets them through (silently).
    pytest.param(
        L(S(SH + "/onStatus", {"404": "done"})),
        SH + "/onStatus/404",
        id="list-onStatus-only-retry",
    ),
    pytest.param(
        L(S(SH + "/attributes", "/show")),
        SH + "/attributes",
        id="list-attributes-ignored",
    ),
    pytest.param(
        L(D(SE + "/paging/size")),
        SE + "/paging",
        id="paging-cursor-sizeParameter-without-size",
    ),
    pytest.param(
        L(S(FA + "/dependsOn", ["artist", "Artist"])),
        FA + "/dependsOn/1",
        id="dependsOn-not-a-kind-name",
    ),
    # The escaping of a list name with "/" in check-config's pointer.
    pytest.param(L(S(GA + "/item/kind", "Gene")), GA + "/item/kind", id="list-name-escaped-in-pointer"),
]

LIST_KNOWN_DIFFERENCES = [
    # A capture's pattern: that it compiles and has exactly one group (a JSON Schema pattern cannot say).
    pytest.param([S("/kinds/profile/follow/capture", {"r": {"pointer": "/uri", "pattern": "^at://.*$"}})], "/kinds/profile/follow/capture/r/pattern", id="capture-pattern-no-group"),
    pytest.param([S("/kinds/profile/follow/capture", {"r": {"pointer": "/uri", "pattern": "(a)(b)"}})], "/kinds/profile/follow/capture/r/pattern", id="capture-pattern-two-groups"),
    pytest.param([S("/kinds/profile/follow/capture", {"r": {"pointer": "/uri", "pattern": "(a"}})], "/kinds/profile/follow/capture/r/pattern", id="capture-pattern-not-compiling"),
    # A list's param may not take a configured value's name (or a built-in's).
    pytest.param(
        L(S("/values", {"sort": {"value": "x"}})), GA + "/params/1", id="list-param-named-like-a-value"
    ),
    pytest.param(L(S(GA + "/params", ["gene", "now"])), GA + "/params/1", id="list-param-named-now"),
    # Headers take only the configuration's values and {now}, not a list's params.
    pytest.param(L(S(GA + "/headers/X-Gene", "{gene}")), GA + "/headers/X-Gene", id="list-header-param"),
    # An item's kind and dependsOn must be configured kinds.
    pytest.param(L(S(FA + "/item/kind", "artwork")), FA + "/item/kind", id="item-kind-not-a-configured-kind"),
    pytest.param(L(S(FA + "/item/kind", _LONG_KIND)), FA + "/item/kind", id="item-kind-64-chars-not-configured"),
    pytest.param(
        L(S(FA + "/dependsOn", ["artist", "artist", "artwork"])), FA + "/dependsOn/2", id="dependsOn-unconfigured-kind"
    ),
    # A list's placeholders are its params, and only them.
    pytest.param(L(S(GA + "/path", "/genes/{genre}/artists")), GA + "/path", id="list-placeholder-undeclared"),
    pytest.param(L(D(GA + "/params")), GA + "/path", id="list-placeholder-without-params"),
    pytest.param(L(S(SH + "/path", "/shows/{id}")), SH + "/path", id="list-placeholder-id"),
    pytest.param(L(S(GA + "/query/sort", "{kind}")), GA + "/query/sort", id="list-placeholder-kind"),
    pytest.param(L(S(GA + "/query/tags[]", ["a", "{ids}"])), GA + "/query/tags[]/1", id="list-placeholder-ids"),
    pytest.param(L(S(SE + "/json/types", ["{query}"])), SE + "/json/types/0", id="list-placeholder-in-json"),
    pytest.param(L(S(GA + "/path", "/genes/{gene*}/artists")), GA + "/path", id="list-placeholder-exploded"),
    # A list name is at most 128 bytes; JSON Schema's maxLength counts characters.
    pytest.param(L(R(FA, "é" * 65)), "/lists/" + "é" * 65, id="list-name-130-bytes-of-65-characters"),
]


def test_the_table_is_big_enough():
    assert len(REFUSED) >= 30 and len(ACCEPTED) >= 10
    assert len(LIST_REFUSED) >= 20 and len(LIST_ACCEPTED) >= 10 and len(LIST_KNOWN_DIFFERENCES) >= 3


@pytest.mark.parametrize("ops", ACCEPTED + LIST_ACCEPTED)
def test_accepted_by_both(ops, validator, check_config):
    doc = mutate(BASE, *ops)
    errors = list(validator.iter_errors(doc))
    code, ptr, message = check_config.run(doc)
    assert not errors, "the schema refuses:\n" + explain(errors)
    assert code == 0, f"check-config refuses: {message}"


@pytest.mark.parametrize("ops, expected_pointer", REFUSED + LIST_REFUSED)
def test_refused_by_both_at_the_same_place(ops, expected_pointer, validator, check_config):
    doc = mutate(BASE, *ops)
    errors = list(validator.iter_errors(doc))
    code, ptr, message = check_config.run(doc)
    # Same verdict.
    assert code == 2, f"check-config accepts what the schema refuses:\n{explain(errors)}"
    assert errors, f"the schema accepts what check-config refuses: {message}"
    # check-config names the field at fault ...
    assert ptr == expected_pointer, message
    # ... which is what jsonschema reports, or a parent of it: at least one error (or an
    # anyOf/oneOf branch's error) is at that field or inside it ...
    everything = set().union(*(all_error_pointers(e) for e in errors))
    assert any(is_prefix(ptr, p) for p in everything), (
        f"check-config says {ptr!r} ({message.strip()}); jsonschema says:\n{explain(errors)}"
    )
    # ... and no error of the schema is about another part of the file.
    for error in errors:
        for p in error_pointers(error):
            assert is_prefix(ptr, p) or is_prefix(p, ptr), (
                f"jsonschema also reports {p!r} ({error.message}); check-config says {ptr!r}"
            )


def test_plain_http_with_the_opt_in_is_a_warning(validator, check_config):
    """Opting in to a token over plain http:// is accepted by both, and check-config still
    says where the token travels in clear (stderr, exit 0), once per such environment."""
    doc = mutate(BASE, S("/auth/allowPlainHTTP", True), S("/environments/lan", "http://10.0.0.5:8080"),
                 S("/environments/dev", "http://dev.example.com/api"))
    errors = list(validator.iter_errors(doc))
    assert not errors, explain(errors)
    code, _, out = check_config.run(doc, warnings=["/environments/lan", "/environments/dev"])
    assert code == 0 and "plain http://" in out and "allowPlainHTTP" in out, out


# --------------------------------------------------------------------------
# what only check-config can say (the schema's known differences)

KNOWN_DIFFERENCES = [
    # Placeholder names: which `{…}` are allowed where.
    pytest.param([S("/kinds/profile/state/path", "/accounts/{me}/{id}")], "/kinds/profile/state/path", id="placeholder-names-no-value"),
    pytest.param([S("/headers/X-Id", "{id}")], "/headers/X-Id", id="header-placeholder-id"),
    pytest.param([S("/kinds/profile/follow/headers", {"X-Me": "{me}"})], "/kinds/profile/follow/headers/X-Me", id="endpoint-header-placeholder-unknown"),
    pytest.param([S("/kinds/profile/state/path", "/s/{uid}")], "/kinds/profile/state/path", id="placeholder-unknown-in-path"),
    pytest.param([S("/kinds/profile/state/path", "/s/{}")], "/kinds/profile/state/path", id="placeholder-empty"),
    pytest.param([S("/kinds/gene/follow/json/kind", "{name}")], "/kinds/gene/follow/json/kind", id="placeholder-unknown-in-json"),
    pytest.param([S("/kinds/artist/follow/form/artist_id", "{ids}")], "/kinds/artist/follow/form/artist_id", id="placeholder-ids-not-batched"),
    pytest.param([S("/kinds/show/state/query/show_id", "{ids}")], "/kinds/show/state/query/show_id", id="placeholder-ids-in-unbatched-state"),
    pytest.param([S("/kinds/artist/state/query/artists[]", "{id}")], "/kinds/artist/state/query/artists[]", id="placeholder-id-in-batched-state"),
    pytest.param([S("/kinds/artist/state/path", "/a/{ids}")], "/kinds/artist/state/path", id="placeholder-ids-in-path"),
    # `{id*}` (the id as path segments) only in a path, and only where {id} is allowed.
    pytest.param([S("/kinds/profile/state/query", {"id": "{id*}"})], "/kinds/profile/state/query/id", id="placeholder-id-exploded-in-query"),
    pytest.param([S("/kinds/gene/follow/json/kind", "{id*}")], "/kinds/gene/follow/json/kind", id="placeholder-id-exploded-in-json"),
    pytest.param([S("/kinds/artist/state/path", "/a/{id*}")], "/kinds/artist/state/path", id="placeholder-id-exploded-in-batched-state"),
    pytest.param([S("/kinds/profile/state/path", "/s/{kind*}")], "/kinds/profile/state/path", id="placeholder-kind-exploded"),
    # `{ids}` must be a whole value.
    pytest.param([S("/kinds/artist/state/query/artists[]", "x{ids}")], "/kinds/artist/state/query/artists[]", id="ids-inside-text"),
    pytest.param([S("/kinds/artist/state/json", {"q": "ids={ids}"}), D("/kinds/artist/state/query")], "/kinds/artist/state/json/q", id="ids-inside-json-string"),
    # A batched state endpoint must use `{ids}`.
    pytest.param([D("/kinds/artist/state/query")], "/kinds/artist/state", id="batch-without-ids"),
    # `environment` must name one of `environments`.
    pytest.param([S("/environment", "staging")], "/environment", id="environment-unknown"),
    # JSON Schema's "integer" is a number with no fraction: 2000.0 is one; netmodel wants 2000.
    pytest.param([S("/timeoutMs", 2000.0)], "/timeoutMs", id="integer-written-as-real"),
    # Not the schema's fault: Python's `re` lets `$` match before a final "\n"
    # (ECMA-262, the dialect of JSON Schema's "pattern", does not).
    pytest.param([R("/kinds/artist", "artist\n")], "/kinds/artist\n", id="python-re-dollar-before-newline"),
    # Captured names are placeholders of the kind's unfollow only (a follow makes them).
    pytest.param(
        [S("/kinds/profile/follow/capture", {"followId": "/id"}), S("/kinds/profile/follow/path", "/f/{followId}")],
        "/kinds/profile/follow/path", id="captured-placeholder-in-follow",
    ),
    pytest.param(
        [S("/kinds/profile/follow/capture", {"followId": "/id"}), S("/kinds/profile/state/path", "/s/{followId}")],
        "/kinds/profile/state/path", id="captured-placeholder-in-state",
    ),
    pytest.param([S("/kinds/profile/unfollow/path", "/f/{followId}")], "/kinds/profile/unfollow/path", id="uncaptured-placeholder-in-unfollow"),
]


@pytest.mark.parametrize("ops, expected_pointer", KNOWN_DIFFERENCES + LIST_KNOWN_DIFFERENCES)
def test_known_differences_are_refused_by_check_config(ops, expected_pointer, validator, check_config):
    doc = mutate(BASE, *ops)
    errors = list(validator.iter_errors(doc))
    assert not errors, "the schema now catches this: move it to REFUSED\n" + explain(errors)
    code, ptr, message = check_config.run(doc)
    assert code == 2, "check-config accepts it"
    assert ptr == expected_pointer, message


def test_known_differences_are_documented_in_the_schema(schema):
    text = schema["description"]
    for words in ("placeholder", "{ids}", "environment", "2000.0"):
        assert words in text, f"the schema's description does not mention {words!r}"
    assert "{ids}" in schema["$defs"]["stateEndpoint"]["description"]
    assert "whole" in schema["$defs"]["parameters"]["description"]
    assert "json` and `form` are exclusive" in schema["$defs"]["jsonTemplate"]["description"]
    assert "`following` does not apply" in schema["$defs"]["batch"]["description"]
    # Lists: placeholders are the params; a name is counted in bytes.
    assert "`params`" in text and "128 bytes" in text
    assert "`params` and nothing else" in schema["$defs"]["list"]["description"]
    assert "bytes" in schema["properties"]["lists"]["propertyNames"]["description"]


def test_the_paging_styles_are_documented(schema):
    """What each style sends and how the end of a list is known: the user's reference."""
    text = schema["$defs"]["paging"]["description"]
    for words in (
        '"none"', "`page=N&size=M`", "`offset=N&limit=M`", "fewer than `size`", "fewer than `limit`",
        "missing, null or empty (\"\")", "RFC 8288", 'rel=\"next\"', "`first`",
    ):
        assert words in text, f"the paging description does not say {words!r}"
    styles = schema["$defs"]["paging"]["properties"]["style"]["enum"]
    assert styles == ["none", "page", "offset", "cursor", "link", "connection"]
    for name, field in schema["$defs"]["paging"]["properties"].items():
        if name not in ("$schema", "description", "style", "next"):
            assert any(f'"{s}" style' in field["description"] for s in styles), f"{name}: for which style?"


# --------------------------------------------------------------------------
# the command line


def _run(netmodel_bin, *args):
    return subprocess.run([str(netmodel_bin), *map(str, args)], capture_output=True, text=True, timeout=30)


def test_missing_file(netmodel_bin, tmp_path):
    missing = tmp_path / "nope.json"
    proc = _run(netmodel_bin, "check-config", missing)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"netmodel: {missing}: cannot read"), proc.stderr


def test_a_folder_is_not_a_file(netmodel_bin, tmp_path):
    proc = _run(netmodel_bin, "check-config", tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"netmodel: {tmp_path}: "), proc.stderr


@pytest.mark.parametrize("text", ["", "{", "not json", '{"environments": {},}', "{\"a\": 1} trailing"])
def test_not_json(text, netmodel_bin, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    proc = _run(netmodel_bin, "check-config", path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"netmodel: {path}: not JSON: "), proc.stderr
    assert proc.stderr.count("\n") == 1


def test_help(netmodel_bin):
    proc = _run(netmodel_bin, "check-config", "--help")
    assert proc.returncode == 0
    usage = proc.stdout + proc.stderr  # (the usage currently goes to stderr)
    assert "usage: netmodel check-config FILE" in usage
    assert "schema/backend.schema.json" in usage
    top = _run(netmodel_bin, "--help")
    assert top.returncode == 0 and "check-config FILE" in top.stdout


@pytest.mark.parametrize("args", [[], ["a.json", "b.json"], ["-x"]])
def test_bad_usage(args, netmodel_bin):
    proc = _run(netmodel_bin, "check-config", *args)
    assert proc.returncode == 2
    assert "usage: netmodel check-config FILE" in proc.stderr
