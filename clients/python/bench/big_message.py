#!/usr/bin/env python3
"""How long the client takes to read one big message (issue 26, item 14):

    python3 clients/python/bench/big_message.py [MB…]      (default: 5 30)

The "server" is big_reply_server.py next to this file, which answers a request with one
message of MB megabytes; the figure is from sending the request to holding the parsed
reply, best of three."""

import asyncio
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout

from netmodel_client import AsyncClient  # noqa: E402


async def main(sizes: list[float]) -> None:
    for mb in sizes:
        size = round(mb * 1024 * 1024)
        env = {**os.environ, "BIG_REPLY_BYTES": str(size)}
        nm = await AsyncClient.spawn(str(HERE / "big_reply_server.py"), env=env)
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            result = await nm.call("big", {})
            best = min(best, time.perf_counter() - start)
            assert len(result["blob"]) >= size // 2
        print(f"python: {mb:g} MB message read in {best:.2f} s")
        assert nm.process is not None
        nm.process.kill()
        await nm.process.wait()


asyncio.run(main([float(a) for a in sys.argv[1:]] or [5, 30]))
