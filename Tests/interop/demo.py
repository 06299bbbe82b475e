"""The demo API servers of examples/ (examples/<api>/server.py), for the process-level tests
of the REST backend: started on a free port, read and driven through their control API
(/_control/, see examples/demoserver.py), and their example configuration pointed at them.

The fixtures `demo` and `serve_rest` (conftest.py) start and stop them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))  # demoserver, for in-process servers

START_SECONDS = 10


class DemoServer:
    """examples/<api>/server.py on a free port; a subclass names its `api`."""

    api = ""

    def __init__(self, root: Path, token: str | None = None, *args: str):
        port_file = root / f"{self.api}-{time.monotonic_ns()}.port"
        argv = [sys.executable, str(EXAMPLES / self.api / "server.py"), "--port", "0", "--port-file", str(port_file),
                "--quiet", *args]
        if token:
            argv += ["--token", token]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_SECONDS
        while not (port_file.exists() and port_file.read_text().strip()):
            assert self.proc.poll() is None, f"the {self.api} demo server exited"
            assert time.monotonic() < deadline, f"the {self.api} demo server did not start"
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        while True:  # listening is not yet answering: a test's first request must not race it
            try:
                self.stats()
                break
            except urllib.error.HTTPError:
                break  # an answer all the same
            except (OSError, urllib.error.URLError):
                assert self.proc.poll() is None, f"the {self.api} demo server exited"
                assert time.monotonic() < deadline, f"the {self.api} demo server does not answer"
                time.sleep(0.02)

    def control(self, method: str, path: str, body=None):
        return self.call_control(method, path, body)

    def call_control(self, method: str, path: str, body=None):
        """`control` under a name a subclass leaves alone when it reshapes `control`."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + "/_control/" + path, data=data, method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def stats(self) -> dict:
        return self.call_control("GET", "stats")

    def log(self) -> list[dict]:
        """Every API request the server received, oldest first."""
        return self.stats()["log"]

    def route(self, key: str) -> int:
        """How many requests the server counted under `key` (for example "GET /api/v1/…")."""
        return self.stats()["routes"].get(key, 0)

    def faults(self, *rules) -> None:
        self.call_control("POST", "faults", list(rules))

    def config(self, **overrides) -> dict:
        """examples/<api>/config.json with its `local` environment at this server, and the
        top-level fields given replaced."""
        config = json.loads((EXAMPLES / self.api / "config.json").read_text())
        config["environments"]["local"] = self.url
        config.update(overrides)
        return config

    def stop(self):
        stop_process(self.proc)


def stop_process(proc: subprocess.Popen) -> None:
    """Ends a helper process started by a test: SIGTERM, then SIGKILL after 5 s."""
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def error_of(reply: dict, code: int) -> dict:
    assert "error" in reply, reply
    assert reply["error"]["code"] == code, reply
    return reply["error"]


def pipeline(conn, requests):
    """Sends every request before reading any reply; returns replies by id."""
    for index, (method, params) in enumerate(requests):
        conn.send({"jsonrpc": "2.0", "id": index, "method": method, "params": params})
    replies = {}
    while len(replies) < len(requests):
        message = conn.recv(timeout=20)
        if "id" in message:
            replies[message["id"]] = message
    return replies
