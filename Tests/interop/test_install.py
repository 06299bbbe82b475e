"""scripts/install into a temporary prefix: the files, the man page (rendered by
`man -l`), the completions (loaded by bash, zsh and fish), the user units, and
`--uninstall` leaving the prefix as it was, and removing only its own: files of the prefix
it is given, listed in the manifest (relative paths) and unchanged since the install.
The clients install from their wheel and tarball without writing into the prefix.
The release build is the README's command; here `--binary` installs the debug binary the
other tests run."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from rpcio import require_tool

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]
STEP = 60
INSTALL = REPO / "scripts" / "install"
SHARE = "share/netmodel"
WHEEL = "netmodel_client-0.1.0-py3-none-any.whl"
TARBALL = "netmodel-client-0.1.0.tgz"
SCHEMA = json.loads((REPO / "schema" / "openrpc.json").read_text())
METHODS = sorted(m["name"] for m in SCHEMA["methods"])
# What a topic starts with, as `watch` takes it: entity, entity:KIND…, list:NAME.
TOPICS = sorted({re.sub(r"[A-Z/]+$", "", f["shorthand"]) for f in SCHEMA["x-netmodel-protocol"]["topicShorthands"]["forms"]})


def run(*args, env=None, check=True, cwd=None):
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=STEP, env=env, cwd=cwd)
    if check:
        assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def tree(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.is_dir(), p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


def help_text(netmodel_bin) -> str:
    return run(netmodel_bin, "--help").stdout


def help_commands(netmodel_bin) -> list[str]:
    return sorted(set(re.findall(r"^\s+netmodel ([a-z][a-z-]*)", help_text(netmodel_bin), re.M)))


def help_serve_options(netmodel_bin) -> list[str]:
    section = help_text(netmodel_bin).split("Serve options:")[1]
    return sorted(set(re.findall(r"^\s{2,6}(--[a-z][a-z-]*)", section, re.M)))


@pytest.fixture
def installed(netmodel_bin, tmp_path):
    prefix = tmp_path / "prefix"
    # Something of the user's already there: the install must not take it away.
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "other-tool").write_text("#!/bin/sh\n")
    before = tree(prefix)
    done = run(REPO / "scripts" / "install", "--prefix", prefix, "--binary", netmodel_bin)
    return prefix, before, done.stdout


def test_install_puts_everything_where_unix_looks_and_says_so(installed, netmodel_bin):
    prefix, _, said = installed
    for path in ("bin/netmodel", "share/man/man1/netmodel.1", "share/bash-completion/completions/netmodel",
                 "share/zsh/site-functions/_netmodel", "share/fish/vendor_completions.d/netmodel.fish",
                 "share/systemd/user/netmodel.socket", "share/systemd/user/netmodel.service",
                 "share/netmodel/schema/openrpc.json", "share/netmodel/schema/serve-config.schema.json",
                 "share/netmodel/clients/python/pyproject.toml",
                 "share/netmodel/clients/node/package.json", "share/netmodel/clients/nvim/lua/netmodel/init.lua",
                 "share/netmodel/examples/artsy/config.json", f"{SHARE}/{WHEEL}", f"{SHARE}/{TARBALL}",
                 "share/doc/netmodel/README.md", "share/doc/netmodel/docs/operations.md"):
        assert (prefix / path).is_file(), path
    # The README's links into docs/ resolve where it is installed.
    readme = (prefix / "share/doc/netmodel/README.md").read_text()
    for target in set(re.findall(r"\]\((docs/[^)#]+)", readme)):
        assert (prefix / "share/doc/netmodel" / target).is_file(), target
    assert os.access(prefix / "bin" / "netmodel", os.X_OK)
    assert run(prefix / "bin" / "netmodel", "--version").stdout.startswith("netmodel ")
    service = (prefix / "share/systemd/user/netmodel.service").read_text()
    assert f"ExecStart={prefix}/bin/netmodel serve --socket --no-stdio\n" in service
    for words in (f"pip install {prefix}/{SHARE}/{WHEEL}", f"npm install {prefix}/{SHARE}/{TARBALL}", "runtimepath",
                  "systemctl --user enable --now netmodel.socket", "~/.config/netmodel/netmodel.json", "--uninstall"):
        assert words in said, said


def test_the_installed_units_verify(installed):
    prefix, _, _ = installed
    analyze = require_tool("systemd-analyze", "Debian package systemd (scripts/install-deps --test)")
    units = prefix / "share/systemd/user"
    env = dict(os.environ, XDG_RUNTIME_DIR=str(prefix))
    done = run(analyze, "verify", "--user", "--man=no", units / "netmodel.socket", units / "netmodel.service",
               env=env, check=False)
    assert done.returncode == 0 and "netmodel" not in done.stderr, done.stderr


def test_the_man_page_renders_and_names_every_command_option_and_method(installed, netmodel_bin):
    prefix, _, _ = installed
    page = prefix / "share/man/man1/netmodel.1"
    require_tool("man", "Debian package man-db (scripts/install-deps --test)")
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="0")
    done = run("man", "--warnings", "-l", page, env=env)
    assert done.stderr == "", done.stderr
    # Bold and underline come as overstrikes (X\bX, _\bX) when stdout is no terminal.
    text = re.sub(r".\x08", "", done.stdout)
    # Found by name where the prefix's man folder is searched.
    assert run("man", "-M", prefix / "share/man", "-w", "netmodel", env=env).stdout.strip() == str(page)

    # Rendered text joins hyphenated line ends with U+2010; undo that to search it.
    flat = re.sub(r"‐\n\s+", "", text)
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "SERVE OPTIONS", "PROTOCOL",
                    "SOCKET ACTIVATION", "ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES"):
        assert re.search(rf"^{section}$", text, re.M), section
    for command in help_commands(netmodel_bin):
        assert re.search(rf"^\s+{re.escape(command)}\b", flat, re.M), f"command {command} is not in the man page"
    options_section = flat.split("\nSERVE OPTIONS\n")[1].split("\nPROTOCOL\n")[0]
    page_options = sorted(set(re.findall(r"^\s{7}(--[a-z][a-z-]*)", options_section, re.M)))
    assert page_options == help_serve_options(netmodel_bin)
    protocol = flat.split("\nPROTOCOL\n")[1].split("\nSOCKET ACTIVATION\n")[0]
    assert sorted(set(protocol.split()) & set(METHODS)) == METHODS


def complete_bash(prefix: Path, line: str) -> list[str]:
    """What bash offers for `line` (the cursor at its end), with the installed file loaded."""
    script = (
        'source "$1"; read -ra COMP_WORDS <<<"$2"; [[ $2 == *" " ]] && COMP_WORDS+=("");'
        ' COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE=$2; COMP_POINT=${#2};'
        ' $(complete -p netmodel | sed "s/.*-F \\([^ ]*\\) .*/\\1/"); printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = run("bash", "-c", script, "bash", prefix / "share/bash-completion/completions/netmodel", line)
    return sorted(w for w in done.stdout.split("\n") if w)


def test_bash_completes_commands_serve_options_methods_and_topics(installed, netmodel_bin):
    prefix, _, _ = installed
    assert complete_bash(prefix, "netmodel ") == sorted(help_commands(netmodel_bin) + ["--help", "--version"])
    assert complete_bash(prefix, "netmodel call ") == METHODS
    assert complete_bash(prefix, "netmodel call getF") == ["getFollowState"]
    assert complete_bash(prefix, "netmodel call --timeout=10 ") == METHODS
    assert complete_bash(prefix, "netmodel call follow ") == []
    assert complete_bash(prefix, "netmodel call --") == ["--help", "--socket=", "--timeout="]
    assert complete_bash(prefix, "netmodel call follow --") == []
    assert complete_bash(prefix, "netmodel watch ") == TOPICS
    serve = [w for w in complete_bash(prefix, "netmodel serve --") if w.startswith("--")]
    assert serve == help_serve_options(netmodel_bin)
    assert complete_bash(prefix, "netmodel serve --backend ") == ["local", "rest"]
    assert complete_bash(prefix, "netmodel --log-level ") == ["debug", "error", "info", "off", "warn"]


# Drives an interactive zsh on a pseudo-terminal (zpty): types the line and a key bound
# to completion, and has compadd write down every candidate. $1: the folder of _netmodel,
# $2: the line, $3: the file of candidates; $3.done appears when the completion ended.
ZSH_DRIVER = r"""
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1=''; fpath=(${(q)1} \$fpath); autoload -Uz compinit; compinit -u -D; hits=${(q)3}"
zpty -w z 'compadd () { local -a h; builtin compadd -O h "$@"; print -rl -- $h >>$hits; builtin compadd "$@" }'
zpty -w z 'complete-and-say () { zle complete-word; : >$hits.done }; zle -N complete-and-say; bindkey "^T" complete-and-say'
zpty -w -n z "netmodel $2"$'\x14'
integer deadline=$(( SECONDS + 30 ))
while (( SECONDS < deadline )) && [[ ! -e $3.done ]]; do
  zpty -rt z chunk
  sleep 0.05
done
zpty -d z
[[ -e $3.done ]] || { print -u2 -r -- "zsh did not complete \"netmodel $2\""; exit 1 }
"""


def complete_zsh(zsh: str, prefix: Path, line: str, scratch: Path) -> list[str]:
    driver = scratch / "complete.zsh"
    driver.write_text(ZSH_DRIVER)
    hits = scratch / "hits"
    for leftover in (hits, scratch / "hits.done"):
        leftover.unlink(missing_ok=True)
    run(zsh, "-f", driver, prefix / "share/zsh/site-functions", line, hits)
    return sorted({w for w in hits.read_text().split("\n") if w}) if hits.exists() else []


def test_zsh_and_fish_complete_the_same(installed, netmodel_bin, tmp_path):
    prefix, _, _ = installed
    zsh = require_tool("zsh", "Debian package zsh (scripts/install-deps --test)")
    run(zsh, "-n", prefix / "share/zsh/site-functions/_netmodel")
    assert complete_zsh(zsh, prefix, "", tmp_path) == help_commands(netmodel_bin)
    assert complete_zsh(zsh, prefix, "call ", tmp_path) == METHODS
    assert complete_zsh(zsh, prefix, "call --timeout=10 getF", tmp_path) == ["getFollowState"]
    assert complete_zsh(zsh, prefix, "call follow ", tmp_path) == []
    assert complete_zsh(zsh, prefix, "watch ", tmp_path) == TOPICS
    assert complete_zsh(zsh, prefix, "serve --", tmp_path) == help_serve_options(netmodel_bin)
    assert complete_zsh(zsh, prefix, "serve --when-exhausted ", tmp_path) == ["queue", "rollback"]
    fish = require_tool("fish", "Debian package fish (scripts/install-deps --test)")
    source = prefix / "share/fish/vendor_completions.d/netmodel.fish"

    def complete_fish(line: str) -> list[str]:
        out = run(fish, "--no-config", "-c", f"source {source}; complete -C '{line}'").stdout
        return sorted(w.split("\t")[0] for w in out.split("\n") if w)

    assert complete_fish("netmodel call ") == METHODS
    assert complete_fish("netmodel watch ") == TOPICS
    assert complete_fish("netmodel call follow ") == []
    # Options go before the method, where `call` reads them.
    assert complete_fish("netmodel call --") == ["--socket", "--timeout"]
    assert complete_fish("netmodel call follow --") == []
    assert [w for w in complete_fish("netmodel serve --") if w.startswith("--") and w != "--help"] == \
        help_serve_options(netmodel_bin)


def test_uninstall_leaves_the_prefix_as_it_was(installed, netmodel_bin):
    prefix, before, _ = installed
    # Installing again over an install replaces it; its manifest is still exact.
    run(REPO / "scripts" / "install", "--prefix", prefix, "--binary", netmodel_bin)
    run(REPO / "scripts" / "install", "--uninstall", "--prefix", prefix)
    assert tree(prefix) == before
    again = run(REPO / "scripts" / "install", "--uninstall", "--prefix", prefix, check=False)
    assert again.returncode == 1 and "nothing to uninstall" in again.stderr


def test_uninstall_keeps_what_the_user_added_since(installed):
    prefix, _, _ = installed
    mine = prefix / "share/bash-completion/completions/mytool"
    mine.write_text("complete -W x mytool\n")
    run(REPO / "scripts" / "install", "--uninstall", "--prefix", prefix)
    assert mine.read_text() == "complete -W x mytool\n"
    assert not (prefix / "bin/netmodel").exists() and not (prefix / "share/netmodel").exists()


def manifest_lines(prefix: Path) -> list[str]:
    return (prefix / SHARE / "install-manifest").read_text().splitlines()


def test_the_manifest_holds_paths_relative_to_the_prefix_with_size_and_hash(installed):
    prefix, _, _ = installed
    header, *lines = manifest_lines(prefix)
    assert header.startswith("# netmodel install-manifest 2:")
    files = [line.split(" ", 3) for line in lines if line.startswith("file ")]
    assert len(files) > 50 and all(line.startswith(("file ", "dir ")) for line in lines)
    for _, size, digest, rel in files:
        assert not rel.startswith("/") and ".." not in rel.split("/"), rel
        data = (prefix / rel).read_bytes()
        assert (int(size), digest) == (len(data), hashlib.sha256(data).hexdigest()), rel
    assert str(prefix) not in "\n".join(lines)


def test_uninstall_of_a_copy_removes_the_copys_files_only(installed, tmp_path):
    prefix, before, _ = installed
    original = tree(prefix)
    copy = tmp_path / "copy"
    shutil.copytree(prefix, copy, symlinks=True)
    run(INSTALL, "--uninstall", "--prefix", copy)
    assert tree(copy) == before
    assert tree(prefix) == original


def test_a_file_changed_after_the_install_is_left_and_named(installed):
    prefix, _, _ = installed
    changed = prefix / SHARE / "schema/openrpc.json"
    changed.write_text(changed.read_text() + "\n")
    done = run(INSTALL, "--uninstall", "--prefix", prefix)
    assert changed.exists() and not (prefix / "bin/netmodel").exists()
    assert f"{SHARE}/schema/openrpc.json (changed since the install)" in done.stderr
    # Its folders stay for it, named once: by the file, not each folder above it.
    assert "holds files" not in done.stderr, done.stderr
    assert sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*") if p.is_file()) == \
        ["bin/other-tool", f"{SHARE}/schema/openrpc.json"]


def test_manifest_lines_outside_the_prefix_are_refused(installed, tmp_path):
    prefix, _, _ = installed
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = {}
    for name in ("dotdot", "absolute", "through-link"):
        victims[name] = outside / name
        victims[name].write_text(f"not netmodel's {name}\n")

    def line(path: Path, rel: str) -> str:
        data = path.read_bytes()
        return f"file {len(data)} {hashlib.sha256(data).hexdigest()} {rel}"

    # A link inside the prefix to a folder outside: the path is relative, its folder is not inside.
    (prefix / "share/away").symlink_to(outside)
    manifest = prefix / SHARE / "install-manifest"
    added = [line(victims["dotdot"], "../outside/dotdot"), line(victims["absolute"], str(victims["absolute"])),
             line(victims["through-link"], "share/away/through-link"), "dir ../outside", "gibberish",
             "file 1 ab /tmp/\x1b[2Jescape"]
    manifest.write_text(manifest.read_text() + "\n".join(added) + "\n")
    done = run(INSTALL, "--uninstall", "--prefix", prefix, check=False)
    assert done.returncode == 1, done
    for victim in victims.values():
        assert victim.exists(), victim
    assert outside.is_dir()
    for rel in ("../outside/dotdot", str(victims["absolute"]), "share/away/through-link", "../outside"):
        assert f"{rel} (not a path inside {prefix})" in done.stderr, done.stderr
    assert "manifest line: gibberish" in done.stderr
    # A terminal escape from the manifest reaches stderr escaped.
    assert "\x1b" not in done.stderr and "\\E[2Jescape" in done.stderr, done.stderr
    # What the manifest rightly lists is gone all the same.
    assert not (prefix / "bin/netmodel").exists() and not (prefix / SHARE).exists()


def test_a_manifest_of_absolute_paths_is_refused_whole(installed, tmp_path):
    prefix, _, _ = installed
    victim = tmp_path / "elsewhere-netmodel"
    victim.write_text("#!/bin/sh\n")
    manifest = prefix / SHARE / "install-manifest"
    manifest.write_text(f"file {victim}\nfile {prefix}/bin/netmodel\n")
    done = run(INSTALL, "--uninstall", "--prefix", prefix, check=False)
    assert done.returncode == 1 and "not a manifest this scripts/install writes" in done.stderr, done.stderr
    assert victim.exists() and (prefix / "bin/netmodel").exists() and manifest.exists()


def test_an_install_over_an_older_install_takes_its_folders_over(installed, netmodel_bin):
    prefix, before, _ = installed
    # What an older scripts/install wrote: absolute paths, no hashes, every folder it made.
    manifest = prefix / SHARE / "install-manifest"
    old = []
    for line in manifest_lines(prefix)[1:]:
        kind, *rest = line.split(" ")
        rel = rest[-1] if kind == "dir" else line.split(" ", 3)[3]
        old.append(f"{kind} {prefix if rel == '.' else prefix / rel}")
    manifest.write_text("\n".join(old) + "\n")
    run(INSTALL, "--prefix", prefix, "--binary", netmodel_bin)
    assert manifest_lines(prefix)[0].startswith("# netmodel install-manifest 2:")
    run(INSTALL, "--uninstall", "--prefix", prefix)
    assert tree(prefix) == before


def test_help_names_every_option_the_script_takes():
    source = INSTALL.read_text()
    taken = sorted(set(re.findall(r"^\s+(--[a-z-]+)\)", source, re.M)))
    assert taken == ["--binary", "--destdir", "--prefix", "--uninstall"], taken
    said = run(INSTALL, "--help").stdout
    for option in taken:
        assert re.search(rf"^  {option}\b", said, re.M), option
    assert re.search(r"^  -h, --help\b", said, re.M)


def test_the_python_client_installs_from_its_wheel_without_writing_into_the_prefix(installed, tmp_path):
    prefix, _, _ = installed
    snapshot = tree(prefix)
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check"]
    run(*pip, "install", "--no-index", prefix / SHARE / WHEEL)
    code = ("import pathlib, netmodel_client, netmodel_client.results; p = pathlib.Path(netmodel_client.__file__);"
            " print(p.parent.parent.name, (p.parent / 'py.typed').exists())")
    assert run(python, "-c", code).stdout.split() == ["site-packages", "True"]
    run(*pip, "uninstall", "-y", "netmodel-client")
    site = next(venv.glob("lib/python*/site-packages"))
    assert sorted(p.name for p in site.iterdir() if "netmodel" in p.name) == []
    assert tree(prefix) == snapshot


def test_the_wheel_builds_offline_from_the_client_folder_alone(installed, tmp_path):
    prefix, _, _ = installed
    source = tmp_path / "python"
    shutil.copytree(REPO / "clients/python", source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    out = tmp_path / "wheels"
    # Build isolation on and no index: the backend is in the tree and needs nothing fetched.
    run(sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-index", "--no-deps", "-w", out, source)
    assert (out / WHEEL).read_bytes() == (prefix / SHARE / WHEEL).read_bytes()
    assert not (source / "build").exists() and not list(source.glob("*.egg-info"))


def test_the_node_client_installs_from_its_tarball_without_writing_into_the_prefix(installed, tmp_path):
    prefix, _, _ = installed
    snapshot = tree(prefix)
    tarball = prefix / SHARE / TARBALL
    with tarfile.open(tarball) as tar:
        names = sorted(tar.getnames())
        assert all(m.uid == 0 and m.gid == 0 and m.isfile() for m in tar.getmembers())
    assert all(n.startswith("package/") for n in names)
    assert {"package/package.json", "package/index.js", "package/index.d.ts", "package/lib/client.js"} <= set(names)
    assert not [n for n in names if n.startswith("package/test/")]
    node = require_tool("node", "Debian package nodejs (scripts/install-deps --test)")
    project = tmp_path / "host"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "host", "version": "1.0.0", "type": "module"}))
    npm = shutil.which("npm")
    if npm:
        # npm's own list of what `npm pack` would put in: the same files.
        packed = json.loads(run(npm, "pack", "--dry-run", "--json", REPO / "clients/node").stdout)[0]
        assert sorted("package/" + f["path"] for f in packed["files"]) == names
        assert packed["filename"] == TARBALL
        run(npm, "install", "--offline", "--no-audit", "--no-fund", tarball, cwd=project,
            env=dict(os.environ, npm_config_cache=str(tmp_path / "npm-cache")))
    else:
        modules = project / "node_modules"
        modules.mkdir()
        with tarfile.open(tarball) as tar:
            tar.extractall(modules, filter="data")
        (modules / "package").rename(modules / "netmodel-client")
    installed_copy = project / "node_modules" / "netmodel-client"
    assert installed_copy.is_dir() and not installed_copy.is_symlink()
    code = "import('netmodel-client').then(m => console.log(typeof m.NetmodelClient, typeof m.StateStore))"
    assert run(node, "-e", code, cwd=project).stdout.split() == ["function", "function"]
    assert tree(prefix) == snapshot
