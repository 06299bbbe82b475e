#!/usr/bin/env python3
"""A follow button in the terminal.

    python examples/follow_button.py [KIND ID] [-- SERVE-ARGS…]

Uses the netmodel server running for you (on the default socket), else starts one
(``$NETMODEL_BIN``, else ``netmodel``) that listens there too, and shows one button:
Enter toggles it, ``q`` (or Ctrl-D) quits, saying where the follow ended. SERVE-ARGS
are for a server it starts; to watch pending states and rollbacks (with no server
running, or it is used as it is):

    python examples/follow_button.py artist banksy -- --simulate latency=500,failure=0.3,status=422

(Without ``status=`` a simulated failure is a network error, which is retried four
times before it rolls back, so rollbacks are rare.)
"""

import asyncio
import sys
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from netmodel_client import AsyncClient, EntityState, RPCError, State  # noqa: E402


def render(state: EntityState) -> str:
    if state.following is None:
        label = "[    ?     ]"
    elif state.following:
        label = "[ Following ✓ ]"
    else:
        label = "[ + Follow ]"
    line = f"{state.kind}/{state.id}  {label}"
    if state.pending:
        line += " …"
    elif state.error is not None:  # the server keeps the last error while a new try is pending
        line += f"   ✗ {state.error.message}"
    return line + f"   (v{state.version})"


async def main(kind: str, ident: str, serve_args: List[str]) -> None:
    async with await AsyncClient.connect_or_spawn(args=serve_args, timeout=60) as client:
        if client.spawned:
            print(f"started netmodel serve (pid {client.pid})")
        else:
            print("using the running netmodel" + (f" (not started: {' '.join(serve_args)} unused)" if serve_args else ""))
        sub = await client.subscribe({"type": "entity", "kind": kind, "id": ident})
        shown = sub.snapshot[0]
        print("Enter toggles, q quits.")

        def show(state: State) -> None:
            nonlocal shown
            # An entity topic's states only; the reply and a notification may carry the same one.
            if isinstance(state, EntityState) and state.version > shown.version:
                shown = state
                print(render(state), flush=True)

        print(render(shown), flush=True)
        sub.on_change(show)

        loop = asyncio.get_running_loop()
        while True:
            # In a thread: a terminal and a pipe alike, and the loop goes on meanwhile.
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line or line.strip() == "q":
                break
            try:
                # The reply is the optimistic state; the settled one arrives by notification.
                show(await client.set_follow_state(kind, ident, not shown.following))
            except RPCError as e:
                print(f"error {e.code}: {e.message}", flush=True)

        if shown.pending:  # the last toggle is on its way: say where it ends
            async for state in sub:
                if isinstance(state, EntityState) and state.version >= shown.version and not state.pending:
                    show(state)
                    break
        outcome = f"failed: {shown.error.message}" if shown.error else "confirmed" if not shown.pending else "pending"
        print(f"{'following' if shown.following else 'not following'} {ident} ({outcome})", flush=True)


if __name__ == "__main__":
    argv = sys.argv[1:]
    serve = argv[argv.index("--") + 1:] if "--" in argv else []
    pos = argv[: argv.index("--")] if "--" in argv else argv
    kind, ident = (pos + ["artist", "banksy"][len(pos):])[:2]
    try:
        asyncio.run(main(kind, ident, serve))
    except KeyboardInterrupt:
        pass
