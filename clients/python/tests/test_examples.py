"""The README follow-button examples and examples/follow_button.py run, twice in a row
(the second time the artist is followed already), also while the user's server runs
(they connect to it), end with a line saying what happened, and pass ``mypy --strict``."""

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.timeout(120)

CLIENT = REPO / "clients" / "python"
READMES = [REPO / "README.md", CLIENT / "README.md"]


def follow_button(readme: Path) -> str:
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    found = [b for b in blocks if 'nm.follow("artist", "banksy")' in b]
    assert len(found) == 1, f"{readme}: want one follow-button example, found {len(found)}"
    return found[0]


def example_env(binary, tmp_path) -> dict:
    """``netmodel`` on PATH (the examples spawn it by name), private XDG folders shared by
    both runs (so the second one finds the follow), the client importable."""
    (tmp_path / "run").mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ)
    env.update(
        PATH=f"{Path(binary).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(CLIENT),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_RUNTIME_DIR=str(tmp_path / "run"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),  # not the user's netmodel.json
    )
    env.pop("NETMODEL_BIN", None)
    return env


def run_twice(args, env, stdin=None):
    outs = []
    for attempt in (1, 2):
        r = subprocess.run(args, env=env, input=stdin, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, f"run {attempt} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
        outs.append(r.stdout)
    return outs


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(REPO)))
def test_readme_follow_button_runs_twice(binary, tmp_path, readme):
    if Path(binary).name != "netmodel":
        pytest.skip("the example spawns `netmodel` by name")
    script = tmp_path / "follow_button.py"
    script.write_text(follow_button(readme))
    env = example_env(binary, tmp_path)
    first, second = run_twice([sys.executable, str(script)], env)
    for out in (first, second):
        assert out.splitlines()[0] == "started netmodel serve", out
        assert out.splitlines()[-1] == "following banksy (confirmed)", out


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(REPO)))
def test_readme_follow_button_uses_the_running_server(binary, tmp_path, readme):
    """Issue 26, item 13: with the user's server running (its user service), the example
    connects to it rather than die on its state folder."""
    if Path(binary).name != "netmodel":
        pytest.skip("the example spawns `netmodel` by name")
    script = tmp_path / "follow_button.py"
    script.write_text(follow_button(readme))
    env = example_env(binary, tmp_path)
    with running_server(binary, env):
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, f"exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
        lines = r.stdout.splitlines()
        assert lines[0] == "using the running netmodel" and lines[-1] == "following banksy (confirmed)", r.stdout
        r = subprocess.run([binary, "call", "getFollowState", "kind=artist", "id=banksy"], env=env,
                           capture_output=True, text=True, timeout=30)
        assert '"following":true' in r.stdout.replace(" ", ""), r.stdout + r.stderr  # on the user's server


@contextlib.contextmanager
def running_server(binary, env):
    """``netmodel serve --socket --no-stdio`` on the default socket and state folder of ``env``."""
    proc = subprocess.Popen([binary, "serve", "--socket", "--no-stdio"], env=env,
                            stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        path = Path(env["XDG_RUNTIME_DIR"]) / "netmodel" / "netmodel.sock"
        deadline = time.monotonic() + 10
        while True:
            with socket.socket(socket.AF_UNIX) as probe:
                try:
                    probe.connect(str(path))
                    break
                except OSError:
                    assert proc.poll() is None and time.monotonic() < deadline, "netmodel serve did not listen"
            time.sleep(0.02)
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


def test_examples_follow_button_runs_twice(binary, tmp_path):
    """The terminal button: Enter toggles, q quits; the second run starts followed."""
    script = CLIENT / "examples" / "follow_button.py"
    env = example_env(binary, tmp_path)
    args = [sys.executable, str(script), "artist", "kahlo", "--", "--state-dir", str(tmp_path / "state")]
    for out in run_twice(args, env, stdin="\n\nq\n"):  # follow, unfollow, quit
        assert "Following ✓" in out and "+ Follow" in out, out
        assert out.splitlines()[-1] == "not following kahlo (confirmed)", out


def test_examples_follow_button_uses_the_running_server(binary, tmp_path):
    script = CLIENT / "examples" / "follow_button.py"
    env = example_env(binary, tmp_path)
    with running_server(binary, env):
        r = subprocess.run([sys.executable, str(script), "artist", "kahlo"], env=env, input="\nq\n",
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, f"exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
        lines = r.stdout.splitlines()
        assert lines[0] == "using the running netmodel" and lines[-1] == "following kahlo (confirmed)", r.stdout


def test_examples_pass_mypy_strict(tmp_path):
    try:
        import mypy.api
    except ImportError:
        pytest.fail("mypy not installed: pip install -r Tests/interop/requirements.txt (scripts/test does)")
    files = [CLIENT / "examples" / "follow_button.py"]
    for i, readme in enumerate(READMES):
        f = tmp_path / f"readme_{i}.py"
        f.write_text(follow_button(readme))
        files.append(f)
    out, err, status = mypy.api.run(
        ["--strict", "--no-incremental", "--cache-dir", os.devnull, *map(str, files)] + [str(CLIENT / "netmodel_client")]
    )
    assert status == 0, out + err
