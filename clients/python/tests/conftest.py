import os
import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run without installing the package

REPO = HERE.parents[2]


def _binary() -> str:
    env = os.environ.get("NETMODEL_BIN")
    if env:
        return env
    built = REPO / ".build" / "debug" / "netmodel"
    if built.exists():
        return str(built)
    found = shutil.which("netmodel")
    if found:
        return found
    pytest.skip("netmodel binary not found (set NETMODEL_BIN)", allow_module_level=True)


@pytest.fixture
def binary() -> str:
    return _binary()


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A private XDG_RUNTIME_DIR / XDG_STATE_HOME for the server and the client."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    # The user's netmodel.json would change every server spawned here.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    return dict(os.environ)


@pytest.fixture
def state_dir(tmp_path) -> str:
    return str(tmp_path / "state")
