"""Not netmodel: a Unix socket server that stands where a client expects netmodel, for
the tests of who a client agrees to talk to (test_trust.py, the clients' own tests).

As a script: ``impostor.py PATH`` listens on PATH, prints ``ready``, and counts the
connections it gets and the bytes they send (it never answers; it closes each one once
the client has been quiet for a second). On EOF on stdin it prints
``{"connections": N, "bytes": M}`` and exits. ``Impostor`` runs it, optionally as
another user (root only): a client that checks its peer must send it nothing.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import subprocess
import sys
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve()
# Another user may be unable to run ours (a pyenv under /root): the system's will do.
SYSTEM_PYTHON = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), sys.executable)


class Impostor:
    """``Impostor(path, uid=None)``: the script running, listening on ``path``
    (as ``uid`` when given); ``finish()`` stops it and returns its counts."""

    def __init__(self, path: Path, uid: Optional[int] = None):
        def drop():
            os.setgid(uid)
            os.setuid(uid)

        self.proc = subprocess.Popen(
            [sys.executable if uid is None else SYSTEM_PYTHON, str(HERE), str(path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/",
            preexec_fn=drop if uid is not None else None,
        )
        line = self.proc.stdout.readline()
        if line.strip() != b"ready":
            self.proc.kill()
            raise AssertionError(f"the impostor did not start: {line!r} {self.proc.stderr.read()!r}")

    def finish(self, timeout: float = 10) -> dict:
        out, err = self.proc.communicate(timeout=timeout)
        if self.proc.returncode != 0:
            raise AssertionError(f"the impostor failed: {err!r}")
        return json.loads(out)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _serve(path: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    counts = {"connections": 0, "bytes": 0}
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    sel.register(sys.stdin, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            if key.fileobj is sys.stdin:
                if not sys.stdin.buffer.read1(1):
                    print(json.dumps(counts), flush=True)
                    return
                continue
            conn, _ = listener.accept()
            counts["connections"] += 1
            conn.settimeout(1.0)
            try:
                while chunk := conn.recv(65536):
                    counts["bytes"] += len(chunk)
            except (socket.timeout, OSError):
                pass
            conn.close()


if __name__ == "__main__":
    _serve(sys.argv[1])
