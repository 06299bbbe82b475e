"""The `versions` mark is a number JSON clients read exactly (issue 25, item 10).

A mark that is not a decimal number from 0 to 2^53 − 1 is a corrupt file: it is kept
aside as `versions.corrupt-<n>` with a warning naming it, and versions continue from
2^40; no file content makes the server trap. Versions never pass 2^53 − 1: a start
whose mark leaves no room below it refuses to start with a message naming the file.
"""

from __future__ import annotations

import signal

import pytest

pytestmark = pytest.mark.timeout(60)

LIMIT = 2**53 - 1
BLOCK = 2**20
AFTER_CORRUPT = 2**40
KEY = {"kind": "artist", "id": "banksy"}


@pytest.fixture
def state(runtime):
    folder = runtime.root / "state-versions"
    folder.mkdir(mode=0o700)
    return folder


def kill9(server):
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(10)


def first_version(server) -> int:
    return server.conn.result("follow", {**KEY, "await": True})["version"]


@pytest.mark.parametrize(
    "content",
    [
        b"18446744073709551615\n",  # 2^64 - 1: crashed every start
        b"18446744073709551616\n",  # does not fit 64 bits
        b"9223372036854775000\n",  # just under 2^63: the next start crashed
        str(LIMIT + 1).encode() + b"\n",  # beyond what JSON clients read exactly
        b"-5\n",
        b"1.5\n",
        b"12 34\n",
        b"1e9\n",
        b"",
        b"\xff\xfe\n",
    ],
    ids=["2^64-1", "2^64", "under-2^63", "2^53", "negative", "fraction", "two-numbers", "exponent", "empty", "bytes"],
)
def test_a_mark_that_is_not_a_sane_number_is_set_aside(spawn, state, content):
    (state / "versions").write_bytes(content)
    server = spawn("--state-dir", state)
    version = first_version(server)
    assert AFTER_CORRUPT <= version <= LIMIT, version
    assert server.proc.poll() is None
    log = server.stderr()
    assert f"{state / 'versions'} is not a version mark" in log, log
    assert (state / "versions.corrupt-1").read_bytes() == content
    mark = int((state / "versions").read_text())
    assert AFTER_CORRUPT < mark <= LIMIT, mark
    kill9(server)
    # The next start reads the mark it wrote, and answers.
    again = spawn("--state-dir", state)
    assert mark <= first_version(again) <= LIMIT
    assert "is not a version mark" not in again.stderr()


def test_a_sane_mark_is_kept(spawn, state):
    (state / "versions").write_text("123456789\n")
    server = spawn("--state-dir", state)
    assert first_version(server) > 123456789
    assert not (state / "versions.corrupt-1").exists()


def test_versions_end_at_2_to_the_53_with_a_start_that_refuses(spawn, state):
    (state / "versions").write_text(f"{LIMIT - BLOCK}\n")
    server = spawn("--state-dir", state)
    assert LIMIT - BLOCK < first_version(server) <= LIMIT
    assert int((state / "versions").read_text()) == LIMIT  # the last block, cut at the limit
    kill9(server)
    refused = spawn("--state-dir", state)
    assert refused.proc.wait(10) == 1
    log = refused.stderr()
    assert f"{state / 'versions'} holds the version mark {LIMIT}" in log, log
    assert "end of their range" in log and f"remove {state / 'versions'}" in log, log
    assert (state / "versions").read_text() == f"{LIMIT}\n"  # left for the user to see
