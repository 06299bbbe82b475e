"""Real replies of every method, and the notifications, as the server sends them (raw
JSON over its stdio, no client in between), from the local backend and from the REST
backend against examples/artsy/server.py. Shared by the result-type tests."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

from conftest import REPO

T = 15.0


class Raw:
    """``netmodel serve`` over stdio, spoken to line by line."""

    def __init__(self, argv: List[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: "queue.Queue[bytes]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0
        self.replies: Dict[str, List[Any]] = {}
        self.notifications: Dict[str, List[Any]] = {}

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def call(self, method: str, params: Any = None) -> Any:
        self.next_id += 1
        msg: Dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            line = self.lines.get(timeout=T)
            assert line, f"the server ended before answering {method}"
            got = json.loads(line)
            if "method" in got:
                self.notifications.setdefault(got["method"], []).append(got["params"])
                continue
            assert got.get("id") == self.next_id, got
            assert "error" not in got, f"{method}: {got['error']}"
            self.replies.setdefault(method, []).append(got["result"])
            return got["result"]

    def wait_for(self, method: str) -> None:
        deadline = time.monotonic() + T
        while method not in self.notifications:
            line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            got = json.loads(line)
            if "method" in got:
                self.notifications.setdefault(got["method"], []).append(got["params"])

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def every_method(raw: Raw, kind: str, id: str, list_name: str) -> None:
    raw.call("initialize", {"clientInfo": {"name": "result-types-test"}})
    raw.call("rpc.discover")
    raw.call("configure", {})
    sub = raw.call("subscribe", {"topics": [{"type": "entity", "kind": kind}, {"type": "list", "list": list_name}, {"type": "stats"}, {"type": "mutations"}]})
    raw.call("follow", {"kind": kind, "id": id, "await": True})
    raw.call("getFollowState", {"kind": kind, "id": id, "refresh": True})
    raw.call("setFollowState", {"kind": kind, "id": id, "following": False, "await": True})
    raw.call("unfollow", {"kind": kind, "id": id})
    raw.call("sync", {"timeoutMs": 10000})
    raw.call("follow", {"kind": kind, "id": id, "await": True})
    raw.call("getEntity", {"kind": kind, "id": id, "refresh": True})
    page = raw.call("fetchList", {"list": list_name})
    raw.call("setInterfaceState", {"items": [{"kind": i["kind"], "id": i["id"]} for i in page["items"][:5]] or [{"kind": kind, "id": id}], "state": "visible"})
    raw.wait_for("stateChanged")
    raw.wait_for("statsChanged")
    raw.wait_for("mutationOutcome")
    raw.call("getMutations", {"since": 0})
    raw.call("stats")
    raw.call("inspect")
    raw.call("unsubscribe", {"subscription": sub["subscription"]})
    raw.call("shutdown")


def captured(binary: str, tmp: Path) -> Iterator[Tuple[str, Raw]]:
    """(backend, the server after every method was called) for each backend."""
    raw = Raw([binary, "serve", "--state-dir", str(tmp / "local")])
    try:
        every_method(raw, "artist", "banksy", "following/artist")
        yield "local", raw
    finally:
        raw.close()

    port_file = tmp / "artsy.port"
    api = subprocess.Popen(
        [sys.executable, str(REPO / "examples" / "artsy" / "server.py"), "--port", "0", "--port-file", str(port_file), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + T
        while not (port_file.exists() and port_file.read_text().strip()):
            assert api.poll() is None and time.monotonic() < deadline, "the demo API did not start"
            time.sleep(0.02)
        config = json.loads((REPO / "examples" / "artsy" / "config.json").read_text())
        config["environments"]["local"] = f"http://127.0.0.1:{port_file.read_text().strip()}"
        config["environment"] = "local"
        (tmp / "artsy.json").write_text(json.dumps(config))
        raw = Raw([binary, "serve", "--state-dir", str(tmp / "rest"), "--backend", "rest", "--config", str(tmp / "artsy.json")])
        try:
            every_method(raw, "artist", "banksy", "followedArtists")
            yield "rest", raw
        finally:
            raw.close()
    finally:
        api.terminate()
        api.wait()
