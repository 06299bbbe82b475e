"""The ledger of outcomes (issue 31 §2): every accepted intent and what became of it,
read with `getMutations` and pushed on the `mutations` topic, kept in the state
folder's `mutations.log` across restarts and kill -9, bounded in entries and bytes,
and read back from a torn or hostile file. The real binary, on the local backend
with the simulated backend's faults, and on the REST backend against the Mastodon
demo server (a locked account's follow is requested, following yourself is refused).
"""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import rpcio
from test_mastodon import Mastodon, account  # noqa: F401
from test_refused_intents import start

pytestmark = pytest.mark.timeout(90)

REPO = Path(__file__).resolve().parents[2]
INVALID_PARAMS, UNAVAILABLE, REJECTED, UNAUTHORIZED = -32602, -32001, -32002, -32003
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FRAMINGS = list(rpcio.FRAMINGS)


def schema_validator(name: str) -> Draft202012Validator:
    document = json.loads((REPO / "schema" / "openrpc.json").read_text())
    return Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": document["components"]})


ENTRY = schema_validator("MutationEntry")
PAGE = schema_validator("GetMutationsResult")
PUSH = schema_validator("MutationOutcomeParams")


def mutations(conn, **params) -> dict:
    page = conn.result("getMutations", params)
    PAGE.validate(page)
    return page


def entries(conn, **params) -> list[dict]:
    return mutations(conn, **params)["entries"]


def settled(conn, count: int, timeout: float = 15.0) -> list[dict]:
    """The ledger once its last `count` entries have a final outcome."""
    def done():
        found = entries(conn)
        final = [e for e in found if e["outcome"] not in ("pending", "waiting")]
        return found if len(final) >= count else None
    return rpcio.wait_for(done, timeout)


def serve(spawn, runtime, *args, framing=rpcio.NDJSON, name="client"):
    server = spawn("--state-dir", runtime.root / "ledger-state", *args, framing=framing)
    server.conn.result("initialize", {"clientInfo": {"name": name}})
    return server


# --------------------------------------------------------------------------
# each outcome


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_confirmed_follow_is_in_the_ledger_with_its_client_times_and_attempts(spawn, runtime, framing):
    server = serve(spawn, runtime, "--simulate", "latency=20,failure=0", framing=framing, name="Neovim")
    c = server.conn
    assert c.result("follow", {"kind": "artist", "id": "banksy", "await": True})["confirmed"] is True
    [entry] = entries(c)
    ENTRY.validate(entry)
    assert "environment" not in entry, "the local backend has no environments"
    assert entry["kind"] == "artist" and entry["id"] == "banksy" and entry["intent"] is True, entry
    assert entry["outcome"] == "confirmed" and entry["attempts"] == 1 and entry["client"] == "Neovim", entry
    assert RFC3339.match(entry["acceptedAt"]) and RFC3339.match(entry["settledAt"]), entry
    assert entry["acceptedAt"] <= entry["settledAt"] and "error" not in entry, entry
    assert entry["seq"] == 1
    # A follow the backend already has is no new intent.
    c.result("follow", {"kind": "artist", "id": "banksy", "await": True})
    assert [e["seq"] for e in entries(c)] == [1]


def test_a_refused_follow_carries_the_error_its_state_showed(spawn, runtime):
    c = serve(spawn, runtime, "--simulate", "latency=20,failure=1,status=422").conn
    reply = c.call("follow", {"kind": "artist", "id": "kaws", "await": True})
    assert reply["error"]["code"] == REJECTED, reply
    [entry] = entries(c)
    assert entry["outcome"] == "refused" and entry["attempts"] == 1, entry
    assert entry["error"]["code"] == REJECTED and entry["error"]["retryable"] is False, entry
    assert entry["error"]["message"] == reply["error"]["message"], (entry, reply)


def test_a_follow_whose_retries_ran_out_is_rolled_back(spawn, runtime):
    c = serve(spawn, runtime, "--simulate", "latency=10,failure=1,status=503").conn
    reply = c.call("follow", {"kind": "artist", "id": "flaky", "await": True}, timeout=30)
    assert reply["error"]["code"] == UNAVAILABLE, reply
    [entry] = entries(c)
    assert entry["outcome"] == "rolledBack" and entry["error"]["retryable"] is True, entry
    assert entry["attempts"] == 5, "the first call and the policy's 4 retries"


def test_a_follow_refused_for_want_of_credentials_waits(spawn, runtime):
    c = serve(spawn, runtime, "--simulate", "latency=10,failure=1,status=401").conn
    c.result("follow", {"kind": "artist", "id": "locked"})
    entry = rpcio.wait_for(lambda: next((e for e in entries(c) if e["outcome"] == "waiting"), None), 10)
    assert entry["error"]["code"] == UNAUTHORIZED and "settledAt" not in entry, entry
    # Another intent for it while it waits supersedes it.
    c.result("unfollow", {"kind": "artist", "id": "locked"})
    first, second = entries(c)
    assert first["outcome"] == "superseded" and RFC3339.match(first["settledAt"]), first
    assert second["intent"] is False and second["seq"] == first["seq"] + 1, second


def test_a_newer_intent_supersedes_one_in_flight(spawn, runtime):
    c = serve(spawn, runtime, "--simulate", "latency=400,failure=0").conn
    c.result("follow", {"kind": "artist", "id": "toggled"})
    c.result("unfollow", {"kind": "artist", "id": "toggled"})
    c.result("sync", {"timeoutMs": 10_000})
    first, second = entries(c)
    assert (first["intent"], first["outcome"]) == (True, "superseded"), first
    assert (second["intent"], second["outcome"]) == (False, "confirmed"), second


def test_on_the_rest_backend_a_locked_account_is_requested_and_following_yourself_refused(demo, serve_rest):
    mastodon = demo(Mastodon)
    env = {"MASTODON_TOKEN": "demo-token", "MASTODON_ACCOUNT_ID": "1"}
    server = serve_rest(mastodon.config(), state="state-ledger-mastodon", env=env)
    c = server.conn
    c.result("initialize", {"clientInfo": {"name": "emacs"}})
    assert c.result("follow", {**account("7"), "await": True})["requested"] is True
    assert "error" in c.call("follow", {**account("1"), "await": True})
    assert c.result("follow", {**account("3"), "await": True})["confirmed"] is True
    by_id = {e["id"]: e for e in entries(c)}
    assert by_id["7"]["outcome"] == "requested", by_id
    assert by_id["1"]["outcome"] == "refused" and by_id["1"]["error"]["code"] == REJECTED, by_id
    assert by_id["3"]["outcome"] == "confirmed" and by_id["3"]["client"] == "emacs", by_id
    assert {e["environment"] for e in by_id.values()} == {"local"}, "the environment each was made in"
    assert entries(c, kind="account", id="7") == [by_id["7"]]


# --------------------------------------------------------------------------
# reading: since, limit, filters, bad params


def test_pages_by_since_and_limit_and_filters(spawn, runtime):
    c = serve(spawn, runtime, "--simulate", "latency=5,failure=0").conn
    for name in ("a", "b", "c", "d", "e"):
        c.result("follow", {"kind": "artist", "id": name, "await": True})
    c.result("follow", {"kind": "gene", "id": "pop", "await": True})
    page = mutations(c, limit=2)
    assert [e["id"] for e in page["entries"]] == ["a", "b"] and page["more"] is True and page["next"] == 2, page
    page = mutations(c, since=page["next"], limit=2)
    assert [e["id"] for e in page["entries"]] == ["c", "d"] and page["next"] == 4, page
    page = mutations(c, since=page["next"])
    assert [e["id"] for e in page["entries"]] == ["e", "pop"], page
    assert page["more"] is False and page["next"] == page["last"] == 6 and page["truncated"] is False, page
    assert mutations(c, since=6) == {"entries": [], "next": 6, "last": 6, "more": False, "truncated": False}
    assert [e["id"] for e in entries(c, kind="gene")] == ["pop"]
    assert [e["id"] for e in entries(c, kind="artist", id="c")] == ["c"]


@pytest.mark.parametrize("params, path", [
    ({"since": -1}, "/since"),
    ({"since": "3"}, "/since"),
    ({"limit": 0}, "/limit"),
    ({"limit": 1001}, "/limit"),
    ({"id": "x"}, "/kind"),
    ({"kind": 3}, "/kind"),
])
def test_bad_params_are_refused_and_the_connection_goes_on(spawn, runtime, params, path):
    c = serve(spawn, runtime).conn
    reply = c.call("getMutations", params)
    assert reply["error"]["code"] == INVALID_PARAMS and reply["error"]["data"]["path"] == path, reply
    assert reply["error"]["message"], reply
    assert mutations(c)["last"] == 0


# --------------------------------------------------------------------------
# the topic


@pytest.mark.parametrize("framing", FRAMINGS)
def test_the_mutations_topic_pushes_each_outcome(spawn, runtime, framing):
    c = serve(spawn, runtime, "--simulate", "latency=50,failure=1,status=422", framing=framing).conn
    sub = c.result("subscribe", {"topics": [{"type": "mutations"}]})
    assert sub["snapshot"] == [], sub
    c.result("follow", {"kind": "artist", "id": "kaws"})
    note = rpcio.wait_for(lambda: (lambda m: m if m.get("method") == "mutationOutcome" else None)(c.recv()), 10)
    PUSH.validate(note["params"])
    assert note["params"]["subscription"] == sub["subscription"], note
    entry = note["params"]["entry"]
    assert entry["outcome"] == "refused" and entry["id"] == "kaws" and entry["error"]["code"] == REJECTED, entry
    assert entries(c) == [entry], "the push is the entry getMutations answers"
    # A topic with other members is refused.
    reply = c.call("subscribe", {"topics": [{"type": "mutations", "kind": "artist"}]})
    assert reply["error"]["code"] == INVALID_PARAMS and reply["error"]["data"]["path"] == "/topics/0", reply


# --------------------------------------------------------------------------
# durability


def test_the_ledger_survives_a_restart_and_kill_9_and_seq_goes_on(spawn, runtime):
    first = serve(spawn, runtime, "--simulate", "latency=10,failure=1,status=422")
    c = first.conn
    c.call("follow", {"kind": "artist", "id": "refused", "await": True})
    before = entries(c)
    first.close_stdin()
    assert first.wait() == 0

    second = serve(spawn, runtime, "--simulate", "latency=10,failure=0")
    c = second.conn
    assert entries(c) == before, "a clean restart reads back every entry"
    c.result("follow", {"kind": "artist", "id": "kept", "await": True})
    kept = entries(c)
    assert [e["seq"] for e in kept] == [1, 2] and kept[1]["outcome"] == "confirmed", kept
    time.sleep(0.1)  # the turn that answered has written its lines
    second.signal(signal.SIGKILL)
    second.wait()

    third = serve(spawn, runtime, "--simulate", "latency=10,failure=0")
    c = third.conn
    assert entries(c) == kept, "kill -9 loses nothing the replies promised"
    c.result("follow", {"kind": "artist", "id": "after", "await": True})
    assert [e["seq"] for e in entries(c)] == [1, 2, 3]


def test_an_intent_pending_at_kill_9_is_the_same_entry_when_replayed(spawn, runtime):
    first = serve(spawn, runtime, "--simulate", "latency=60000,failure=0")
    first.conn.result("follow", {"kind": "artist", "id": "slow"})
    [pending] = entries(first.conn)
    assert pending["outcome"] == "pending", pending
    time.sleep(0.1)
    first.signal(signal.SIGKILL)
    first.wait()

    second = serve(spawn, runtime, "--simulate", "latency=10,failure=0")
    [entry] = settled(second.conn, 1)
    assert entry["seq"] == pending["seq"] and entry["acceptedAt"] == pending["acceptedAt"], (entry, pending)
    assert entry["outcome"] == "confirmed" and entry["client"] == "client", entry


# --------------------------------------------------------------------------
# bounds


def test_the_entry_bound_drops_the_oldest_and_says_truncated(spawn, runtime):
    c = serve(spawn, runtime, "--simulate", "latency=5,failure=0", "--max-ledger-entries", "3").conn
    for index in range(6):
        c.result("follow", {"kind": "artist", "id": f"a{index}", "await": True})
    page = mutations(c, since=0)
    assert [e["seq"] for e in page["entries"]] == [4, 5, 6] and page["truncated"] is True, page
    assert mutations(c, since=3)["truncated"] is False


def test_stats_tells_the_ledger_entries_open_failed_and_dropped(spawn, runtime):
    """`stats.mutations`: what an operator asks of the ledger without paging it: how
    many intents are still open, how many failed (a user should hear of them), and
    whether the bounds dropped entries a client away may have wanted."""
    c = serve(spawn, runtime, "--simulate", "latency=400,failure=0", "--max-ledger-entries", "3").conn
    STATS = schema_validator("Stats")

    def figures():
        stats = c.result("stats")
        STATS.validate(stats)
        return stats["mutations"]

    assert figures() == {"entries": 0, "open": 0, "failed": 0, "lastSeq": 0, "dropped": 0,
                         "bytes": 0, "maxEntries": 3, "maxBytes": 4 << 20}
    c.result("follow", {"kind": "artist", "id": "kept", "await": True})
    c.result("setFollowState", {"kind": "artist", "id": "slow", "following": True})
    now = figures()
    assert (now["entries"], now["open"], now["failed"], now["lastSeq"]) == (2, 1, 0, 2), now
    assert now["bytes"] > 0, now
    c.result("sync", {"timeoutMs": 10_000})
    assert figures()["open"] == 0
    for index in range(3):
        c.result("follow", {"kind": "artist", "id": f"more{index}", "await": True})
    now = figures()
    assert (now["entries"], now["lastSeq"], now["dropped"]) == (3, 5, 2), now


def test_stats_counts_the_failed_intents_the_ledger_keeps(spawn, runtime):
    c = serve(spawn, runtime, "--simulate", "latency=10,failure=1,status=422").conn
    assert c.call("follow", {"kind": "artist", "id": "kaws", "await": True})["error"]["code"] == REJECTED
    assert c.call("unfollow", {"kind": "artist", "id": "andy", "await": True})["error"]["code"] == REJECTED
    figures = c.result("stats")["mutations"]
    assert (figures["entries"], figures["open"], figures["failed"]) == (2, 0, 2), figures


def test_the_byte_bound_keeps_the_newest_entries_within_it_across_a_restart(spawn, runtime):
    args = ("--simulate", "latency=5,failure=0", "--max-ledger-bytes", "2048")
    first = serve(spawn, runtime, *args)
    for index in range(12):
        first.conn.result("follow", {"kind": "artist", "id": f"{index:02d}-" + "x" * 200, "await": True})
    kept = entries(first.conn)
    assert 4 <= len(kept) < 12 and kept[-1]["seq"] == 12, [e["seq"] for e in kept]
    assert [e["seq"] for e in kept] == list(range(13 - len(kept), 13)), "the oldest went first"
    log = runtime.root / "ledger-state" / "mutations.log"
    # Running, the file is compacted once it holds twice the bound (and one turn's lines).
    assert log.stat().st_size <= 2 * 2048 + 2 * 300, log.stat().st_size
    first.close_stdin()
    assert first.wait() == 0
    lines = log.read_bytes().splitlines()
    assert sum(len(line) + 1 for line in lines if b'"q"' in line) <= 2048, "a clean stop compacts it"
    second = serve(spawn, runtime, *args)
    assert entries(second.conn) == kept


def test_a_bound_option_below_its_minimum_is_a_usage_error(spawn, runtime):
    server = spawn("--max-ledger-entries", "0")
    assert server.wait() == 2 and "--max-ledger-entries must be a whole number ≥ 1" in server.stderr()


# --------------------------------------------------------------------------
# a hostile or torn file


def test_a_torn_and_hostile_ledger_is_read_with_a_log_line_and_the_server_starts(spawn, runtime):
    folder = runtime.root / "ledger-state"
    folder.mkdir(mode=0o700)
    good = {"q": 4, "k": "artist", "i": "kept", "w": True, "a": 1764690000123, "o": "refused",
            "t": 1764690000456, "n": 1, "x": "rejected", "xs": 422, "xm": "no such artist"}
    (folder / "mutations.log").write_bytes(
        b"\x00\xff garbage\n"
        + json.dumps(good).encode() + b"\n"
        + b'{"q":5,"k":"artist","i":"' + b"x" * 300 + b'","w":true,"a":1,"o":"confirmed"}\n'
        + b'{"q":6,"k":"artist","i":"bad","w":true,"a":1,"o":"exploded"}\n'
        + b'{"q":7,"k":"artist","i":"torn","w":tr')
    server = serve(spawn, runtime, "--simulate", "latency=5,failure=0", "--log-level", "info")
    c = server.conn
    [entry] = entries(c)
    assert entry["seq"] == 4 and entry["outcome"] == "refused", entry
    assert entry["error"] == {"code": REJECTED, "message": "no such artist", "retryable": False}, entry
    c.result("follow", {"kind": "artist", "id": "new", "await": True})
    assert entries(c)[-1]["seq"] == 5, "seq goes on after the highest one read"
    log = server.stderr()
    assert "mutations.log: skipped 1 unreadable line(s)" in log, log
    assert "mutations.log line 3" in log and "mutations.log line 4" in log, log
    assert "ignored an incomplete last line" in log, log
    assert list(folder.glob("mutations.log.invalid-*")), "the refused lines are kept for a human"


def test_an_entry_left_open_whose_intent_settled_becomes_unknown_and_one_still_owed_goes_on(spawn, runtime):
    folder = runtime.root / "ledger-state"
    folder.mkdir(mode=0o700)
    # The last run settled "gone" (the outbox forgot it) but stopped before the ledger
    # said how; "owed" is still in the outbox.
    (folder / "mutations.log").write_text(
        '{"q":1,"k":"artist","i":"gone","w":true,"a":1764690000000,"o":"pending"}\n'
        '{"q":2,"k":"artist","i":"owed","w":true,"c":"nvim","a":1764690000001,"o":"pending"}\n')
    (folder / "journal.log").write_text('{"k":"artist","i":"owed","w":true}\n')
    server = serve(spawn, runtime, "--simulate", "latency=5,failure=0")
    gone, owed = settled(server.conn, 2)
    assert gone["outcome"] == "unknown" and RFC3339.match(gone["settledAt"]), gone
    assert (owed["seq"], owed["outcome"], owed["client"]) == (2, "confirmed", "nvim"), owed
    assert "1 intent(s) of the mutations ledger settled in a run that stopped before saying how" in server.stderr()


def test_a_ledger_that_is_not_a_file_leaves_it_in_memory_and_the_server_serves(spawn, runtime):
    folder = runtime.root / "ledger-state"
    (folder / "mutations.log").mkdir(parents=True)
    folder.chmod(0o700)
    server = serve(spawn, runtime, "--simulate", "latency=5,failure=0")
    c = server.conn
    assert c.result("follow", {"kind": "artist", "id": "x", "await": True})["confirmed"] is True
    assert entries(c)[0]["outcome"] == "confirmed"
    assert "the mutations ledger is kept in memory only" in server.stderr()
