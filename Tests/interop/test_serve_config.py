"""netmodel.json, the token's sources and the command line's small items (issue 27 §1, §4),
through the real binary.

- `$XDG_CONFIG_HOME/netmodel/netmodel.json` is read (seen by `--print-config` and by what
  the server does: `max-entities` evicting, `backend rest` answering from the GitHub demo
  server), the command line overrides it, a missing default file is no error, a missing
  `--config-file` is, and a bad member is refused with its JSON Pointer (exit 2);
- the REST configuration's `auth.tokenFile` (mode 0600, else refused without the token in
  the message) and `auth.tokenCredential` (`$CREDENTIALS_DIRECTORY`, as systemd's
  `LoadCredential=` passes it) give the token the demo server checks;
- `check-config` takes a netmodel.json too; `--version`, `-V`, `-v` name the commit; options
  before the command are the command's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from rpcio import require_tool, wait_for
from test_github import GitHub

pytestmark = pytest.mark.timeout(90)

TOKEN = "ghp_from_a_file_5b1e"
UNAUTHORIZED = -32003
ROOT = Path(__file__).resolve().parents[2]


def run(netmodel_bin, *args, env, cwd=None):
    return subprocess.run([str(netmodel_bin), *map(str, args)], capture_output=True, text=True, timeout=30,
                          env=env, cwd=cwd)


def write_options(runtime, options: dict) -> Path:
    """The default file: $XDG_CONFIG_HOME/netmodel/netmodel.json."""
    folder = runtime.config / "netmodel"
    folder.mkdir(exist_ok=True)
    path = folder / "netmodel.json"
    path.write_text(json.dumps(options))
    return path


def printed(result) -> dict:
    """`--print-config`'s rows: name -> (value, source)."""
    assert result.returncode == 0, result.stderr
    rows = {}
    for line in result.stdout.splitlines():
        if line.startswith("#"):
            continue
        m = re.fullmatch(r"(\S+)\s+(.*?)\s+(default|file|command line)", line)
        assert m, line
        rows[m[1]] = (m[2], m[3])
    return rows


def serve_schema_validator():
    schema = json.loads((ROOT / "schema" / "serve-config.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


# --------------------------------------------------------------------------
# the file, the command line over it, --print-config


def test_the_docs_example_is_valid_and_read(netmodel_bin, runtime, tmp_path):
    readme = (ROOT / "docs" / "operations.md").read_text()
    section = readme.split("### The configuration file: netmodel.json")[1].split("<!-- end issue 27")[0]
    example = json.loads(re.search(r"```json\n(.*?)```", section, re.S)[1])
    serve_schema_validator().validate(example)
    (tmp_path / "github.json").write_text("{}")
    example["config"] = str(tmp_path / "github.json")
    path = write_options(runtime, example)
    rows = printed(run(netmodel_bin, "serve", "--print-config", env=runtime.env))
    assert {name for name, (_, source) in rows.items() if source == "file"} == set(example) - {"$schema"}
    assert path.exists()


def test_the_default_file_is_read_and_the_command_line_overrides_it(netmodel_bin, runtime):
    path = write_options(runtime, {"$schema": "../schema/serve-config.schema.json", "max-entities": 1234,
                                   "log-level": "info", "max-lists": 9})
    result = run(netmodel_bin, "serve", "--max-lists", "17", "--print-config", env=runtime.env)
    rows = printed(result)
    assert f"# config file: {path} (read)" in result.stdout
    assert rows["max-entities"] == ("1234", "file")
    assert rows["log-level"] == ("info", "file")
    assert rows["max-lists"] == ("17", "command line")
    assert rows["backend"] == ("local", "default")
    assert rows["state-dir"] == ("-", "default")
    # The table's every option is there (the schema's are checked against it by a Swift test).
    schema = json.loads((ROOT / "schema" / "serve-config.schema.json").read_text())
    assert set(schema["properties"]) - {"$schema", "description"} <= set(rows)


def test_max_entities_from_the_file_evicts_and_the_command_line_wins(spawn, runtime):
    write_options(runtime, {"max-entities": 4})
    c = spawn().conn
    for n in range(20):
        c.result("getFollowState", {"kind": "artist", "id": f"nobody-{n}"})
    def evicted():
        stats = c.result("stats")
        return stats if stats["entitiesEvicted"] >= 10 else None

    stats = wait_for(evicted, 10)
    assert stats["entities"] <= 8, stats

    c2 = spawn("--max-entities", 1000, "--state-dir", runtime.root / "other").conn
    for n in range(20):
        c2.result("getFollowState", {"kind": "artist", "id": f"nobody-{n}"})
    stats = c2.result("stats")
    assert stats["entitiesEvicted"] == 0 and stats["entities"] == 20, stats


def test_a_missing_default_file_is_no_error_and_a_missing_named_one_is(netmodel_bin, runtime, spawn):
    result = run(netmodel_bin, "serve", "--print-config", env=runtime.env)
    assert "(not there: nothing read, which is no error)" in result.stdout
    assert all(source == "default" for _, source in printed(result).values())
    assert spawn().conn.result("stats")["entities"] == 0

    missing = runtime.root / "nope.json"
    result = run(netmodel_bin, "serve", "--config-file", missing, env=runtime.env)
    assert result.returncode == 2 and f"{missing}: cannot read the serve options' file" in result.stderr


@pytest.mark.parametrize("options, pointer, words", [
    ({"max-entities": "many"}, "/max-entities", "must be a whole number (a JSON integer)"),
    ({"max-entities": 0}, "/max-entities", "--max-entities must be a whole number ≥ 1, not 0"),
    ({"max-entities": 5.5}, "/max-entities", "must be a whole number"),
    ({"backend": "soap"}, "/backend", "--backend must be local or rest, not soap"),
    ({"log-level": 3}, "/log-level", "must be a string"),
    ({"max-entitys": 5}, "/max-entitys", "unknown option (expected one of: log-level,"),
    ({"a/b~c": 1}, "/a~1b~0c", "unknown option"),
    ({"socket": True}, "/socket", "only on the command line"),
    ({"no-stdio": True}, "/no-stdio", "only on the command line"),
    ({"config-file": "x.json"}, "/config-file", "only on the command line"),
    ({"state-dir": "~bob/state"}, "/state-dir", "~user is not expanded"),
    ({"state-dir": "a\nb"}, "/state-dir", "must not contain control characters"),
    ({"--max-lists": 5}, "/--max-lists", "unknown option"),
])
def test_a_bad_member_is_refused_with_its_pointer(netmodel_bin, runtime, options, pointer, words):
    # The schema refuses it too (it documents the file, for people and editors).
    assert not serve_schema_validator().is_valid(options), options
    path = write_options(runtime, options)
    result = run(netmodel_bin, "serve", env=runtime.env)
    assert result.returncode == 2, result
    assert f"netmodel: {path} at {pointer}: {words}" in result.stderr
    # check-config says the same without starting.
    checked = run(netmodel_bin, "check-config", path, env=runtime.env)
    assert checked.returncode == 2 and f"{path} at {pointer}: {words}" in checked.stderr


@pytest.mark.parametrize("text, words", [
    ("[1]", "must be an object of serve options"),
    ("{", "not JSON"),
    ('{"max-lists": 5, "max-lists": 6}', "not JSON: duplicate object key"),
])
def test_a_file_that_is_no_object_is_refused(netmodel_bin, runtime, text, words):
    path = write_options(runtime, {})
    path.write_text(text)
    result = run(netmodel_bin, "serve", env=runtime.env)
    assert result.returncode == 2 and f"{path}: {words}" in result.stderr


def test_paths_are_relative_to_the_file_and_tilde_is_home(netmodel_bin, runtime, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    other = tmp_path / "elsewhere" / "serve.json"
    other.parent.mkdir()
    other.write_text(json.dumps({"backend": "rest", "config": "api/github.json", "state-dir": "~/st"}))
    env = dict(runtime.env, HOME=str(home))
    rows = printed(run(netmodel_bin, "serve", "--config-file", other, "--print-config", env=env, cwd=tmp_path))
    assert rows["config"] == (f"{other.parent}/api/github.json", "file")
    assert rows["state-dir"] == (f"{home}/st", "file")
    # On the command line a path is the shell's: as given.
    rows = printed(run(netmodel_bin, "serve", "--config-file", other, "--config", "x.json", "--print-config", env=env))
    assert rows["config"] == ("x.json", "command line")


# --------------------------------------------------------------------------
# the REST backend from the file, with the token from a file or a credential


@pytest.fixture
def github(demo):
    return demo(GitHub, TOKEN)


def github_setup(runtime, github, auth: dict) -> Path:
    """netmodel.json naming a GitHub configuration (relative to it) with `auth` replaced."""
    folder = runtime.config / "netmodel"
    folder.mkdir(exist_ok=True)
    config = github.config()
    config["auth"] = {"header": "Authorization", "scheme": "Bearer", **auth}
    (folder / "github.json").write_text(json.dumps(config))
    write_options(runtime, {"backend": "rest", "config": "github.json", "state-dir": str(runtime.root / "st")})
    return folder


def follow_octocat(conn):
    return conn.call("follow", {"kind": "user", "id": "octocat", "await": True})


def test_backend_rest_from_the_file_with_a_token_file(spawn, runtime, github):
    folder = github_setup(runtime, github, {"tokenFile": "github-token", "tokenEnv": "GITHUB_TOKEN"})
    token = folder / "github-token"
    token.write_text(TOKEN + "\n")  # what `echo` leaves: the newline is not the token's
    token.chmod(0o600)
    server = spawn("--log-level", "info", env={"GITHUB_TOKEN": "not-this-one"})
    reply = follow_octocat(server.conn)
    assert reply["result"]["confirmed"] is True, reply
    assert github.state()["following"] == ["octocat"]
    assert token_source_line(server.stderr(), f"{token}")


def tokenless_start(netmodel_bin, runtime):
    result = run(netmodel_bin, "serve", env=runtime.env)
    assert result.returncode == 2, result
    assert TOKEN not in result.stderr and "secret" not in result.stderr
    return result.stderr


def test_a_configuration_larger_than_a_mebibyte_is_refused_by_name_not_read_in_part(
    netmodel_bin, runtime, github
):
    """A configuration file is read whole and parsed; one past 1 MiB (a log, a dump
    linked in its place) is refused with its name and why, and the same file at the
    limit is taken: the check counts bytes read, not what the size said."""
    folder = github_setup(runtime, github, {"tokenFile": "github-token"})
    (folder / "github-token").write_text(TOKEN)
    (folder / "github-token").chmod(0o600)
    config = folder / "github.json"
    text = config.read_text()
    config.write_text(text + " " * ((1 << 20) - len(text.encode())))
    assert config.stat().st_size == 1 << 20
    result = run(netmodel_bin, "check-config", str(config), env=runtime.env)
    assert result.returncode == 0, result.stderr
    config.write_text(text + " " * ((1 << 20) + 1 - len(text.encode())))
    err = tokenless_start(netmodel_bin, runtime)
    assert f"the REST configuration {config} is larger than 1 MiB: not a configuration file" in err, err


def test_a_token_file_others_can_read_is_refused(netmodel_bin, runtime, github):
    folder = github_setup(runtime, github, {"tokenFile": "github-token"})
    token = folder / "github-token"
    token.write_text(TOKEN)
    token.chmod(0o644)
    err = tokenless_start(netmodel_bin, runtime)
    assert f"auth.tokenFile {token} can be read or written by others (mode 644): run `chmod 600 {token}`" in err
    token.chmod(0o620)  # group-writable is refused too
    assert "(mode 620)" in tokenless_start(netmodel_bin, runtime)


def test_a_token_file_that_is_a_link_or_holds_control_bytes_is_refused(netmodel_bin, runtime, github, tmp_path):
    folder = github_setup(runtime, github, {"tokenFile": "github-token"})
    target = tmp_path / "real-token"
    target.write_text(TOKEN)
    target.chmod(0o600)
    (folder / "github-token").symlink_to(target)
    assert "is a symbolic link: name the file itself" in tokenless_start(netmodel_bin, runtime)

    (folder / "github-token").unlink()
    (folder / "github-token").write_bytes(b"secret\r\nX-Evil: 1\n")
    (folder / "github-token").chmod(0o600)
    err = tokenless_start(netmodel_bin, runtime)
    assert "must not contain control characters" in err and "Evil" not in err

    (folder / "github-token").write_bytes(b"\n")
    assert "is empty" in tokenless_start(netmodel_bin, runtime)


def test_a_missing_token_file_starts_without_a_token(spawn, runtime, github):
    github_setup(runtime, github, {"tokenFile": "~/no-such-token"})
    server = spawn("--log-level", "info", env={"HOME": str(runtime.root)})
    assert follow_octocat(server.conn)["error"]["code"] == UNAUTHORIZED
    assert f"auth.tokenFile {runtime.root}/no-such-token does not exist" in server.stderr()


def test_a_systemd_credential_gives_the_token_first(spawn, runtime, github, tmp_path):
    github_setup(runtime, github, {"tokenCredential": "github-token", "tokenFile": "missing", "tokenEnv": "GITHUB_TOKEN"})
    credentials = tmp_path / "credentials"
    credentials.mkdir(mode=0o700)
    (credentials / "github-token").write_text(TOKEN)
    (credentials / "github-token").chmod(0o400)  # as systemd leaves it
    server = spawn("--log-level", "info", env={"CREDENTIALS_DIRECTORY": str(credentials), "GITHUB_TOKEN": "wrong"})
    assert follow_octocat(server.conn)["result"]["confirmed"] is True
    assert token_source_line(server.stderr(), "the credential github-token")


def test_without_credentials_directory_the_next_source_is_used(spawn, runtime, github):
    github_setup(runtime, github, {"tokenCredential": "github-token", "tokenEnv": "GITHUB_TOKEN"})
    server = spawn("--log-level", "info", env={"GITHUB_TOKEN": TOKEN})
    assert follow_octocat(server.conn)["result"]["confirmed"] is True
    assert token_source_line(server.stderr(), "$GITHUB_TOKEN")


@pytest.mark.parametrize("auth, pointer", [
    ({"tokenCredential": "../x"}, "/auth/tokenCredential"),
    ({"tokenCredential": ".."}, "/auth/tokenCredential"),
    ({"tokenFile": ""}, "/auth/tokenFile"),
    ({"tokenFile": 7}, "/auth/tokenFile"),
])
def test_a_bad_token_source_is_refused_with_its_pointer(netmodel_bin, runtime, github, auth, pointer):
    folder = github_setup(runtime, github, auth)
    result = run(netmodel_bin, "serve", env=runtime.env)
    assert result.returncode == 2 and f"{folder}/github.json at {pointer}:" in result.stderr, result.stderr


def test_check_config_checks_a_netmodel_json_and_the_configuration_it_names(netmodel_bin, runtime, github):
    folder = github_setup(runtime, github, {"tokenFile": "github-token"})
    (folder / "github-token").write_text(TOKEN)
    (folder / "github-token").chmod(0o600)
    options = folder / "netmodel.json"
    result = run(netmodel_bin, "check-config", options, env=runtime.env)
    assert result.returncode == 0, result.stderr
    assert f"{options}: ok — serve options: 3, backend rest" in result.stdout
    assert f"{folder}/github.json: ok — kinds:" in result.stdout
    assert f"auth token from {folder}/github-token" in result.stdout

    (folder / "github-token").chmod(0o640)
    result = run(netmodel_bin, "check-config", options, env=runtime.env)
    assert result.returncode == 2 and "(mode 640)" in result.stderr and TOKEN not in result.stderr + result.stdout

    # A REST configuration without environments and kinds is still checked as one.
    broken = folder / "broken.json"
    broken.write_text(json.dumps({"auth": {"header": "Authorization"}}))
    result = run(netmodel_bin, "check-config", broken, env=runtime.env)
    assert result.returncode == 2 and f"{broken}: \"environments\" is required" in result.stderr, result.stderr

    config = json.loads((folder / "github.json").read_text())
    config["kinds"]["user"]["follow"]["method"] = "FETCH"
    (folder / "github.json").write_text(json.dumps(config))
    result = run(netmodel_bin, "check-config", options, env=runtime.env)
    assert result.returncode == 2 and f"{folder}/github.json at /kinds/user/follow/method:" in result.stderr


def test_the_docs_drop_in_verifies(netmodel_bin, tmp_path):
    """The `LoadCredential=` lines of docs/operations.md, as a drop-in of the installed unit: systemd
    knows the key and takes the value (an unknown key or a bad value is warned about)."""
    analyze = require_tool("systemd-analyze", "Debian package systemd (scripts/install-deps --test)")
    readme = (ROOT / "docs" / "operations.md").read_text()
    section = readme.split("### The user service on a REST API")[1].split("<!-- end issue 27")[0]
    drop_in = re.search(r"```ini\n(.*?)```", section, re.S)[1]
    assert "LoadCredential=github-token:%h/.config/netmodel/github-token" in drop_in
    units = tmp_path / "units"
    (units / "netmodel.service.d").mkdir(parents=True)
    for name in ("netmodel.service", "netmodel.socket"):
        text = (ROOT / "contrib" / "systemd" / name).read_text().replace("@BINDIR@", str(netmodel_bin.parent))
        (units / name).write_text(text)
    runtime_dir = tmp_path / "rt"
    runtime_dir.mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime_dir))

    def verify(text):
        (units / "netmodel.service.d" / "override.conf").write_text(text)
        return subprocess.run([analyze, "verify", "--user", "--man=no", units / "netmodel.socket",
                               units / "netmodel.service"], capture_output=True, text=True, env=env, timeout=60)

    done = verify(drop_in)
    assert done.returncode == 0 and "netmodel" not in done.stderr, done.stderr
    # The check sees the drop-in: a misspelt key is named.
    assert "Unknown key" in verify(drop_in.replace("LoadCredential=", "LoadCredentials=")).stderr


# --------------------------------------------------------------------------
# the command line: --version, options before the command


def test_version_names_the_commit(netmodel_bin, runtime):
    outputs = {flag: run(netmodel_bin, flag, env=runtime.env) for flag in ("--version", "-V", "-v", "version")}
    for flag, result in outputs.items():
        assert result.returncode == 0, (flag, result)
    texts = {result.stdout for result in outputs.values()}
    assert len(texts) == 1, texts
    m = re.fullmatch(r"netmodel (\d+\.\d+\.\d+) \(commit (\S+)\)\n", texts.pop())
    assert m, outputs["--version"].stdout
    commit = m[2]
    if commit != "unknown":
        # `git describe --always --dirty` of the tree built: a commit of this repository.
        name = re.sub(r"-dirty$", "", commit)
        name = re.sub(r"^.*-g([0-9a-f]+)$", r"\1", name)  # tag-N-gHASH
        known = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{name}^{{commit}}"], capture_output=True)
        assert known.returncode == 0, commit


def test_the_build_script_says_unknown_outside_a_repository(tmp_path):
    out = tmp_path / "out"
    subprocess.run(["sh", str(ROOT / "scripts" / "build-commit"), str(tmp_path), str(out)], check=True, timeout=30)
    assert 'let buildCommit = "unknown"' in (out / "BuildCommit.swift").read_text()
    subprocess.run(["sh", str(ROOT / "scripts" / "build-commit"), str(ROOT), str(out)], check=True, timeout=30)
    described = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=12"],
                               capture_output=True, text=True, check=True).stdout.strip()
    assert f'let buildCommit = "{described}"' in (out / "BuildCommit.swift").read_text()


def test_options_before_the_command_are_the_commands(netmodel_bin, runtime):
    rows = printed(run(netmodel_bin, "--log-level", "debug", "--max-lists=3", "serve", "--print-config",
                       env=runtime.env))
    assert rows["log-level"] == ("debug", "command line") and rows["max-lists"] == ("3", "command line")
    # Without a command word they are serve's, as before.
    assert printed(run(netmodel_bin, "--max-lists", "5", "--print-config", env=runtime.env))["max-lists"][0] == "5"
    # --version and --help first still win, whatever follows.
    assert run(netmodel_bin, "--version", "serve", env=runtime.env).stdout.startswith("netmodel ")
    assert "Serve options:" in run(netmodel_bin, "--help", "call", env=runtime.env).stdout
    # A client command takes what it knows, wherever it stands, and names what it does not.
    result = run(netmodel_bin, "--log-level", "debug", "call", "stats", env=runtime.env)
    assert result.returncode == 2 and "call: unknown option --log-level" in result.stderr, result.stderr


@pytest.mark.parametrize(
    "vector", json.loads((ROOT / "clients" / "conformance" / "vectors.json").read_text())["default_socket"],
    ids=lambda v: repr(v["env"]))
def test_the_default_socket_is_the_one_every_client_computes(netmodel_bin, runtime, vector):
    """`serve --socket`, `call` and `watch` find the socket where the clients do, from
    the shared vectors: `$XDG_RUNTIME_DIR` only when it is an absolute path."""
    env = {k: v for k, v in runtime.env.items() if k != "XDG_RUNTIME_DIR"} | vector["env"]
    rows = printed(run(netmodel_bin, "serve", "--socket", "--print-config", env=env))
    assert rows["socket"][0] == vector["path"].replace("{uid}", str(os.getuid())), rows["socket"]


def token_source_line(stderr: str, source: str) -> bool:
    """Whether the log says the start's token came from `source` (Serve's token.source event)."""
    return any("the auth token was read at start" in line and source in line for line in stderr.splitlines())


def test_a_configuration_others_can_write_is_refused_and_one_its_group_can_is_warned_of(
    netmodel_bin, runtime, github, spawn
):
    """Whoever can change the REST configuration or netmodel.json can have the token sent
    to another host, or name another file as the token: as ssh does for its own, neither
    may be writable by others; a group that can write it is warned of (umask 002)."""
    folder = github_setup(runtime, github, {"tokenFile": "github-token"})
    token = folder / "github-token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    config, options = folder / "github.json", folder / "netmodel.json"
    for path, role in ((config, "the REST configuration"), (options, "the serve options' file")):
        path.chmod(0o646)
        err = tokenless_start(netmodel_bin, runtime)
        assert f"{role} {path} can be written by anyone (mode 646)" in err and f"chmod o-w {path}" in err, err
        path.chmod(0o644)
    config.chmod(0o664)
    server = spawn("--log-level", "warn")
    assert follow_octocat(server.conn)["result"]["confirmed"] is True
    assert f"the REST configuration {config} can be written by its group (mode 664)" in server.stderr()
