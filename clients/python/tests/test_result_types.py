"""The generated result types (netmodel_client/results.py, from schema/openrpc.json by
scripts/gen-protocol) are what the real server sends (issue 26, item 12): every reply of
every method and every notification, from the local and the REST backend, has each
member its type requires, none it does not name, and every value of its type. And
``mypy --strict`` accepts code reading the members the server sends, and refuses one
it does not."""

import os
import sys
from typing import Any, Dict, List, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from conftest import REPO
from netmodel_client import results
from replies import captured

pytestmark = pytest.mark.timeout(120)


def problems(value: Any, tp: Any, path: str = "$") -> List[str]:
    """Where ``value`` (JSON) is not a ``tp``: missing, unknown or mistyped members."""
    if tp is Any:
        return []
    if tp is None or tp is type(None):
        return [] if value is None else [f"{path}: {value!r:.60} is not null"]
    origin = get_origin(tp)
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: {value!r:.60} is not an object ({tp.__name__})"]
        hints = get_type_hints(tp)
        found = [f"{path}: no {k!r} ({tp.__name__})" for k in sorted(tp.__required_keys__ - value.keys())]
        found += [f"{path}.{k}: not a member of {tp.__name__}" for k in sorted(value.keys() - hints.keys())]
        for k, v in value.items():
            if k in hints:
                found += problems(v, hints[k], f"{path}.{k}")
        return found
    if origin is Union:
        options = [problems(value, a, path) for a in get_args(tp)]
        if any(not p for p in options):
            return []
        return [f"{path}: none of {tp}: " + "; ".join(p[0] for p in options)]
    if origin is Literal:
        ok = any(value == a and type(value) is type(a) for a in get_args(tp))
        return [] if ok else [f"{path}: {value!r:.60} is not {tp}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {value!r:.60} is not an array"]
        return [p for i, v in enumerate(value) for p in problems(v, get_args(tp)[0], f"{path}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: {value!r:.60} is not an object"]
        return [p for k, v in value.items() for p in problems(v, get_args(tp)[1], f"{path}.{k}")]
    if tp is bool:
        return [] if isinstance(value, bool) else [f"{path}: {value!r:.60} is not a boolean"]
    if tp is int:
        return [] if isinstance(value, int) and not isinstance(value, bool) else [f"{path}: {value!r:.60} is not an integer"]
    if tp is float:
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [f"{path}: {value!r:.60} is not a number"]
    if tp is str:
        return [] if isinstance(value, str) else [f"{path}: {value!r:.60} is not a string"]
    raise AssertionError(f"problems(): no rule for {tp}")


NOTIFICATIONS: Dict[str, Any] = {
    "stateChanged": results.StateChangedParams,
    "statsChanged": results.StatsParams,
    "mutationOutcome": results.MutationOutcomeParams,
}


def test_the_checker_sees_what_is_wrong():
    stats_lists = {"held": 1, "pageCalls": 0, "sharedFetches": 0, "invalidations": 0}
    assert problems(stats_lists, results.StatsLists) == []
    assert problems({**stats_lists, "evicted": 2}, results.StatsLists) == []
    assert problems({**stats_lists, "evictd": 2}, results.StatsLists) == ["$.evictd: not a member of StatsLists"]
    assert problems({**stats_lists, "held": True}, results.StatsLists) == ["$.held: True is not an integer"]
    assert problems({"held": 1}, results.StatsLists)[0] == "$: no 'invalidations' (StatsLists)"


def test_real_replies_are_the_generated_types(binary, tmp_path):
    seen = set()
    for backend, raw in captured(binary, tmp_path):
        assert set(raw.replies) == set(results.METHOD_RESULTS), backend  # every method was called
        for method, replies in raw.replies.items():
            for reply in replies:
                found = problems(reply, results.METHOD_RESULTS[method], method)
                assert not found, f"{backend} backend, {method}: " + "\n".join(found)
        assert set(raw.notifications) == set(NOTIFICATIONS), backend
        for method, notes in raw.notifications.items():
            for params in notes:
                found = problems(params, NOTIFICATIONS[method], method)
                assert not found, f"{backend} backend, {method}: " + "\n".join(found)
        stats = raw.replies["stats"][-1]
        seen |= {k for k in ("entitiesEvicted",) if k in stats}
        seen |= {f"lists.{k}" for k in ("evicted", "pagingFailures") if k in stats["lists"]}
        seen |= {"backend.http" for _ in [0] if "http" in stats["backend"]}
    # The members issue 26 found missing from the hand-written types are sent, and typed.
    assert {"lists.evicted", "lists.pagingFailures", "backend.http", "entitiesEvicted"} <= seen, seen


READS = '''
from typing import Dict, List, Optional
from netmodel_client import AsyncClient, results

async def figures(nm: AsyncClient) -> List[Optional[int]]:
    s: results.Stats = await nm.stats()
    http = s["backend"].get("http")
    endpoints: Dict[str, results.StatsBackendHttpEndpointsValue] = http["endpoints"] if http else {}
    latency = [e["latencyLastMs"] for e in endpoints.values()]
    return [s["lists"].get("evicted"), s["lists"].get("pagingFailures"), s.get("entitiesEvicted"),
            s["preload"]["detailShared"], s["connections"]["list"][0]["unsentBytes"], *latency]

async def server(nm: AsyncClient) -> str:
    info = await nm.initialize()
    return info["serverInfo"]["instance"] + info["protocolVersion"] + (await nm.configure())["environment"]
'''


def mypy(tmp_path, name: str, source: str):
    try:
        import mypy.api
    except ImportError:
        pytest.fail("mypy not installed: pip install -r Tests/interop/requirements.txt (scripts/test does)")
    f = tmp_path / name
    f.write_text(source)
    env_path = str(REPO / "clients" / "python")
    os.environ["MYPYPATH"] = env_path
    out, err, status = mypy.api.run(["--strict", "--no-incremental", "--cache-dir", os.devnull, "--python-version",
                                     f"{sys.version_info.major}.{sys.version_info.minor}", str(f)])
    return status, out + err


def test_mypy_strict_takes_reads_of_what_is_sent_and_refuses_others(tmp_path):
    status, out = mypy(tmp_path, "reads.py", READS)
    assert status == 0, out
    status, out = mypy(tmp_path, "typo.py", READS.replace('s["lists"].get("evicted")', 's["lists"]["evictd"]'))
    assert status == 1 and 'TypedDict "StatsLists" has no key "evictd"' in out, out
