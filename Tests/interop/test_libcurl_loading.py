"""libcurl is opened only when the REST backend starts (issue 30, start-up): the binary
does not link it, a local-backend server never maps it (nor starts libcurl's thread), a
REST server does, and a
machine without it gets a clear error and exit code 2 from `serve --backend rest`.

NETMODEL_LIBCURL names the library to open instead of libcurl.so.4: how these tests
make libcurl missing without removing it from the machine."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

import rpcio
from demo import DemoServer
from test_compliance import _openrpc, _validate

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]
ARTSY = REPO / "examples" / "artsy" / "config.json"


class Artsy(DemoServer):
    api = "artsy"


def mapped_libraries(pid: int) -> set[str]:
    """The file names of the shared objects the process maps."""
    names = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and ".so" in fields[5]:
            names.add(Path(fields[5]).name)
    return names


def thread_names(pid: int) -> list[str]:
    """The names of the process's threads, as `top -H` shows them."""
    return sorted((task / "comm").read_text().strip() for task in Path(f"/proc/{pid}/task").iterdir())


def libcurls(names: set[str]) -> set[str]:
    return {name for name in names if name.startswith("libcurl")}


def rest_server(spawn, runtime, env=None):
    state = runtime.root / "state-rest"
    state.mkdir(exist_ok=True)
    return spawn("--backend", "rest", "--config", ARTSY, "--state-dir", state, env=env)


def test_the_binary_does_not_link_libcurl(netmodel_bin):
    needed = subprocess.run(["readelf", "-d", str(netmodel_bin)], capture_output=True, text=True, check=True).stdout
    libraries = re.findall(r"Shared library: \[([^\]]+)\]", needed)
    assert libraries, needed
    assert not [name for name in libraries if "curl" in name], libraries


def test_a_local_backend_server_never_maps_libcurl(spawn):
    server = spawn()
    assert server.conn.result("initialize", {})["serverInfo"]["name"] == "netmodel"
    # A follow and a read: everything the local backend does, and still no libcurl.
    assert server.conn.result("follow", {"kind": "artist", "id": "banksy", "await": True})["following"] is True
    assert server.conn.result("getFollowState", {"kind": "artist", "id": "banksy"})["following"] is True
    names = mapped_libraries(server.pid)
    assert [name for name in names if name.startswith("libjansson")], names  # it reads the maps it means to
    assert libcurls(names) == set(), names
    assert thread_names(server.pid) == ["netmodel"], "the local backend runs on one thread"


def test_a_rest_backend_server_maps_libcurl_and_answers_through_it(serve_rest, demo, repo_root):
    api = demo(Artsy)
    server = serve_rest(api.config(maxInFlight=16))
    assert server.conn.result("initialize", {})["serverInfo"]["name"] == "netmodel"
    names = libcurls(mapped_libraries(server.pid))
    assert [name for name in names if name.startswith("libcurl.so.4")], names
    # The functions resolved at run time carry requests: a read goes to the API and back.
    assert server.conn.result("getFollowState", {"kind": "artist", "id": "andy-warhol"})["following"] is True
    assert api.log(), "no request reached the API"
    assert thread_names(server.pid) == ["netmodel"], "a lone request is served on the loop's thread"
    stats = server.conn.result("stats")
    _validate(_openrpc(repo_root), {"$ref": "#/components/schemas/Stats"}, stats, "the rest backend's stats")
    http = stats["backend"]["http"]
    assert (http["libcurlThread"], http["libcurlMoves"]) == ("loop", 0), http
    # A burst (12 follows at once, a request each, more than CurlRunner.threadFrom)
    # moves libcurl to a thread of its own, one however many requests go out.
    before = len(api.log())
    burst = [
        server.conn.request_obj("follow", {"kind": "artist", "id": f"burst-{n}", "await": True}) for n in range(12)
    ]
    server.conn.send_raw(b"".join(rpcio.frame(request, server.conn.framing) for request in burst))
    replies = [server.conn.recv_reply() for _ in burst]
    assert sorted(reply["id"] for reply in replies) == sorted(request["id"] for request in burst)
    posts = [entry for entry in api.log()[before:] if entry["method"] == "POST"]
    assert len(posts) == len(burst), "one request each"
    assert thread_names(server.pid) == ["netmodel", "netmodel curl"]
    # stats says so, and says when it came back (20 ms after the burst's last answer).
    http = server.conn.result("stats")["backend"]["http"]
    assert http["libcurlMoves"] == 1 and http["libcurlThread"] in ("own", "loop"), http
    deadline = time.monotonic() + 5
    while http["libcurlThread"] != "loop" and time.monotonic() < deadline:
        time.sleep(0.02)
        http = server.conn.result("stats")["backend"]["http"]
    assert (http["libcurlThread"], http["libcurlMoves"]) == ("loop", 1), http
    assert thread_names(server.pid) == ["netmodel", "netmodel curl"], "the thread stays, asleep"


def test_without_libcurl_the_rest_backend_stops_with_exit_2_saying_what_to_install(spawn, runtime):
    server = rest_server(spawn, runtime, env={"NETMODEL_LIBCURL": "libnetmodel-absent-curl.so.4"})
    assert server.wait() == 2
    stderr = server.stderr()
    assert "libnetmodel-absent-curl.so.4 not found: install libcurl4 (Debian)" in stderr, stderr
    assert "cannot open shared object file" in stderr, stderr  # the loader's own words too
    assert stderr.count("\n") == 1, stderr


def test_a_library_that_is_not_libcurl_is_refused_by_the_function_it_lacks(spawn, runtime):
    server = rest_server(spawn, runtime, env={"NETMODEL_LIBCURL": "libjansson.so.4"})
    assert server.wait() == 2
    assert "libjansson.so.4 has no curl_global_init: install libcurl4 (Debian)" in server.stderr()


def test_the_local_backend_starts_without_libcurl(spawn):
    server = spawn(env={"NETMODEL_LIBCURL": "libnetmodel-absent-curl.so.4"})
    assert server.conn.result("follow", {"kind": "artist", "id": "x", "await": True})["following"] is True
    server.close_stdin()
    assert server.wait() == 0
    stderr = server.stderr()
    assert "libcurl" not in stderr and "error" not in stderr, stderr


def test_the_name_from_the_environment_reaches_the_log_escaped(spawn, runtime):
    server = rest_server(spawn, runtime, env={"NETMODEL_LIBCURL": "lib\x1b]0;owned\x07curl.so"})
    assert server.wait() == 2
    stderr = server.stderr()
    assert "\x1b" not in stderr and "\x07" not in stderr, repr(stderr)
    assert "lib\\x1b]0;owned\\x07curl.so not found" in stderr, stderr


def test_check_config_does_not_need_libcurl(netmodel_bin, runtime):
    env = dict(runtime.env, NETMODEL_LIBCURL="libnetmodel-absent-curl.so.4")
    done = subprocess.run(
        [str(netmodel_bin), "check-config", str(ARTSY)], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert ": ok" in done.stdout
