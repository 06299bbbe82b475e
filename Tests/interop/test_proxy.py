"""Which hop a request takes when the environment names a proxy (docs/backends.md "Tokens travel
only where they should"): the real binary against the Artsy demo server, with a real
forward proxy on loopback (recording_proxy.py) that records every request it receives.

A proxy is a hop the auth header travels through: over plain http:// it reads it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from demo import error_of, stop_process
from test_rest import Artsy, artsy, rest  # noqa: F401  (fixtures)

pytestmark = pytest.mark.timeout(90)

HERE = Path(__file__).resolve().parent
TOKEN = "tok-proxy-4f9a1c"
POST_ARTIST = "POST /api/v1/me/follow/artist"
UNAVAILABLE = -32001
PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
NO_BYPASS = {"no_proxy": "", "NO_PROXY": ""}


class RecordingProxy:
    def __init__(self, root: Path):
        stamp = time.monotonic_ns()
        port_file, self.log_path = root / f"proxy-{stamp}.port", root / f"proxy-{stamp}.log"
        self.log_path.touch()
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "recording_proxy.py"), "--port-file", str(port_file), "--log",
             str(self.log_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not (port_file.exists() and port_file.read_text().strip()):
            assert self.proc.poll() is None, "the proxy exited"
            assert time.monotonic() < deadline, "the proxy did not start"
            time.sleep(0.02)
        self.port = int(port_file.read_text())

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line]

    def stop(self):
        stop_process(self.proc)


@pytest.fixture
def proxy(runtime, request):
    def _start() -> RecordingProxy:
        started = RecordingProxy(runtime.root)
        request.addfinalizer(started.stop)
        return started

    return _start


def quick_retries():
    return {"maxRetries": 1, "baseDelayMs": 10, "maxDelayMs": 10}


def test_a_loopback_environment_never_goes_through_a_proxy(artsy, rest, proxy):
    """The token to a loopback API stays on the machine: every proxy variable set, the
    request still goes straight to 127.0.0.1 and the proxy hears nothing."""
    api = artsy(token=TOKEN)
    hop = proxy()
    every = {name: f"http://127.0.0.1:{hop.port}" for name in PROXY_VARIABLES}
    server = rest(api, env={"ARTSY_TOKEN": TOKEN, **every, **NO_BYPASS})
    c = server.conn
    assert c.result("follow", {"kind": "artist", "id": "kaws", "await": True})["confirmed"] is True
    state = c.result("getFollowState", {"kind": "artist", "id": "andy-warhol", "await": True})
    assert state["confirmed"] is True, state
    assert hop.records() == [], "the proxy was asked"
    assert api.route(POST_ARTIST) == 1


def test_the_token_never_goes_over_plain_http_through_a_proxy_that_is_not_loopback(artsy, rest, proxy, runtime):
    """`127.1` is this machine, but not written as loopback: neither the environment nor
    the proxy is trusted to stay on it. The plain-http environment is accepted only by
    auth.allowPlainHTTP; a proxy not written as loopback would read the token, so the
    request is not sent, and both the reply and the log say why. A loopback proxy is
    used as named, token and all; a host in no_proxy goes direct."""
    api = artsy(token=TOKEN)
    hop = proxy()
    port = api.url.rsplit(":", 1)[1]
    overrides = dict(
        environments={"local": f"http://127.1:{port}"},
        auth={"header": "X-Access-Token", "tokenEnv": "ARTSY_TOKEN", "allowPlainHTTP": True},
        retry=quick_retries())

    server = rest(api, env={"ARTSY_TOKEN": TOKEN, "http_proxy": f"http://127.1:{hop.port}", **NO_BYPASS},
                  **overrides)
    c = server.conn
    error = error_of(c.call("follow", {"kind": "artist", "id": "kaws", "await": True}), UNAVAILABLE)
    assert "http_proxy" in error["message"] and "not loopback" in error["message"], error
    assert TOKEN not in json.dumps(error)
    assert hop.records() == [], "the proxy received the request"
    assert api.route(POST_ARTIST) == 0
    server.close_stdin()
    assert server.wait() == 0
    log = server.stderr_path.read_text()
    warnings = [line for line in log.splitlines() if "http_proxy" in line and "not loopback" in line]
    assert warnings and all(line.startswith("netmodel: warn: ") for line in warnings), log
    assert TOKEN not in log

    # The same through a loopback proxy: it is the hop, and it carries the token.
    loopback = rest(api, env={"ARTSY_TOKEN": TOKEN, "http_proxy": f"http://127.0.0.1:{hop.port}", **NO_BYPASS},
                    **overrides)
    assert loopback.conn.result("follow", {"kind": "artist", "id": "kaws", "await": True})["confirmed"] is True
    posts = [r for r in hop.records() if r["method"] == "POST"]
    assert len(posts) == 1 and posts[0]["target"].startswith("http://127."), hop.records()
    assert posts[0]["headers"].get("X-Access-Token") == TOKEN
    assert api.route(POST_ARTIST) == 1
    loopback.close_stdin()
    assert loopback.wait() == 0

    # What the refusal advises: the host named in no_proxy goes direct.
    direct = rest(api, env={"ARTSY_TOKEN": TOKEN, "http_proxy": f"http://127.1:{hop.port}", **NO_BYPASS,
                            "no_proxy": "127.1"}, **overrides)
    assert direct.conn.result("follow", {"kind": "artist", "id": "banksy", "await": True})["confirmed"] is True
    assert len(hop.records()) == 1
    assert api.route(POST_ARTIST) == 2
