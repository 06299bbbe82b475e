"""One big message is read in time linear in its size (issue 26, item 14). The server is
bench/big_reply_server.py, a stand-in answering with one 48 MB message in 64 KiB
pieces; see bench/big_message.py for the figures."""

import asyncio
import json
import os
import time

import pytest

from conftest import REPO
from netmodel_client import AsyncClient

pytestmark = pytest.mark.timeout(120)


def test_a_48_mb_message_costs_about_what_parsing_it_does():
    size = 48 * 1024 * 1024
    server = REPO / "clients" / "python" / "bench" / "big_reply_server.py"

    async def main():
        nm = await AsyncClient.spawn(str(server), env={**os.environ, "BIG_REPLY_BYTES": str(size)})
        try:
            start = time.perf_counter()
            result = await nm.call("big", {})
            return time.perf_counter() - start, result["blob"]
        finally:
            nm.process.kill()
            await nm.process.wait()

    read, blob = asyncio.run(main())
    assert len(blob) == size // 4 + size - 2 * (size // 4)
    # What reading it must cost at least, here and now: decoding and parsing it.
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"blob": blob}}, ensure_ascii=False).encode()
    start = time.perf_counter()
    json.loads(line.decode())
    floor = time.perf_counter() - start
    # Linear reading is a small multiple of it; quadratic (searching the whole message
    # again for each piece) hundreds of times it.
    assert read < 6 * floor + 1.0, f"read in {read:.2f} s; decoding and parsing alone take {floor:.2f} s"
