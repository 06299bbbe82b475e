#!/usr/bin/env python3
"""A follow button in the terminal.

    python examples/follow_button.py [KIND ID] [-- SERVE-ARGS…]

Starts ``netmodel serve`` (``$NETMODEL_BIN``, else ``netmodel``) and shows one button;
Enter toggles it, ``q`` (or Ctrl-D) quits. To watch pending states and rollbacks:

    python examples/follow_button.py artist banksy -- --simulate latency=500,failure=0.3,status=422

(Without ``status=`` a simulated failure is a network error, which is retried four
times before it rolls back, so rollbacks are rare.)
"""

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from netmodel_client import AsyncClient, EntityState, RPCError  # noqa: E402


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


async def main(kind: str, ident: str, serve_args: list) -> None:
    if "--state-dir" not in serve_args:  # don't touch the user's real follows by default
        serve_args += ["--state-dir", tempfile.mkdtemp(prefix="follow-button-")]
    async with await AsyncClient.spawn(None, *serve_args, timeout=60) as client:
        sub = await client.subscribe({"type": "entity", "kind": kind, "id": ident})
        shown = sub.snapshot[0]
        print("Enter toggles, q quits.")

        def show(state: EntityState) -> None:
            nonlocal shown
            if state.version > shown.version:  # the reply and a notification may carry the same state
                shown = state
                print(render(state), flush=True)

        print(render(shown), flush=True)
        sub.on_change(show)

        loop = asyncio.get_running_loop()
        lines: asyncio.Queue = asyncio.Queue()
        loop.add_reader(sys.stdin, lambda: lines.put_nowait(sys.stdin.readline()))
        try:
            while True:
                line = await lines.get()
                if not line or line.strip() == "q":
                    break
                try:
                    # The reply is the optimistic state; the settled one arrives by notification.
                    show(await client.set_follow_state(kind, ident, not shown.following))
                except RPCError as e:
                    print(f"error {e.code}: {e.message}", flush=True)
        finally:
            loop.remove_reader(sys.stdin)


if __name__ == "__main__":
    argv = sys.argv[1:]
    serve = argv[argv.index("--") + 1:] if "--" in argv else []
    pos = argv[: argv.index("--")] if "--" in argv else argv
    kind, ident = (pos + ["artist", "banksy"][len(pos):])[:2]
    try:
        asyncio.run(main(kind, ident, serve))
    except KeyboardInterrupt:
        pass
