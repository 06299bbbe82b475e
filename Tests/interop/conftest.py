"""Fixtures for driving the real netmodel binary.

The binary comes from $NETMODEL_BIN, else <repo>/.build/debug/netmodel.  A
missing binary is a FAILURE, never a skip: run `swift build` first.

Every wait is bounded; on top of that each test here gets a pytest-timeout
marker (when the plugin is installed: see requirements.txt), so nothing hangs.
Every process a test starts is ended at teardown by its own pid.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import rpcio  # noqa: E402
from demo import DemoServer  # noqa: E402
from rpcio import wait_for_socket  # noqa: E402,F401

REPO_ROOT = HERE.parents[1]
DEFAULT_BIN = REPO_ROOT / ".build" / "debug" / "netmodel"
TEST_TIMEOUT = 90  # seconds, per test

# Our own test files (test_schema.py belongs to someone else: leave it alone).
_OWN_FILES = {"test_compliance.py", "test_clients.py", "test_trust.py"}


def pytest_configure(config):
    config.addinivalue_line("markers", "timeout(seconds): per-test time limit (pytest-timeout)")


def pytest_collection_modifyitems(config, items):
    if not config.pluginmanager.hasplugin("timeout"):
        return
    for item in items:
        if Path(str(getattr(item, "path", None) or item.fspath)).name in _OWN_FILES and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT))


# --------------------------------------------------------------------------
# paths


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def netmodel_bin() -> Path:
    path = Path(os.environ.get("NETMODEL_BIN") or DEFAULT_BIN)
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(
            f"netmodel binary not found or not executable at {path}.\n"
            f"Build it first:  (cd {REPO_ROOT} && swift build)\n"
            f"or point NETMODEL_BIN at a built binary.",
            pytrace=False,
        )
    return path


# --------------------------------------------------------------------------
# per-test runtime folders


class Runtime:
    """Short temp folders (a Unix socket path must fit in 108 bytes)."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="nmi-", dir="/tmp"))
        self.run = self.root / "run"
        self.state = self.root / "state"
        self.cache = self.root / "cache"
        self.config = self.root / "config"
        self.logs = self.root / "logs"
        for d in (self.run, self.state, self.cache, self.config, self.logs):
            d.mkdir(mode=0o700)
        self.env = dict(os.environ)
        # XDG_CONFIG_HOME too: a developer's ~/.config/netmodel/netmodel.json must not reach the tests.
        self.env.update(
            XDG_RUNTIME_DIR=str(self.run),
            XDG_STATE_HOME=str(self.state),
            XDG_CACHE_HOME=str(self.cache),
            XDG_CONFIG_HOME=str(self.config),
        )
        self.env.pop("CREDENTIALS_DIRECTORY", None)

    @property
    def default_socket(self) -> Path:
        return self.run / "netmodel" / "netmodel.sock"

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def runtime():
    rt = Runtime()
    yield rt
    rt.cleanup()


# --------------------------------------------------------------------------
# spawning the server


@pytest.fixture
def spawn(netmodel_bin, runtime):
    """spawn(*args, framing="ndjson", stdio=True) -> rpcio.ServerProc running
    `netmodel serve *args` with the per-test XDG folders."""
    procs: list[rpcio.ServerProc] = []
    counter = [0]

    def _spawn(*args, framing: str = rpcio.NDJSON, stdio: bool = True, env: dict | None = None):
        counter[0] += 1
        e = dict(runtime.env)
        if env:
            e.update(env)
        p = rpcio.ServerProc(
            [str(netmodel_bin), "serve", *map(str, args)],
            env=e,
            stderr_path=runtime.logs / f"server{counter[0]}.stderr",
            framing=framing,
            stdio=stdio,
            cwd=runtime.root,
        )
        procs.append(p)
        return p

    yield _spawn
    for p in procs:
        p.stop()


@pytest.fixture
def socket_server(spawn, runtime):
    """socket_server(path=None, *extra, no_stdio=True) -> (ServerProc, Path).

    path=None uses the bare `--socket` flag, i.e. the default location
    $XDG_RUNTIME_DIR/netmodel/netmodel.sock; otherwise `--socket=PATH`.
    """

    def _start(path: Path | None = None, *extra, no_stdio: bool = True, wait: bool = True):
        args = ["--socket" if path is None else f"--socket={path}"]
        if no_stdio:
            args.append("--no-stdio")
        args.extend(extra)
        server = spawn(*args, stdio=not no_stdio)
        sock_path = runtime.default_socket if path is None else Path(path)
        if wait:
            wait_for_socket(server, sock_path)
        return server, sock_path

    return _start


@pytest.fixture
def connect():
    """connect(path, framing, diag=...) -> rpcio.Conn over a Unix socket; closed at teardown."""
    socks = []

    def _connect(path, framing: str = rpcio.NDJSON, diag=lambda: ""):
        conn, s = rpcio.socket_conn(str(path), framing, diag)
        socks.append(s)
        return conn

    yield _connect
    for s in socks:
        rpcio.close_socket(s)


# --------------------------------------------------------------------------
# the demo API servers of examples/, and netmodel on the REST backend


@pytest.fixture
def demo(runtime, request):
    """demo(ServerClass, token=None, *args, root=None) -> a running demo.DemoServer subclass
    (`examples/<api>/server.py --token token *args`), stopped at teardown."""

    def _start(kind: type[DemoServer], token: str | None = None, *args: str, root: Path | None = None):
        server = kind(root or runtime.root, token, *args)
        request.addfinalizer(server.stop)
        return server

    return _start


@pytest.fixture
def serve_rest(spawn, runtime):
    """serve_rest(config, *args, state="state-rest", env=None, framing="ndjson") -> rpcio.ServerProc running
    `netmodel serve --backend rest --config <config, written to a file> --state-dir
    runtime.root/<state> *args` (the same state folder across restarts)."""
    count = [0]

    def _start(config: dict, *args, state: str = "state-rest", env: dict | None = None, framing: str = rpcio.NDJSON):
        count[0] += 1
        path = runtime.root / f"rest-config-{count[0]}.json"
        path.write_text(json.dumps(config))
        folder = runtime.root / state
        folder.mkdir(exist_ok=True)
        return spawn("--backend", "rest", "--config", path, "--state-dir", folder, *args, env=env, framing=framing)

    return _start
