"""The Debian package scripts/package builds: its control fields, owners, modes and
layout, and, where the test may install packages (NETMODEL_PACKAGE_INSTALL=1, as root:
.ci/run), `dpkg -i`, `netmodel serve` and `netmodel call stats` from the installed
files, and `dpkg -r` leaving none of them.

The package is the release build's (it links the Swift runtime in; a debug build needs
the toolchain's libraries, which no Debian package provides): NETMODEL_DEB names it
(.ci/run: `scripts/package`). Without it the file is skipped, saying so."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

import rpcio
from rpcio import require_tool, wait_for_socket

pytestmark = pytest.mark.timeout(180)

REPO = Path(__file__).resolve().parents[2]
STEP = 60
DEB = os.environ.get("NETMODEL_DEB")
if not DEB:
    pytest.skip("NETMODEL_DEB is not set: .ci/run builds the release package (scripts/package) and runs this file",
                allow_module_level=True)


def run(*args, check=True, env=None):
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=STEP, env=env)
    if check:
        assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def deb() -> Path:
    path = Path(DEB)
    assert path.is_file(), f"NETMODEL_DEB={DEB} is not a file"
    return path


def field(deb: Path, name: str) -> str:
    return run("dpkg-deb", "--field", deb, name).stdout.strip()


@pytest.fixture(scope="module")
def contents(deb) -> dict[str, tuple[str, str]]:
    """path -> (mode string, owner/group), from `dpkg-deb --contents`."""
    listing = {}
    for line in run("dpkg-deb", "--contents", deb).stdout.splitlines():
        mode, owner, _size, _date, _time, path = line.split(None, 5)
        listing[path.split(" -> ")[0].removeprefix(".")] = (mode, owner)
    return listing


@pytest.fixture(scope="module")
def unpacked(deb, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("unpacked")
    run("dpkg-deb", "--extract", deb, root)
    return root


def test_control_names_the_package_its_version_the_machine_and_debian_libraries(deb, unpacked):
    assert field(deb, "Package") == "netmodel"
    version = run(unpacked / "usr/bin/netmodel", "--version").stdout.strip()
    # `netmodel 0.1.0 (commit …)`: the package's version is the first word after the name.
    assert re.fullmatch(rf"netmodel {re.escape(field(deb, 'Version'))} \(commit ([0-9a-f]+(-dirty)?|unknown)\)", version), version
    assert field(deb, "Architecture") == run("dpkg", "--print-architecture").stdout.strip()
    assert re.fullmatch(r"[^<>]+ <[^<>@\s]+@[^<>\s]+>", field(deb, "Maintainer"))
    depends = {d.split()[0] for d in field(deb, "Depends").split(", ")}
    # What the binary links, each a Debian package's library: no Swift toolchain path.
    assert {"libc6", "libcurl4", "libjansson4"} <= depends, depends
    needed = run("readelf", "-d", unpacked / "usr/bin/netmodel").stdout
    assert "libswift" not in needed and "RUNPATH" not in needed and "RPATH" not in needed, needed
    # libcurl is opened by the REST backend, not linked: Depends names it all the same.
    assert "libcurl" not in needed, needed
    assert "libcurl4 (>= 7.85.0)" in field(deb, "Depends").split(", ")
    for library in re.findall(r"Shared library: \[([^\]]+)\]", needed):
        owner = run("dpkg", "-S", f"*/{library}", check=False).stdout
        assert owner.split(":")[0] and owner.split(":")[0] in depends | {"libc6"}, (library, owner)
    assert int(field(deb, "Installed-Size")) > 1000


def test_every_file_is_roots_with_debians_modes(contents):
    assert contents, "empty package"
    for path, (mode, owner) in contents.items():
        assert owner == "root/root", (path, owner)
        if mode.startswith("d"):
            assert mode == "drwxr-xr-x", (path, mode)
        elif path == "/usr/bin/netmodel" or path.endswith((".sh", "/run.sh")) or path.endswith("pack.py"):
            assert mode == "-rwxr-xr-x", (path, mode)
        else:
            assert mode in ("-rw-r--r--", "-rwxr-xr-x"), (path, mode)
            if not path.startswith("/usr/share/netmodel/clients/"):
                assert mode == "-rw-r--r--", (path, mode)


def test_everything_is_where_debian_looks_for_it(contents, unpacked):
    wheel = "/usr/share/netmodel/netmodel_client-0.1.0-py3-none-any.whl"
    tarball = "/usr/share/netmodel/netmodel-client-0.1.0.tgz"
    for path in ("/usr/bin/netmodel", "/usr/share/man/man1/netmodel.1.gz",
                 "/usr/share/bash-completion/completions/netmodel", "/usr/share/zsh/vendor-completions/_netmodel",
                 "/usr/share/fish/vendor_completions.d/netmodel.fish", "/usr/lib/systemd/user/netmodel.socket",
                 "/usr/lib/systemd/user/netmodel.service", "/usr/share/netmodel/schema/openrpc.json",
                 "/usr/share/netmodel/schema/backend.schema.json", "/usr/share/netmodel/examples/artsy/config.json",
                 "/usr/share/netmodel/clients/nvim/lua/netmodel/init.lua", wheel, tarball,
                 "/usr/share/doc/netmodel/copyright", "/usr/share/doc/netmodel/changelog.gz",
                 "/usr/share/doc/netmodel/README.md", "/usr/share/doc/netmodel/docs/protocol.md"):
        assert path in contents, path
    assert not [p for p in contents if p.endswith("install-manifest") or "/__pycache__/" in p]
    assert not [p for p in contents if p.startswith("/usr/share/systemd/")]
    service = (unpacked / "usr/lib/systemd/user/netmodel.service").read_text()
    assert "ExecStart=/usr/bin/netmodel serve --socket --no-stdio\n" in service
    page = gzip.decompress((unpacked / "usr/share/man/man1/netmodel.1.gz").read_bytes())
    assert page == (REPO / "man/netmodel.1").read_bytes()
    copyright_ = (unpacked / "usr/share/doc/netmodel/copyright").read_text()
    assert copyright_.startswith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")
    assert "\nLicense: Expat\n" in copyright_ and "Permission is hereby granted" in copyright_
    with tarfile.open(unpacked / tarball.lstrip("/")) as tar:
        assert "package/package.json" in tar.getnames()
    # Stripped, as Debian ships programs.
    assert ".symtab" not in run("readelf", "-S", unpacked / "usr/bin/netmodel").stdout


def test_the_man_page_is_found_and_renders_from_the_package(unpacked):
    require_tool("man", "Debian package man-db (scripts/install-deps --test)")
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
    done = run("man", "--warnings", "-l", unpacked / "usr/share/man/man1/netmodel.1.gz", env=env)
    assert done.stderr == "" and "SOCKET ACTIVATION" in re.sub(r".\x08", "", done.stdout)


@pytest.mark.skipif(os.environ.get("NETMODEL_PACKAGE_INSTALL") != "1",
                    reason="installs into the system: NETMODEL_PACKAGE_INSTALL=1 (.ci/run sets it)")
def test_dpkg_installs_it_serves_from_it_and_removes_it_whole(deb, contents, runtime):
    sudo = [] if os.geteuid() == 0 else [shutil.which("sudo") or pytest.fail("not root and no sudo: dpkg -i needs root")]
    already = run("dpkg-query", "-W", "-f=${Status}", "netmodel", check=False)
    assert "installed" not in already.stdout.split(), "netmodel is already installed here; remove it first (dpkg -r netmodel)"
    files = sorted(p for p, (mode, _) in contents.items() if not mode.startswith("d"))
    folders = sorted(p.rstrip("/") or "/" for p, (mode, _) in contents.items() if mode.startswith("d"))
    assert not [p for p in files if os.path.lexists(p)], "files of the package are here before it"
    folders_before = {p for p in folders if os.path.isdir(p)}
    run(*sudo, "dpkg", "-i", deb)
    try:
        listing = [p for p in run("dpkg", "-L", "netmodel").stdout.splitlines() if p not in ("/.", "")]
        # dpkg knows every file and folder of the archive, no more.
        assert sorted(listing) == sorted(files + [p for p in folders if p != "/"])
        assert run("dpkg", "--verify", "netmodel").stdout == ""
        # The installed binary, found on PATH as a user would, on the default socket.
        server = rpcio.ServerProc(["/usr/bin/netmodel", "serve", "--socket", "--no-stdio"], env=runtime.env,
                                  stderr_path=runtime.logs / "packaged.stderr", stdio=False, cwd=runtime.root)
        try:
            wait_for_socket(server, runtime.default_socket)
            done = subprocess.run(["netmodel", "call", "stats"], env=dict(runtime.env, PATH="/usr/bin:/bin"),
                                  capture_output=True, text=True, timeout=STEP)
            assert done.returncode == 0, done.stderr
            stats = json.loads(done.stdout)
            assert isinstance(stats["uptimeMs"], int) and "backend" in stats, stats
        finally:
            server.stop()
        # The REST backend finds the libcurl that Depends brought.
        rest = rpcio.ServerProc(
            ["/usr/bin/netmodel", "serve", "--backend", "rest", "--config",
             "/usr/share/netmodel/examples/artsy/config.json", "--state-dir", str(runtime.root / "state-rest")],
            env=runtime.env, stderr_path=runtime.logs / "packaged-rest.stderr", cwd=runtime.root)
        try:
            assert rest.conn.result("initialize", {})["serverInfo"]["name"] == "netmodel", rest.diagnostics()
            assert "libcurl.so.4" in Path(f"/proc/{rest.pid}/maps").read_text()
        finally:
            rest.stop()
    finally:
        run(*sudo, "dpkg", "-r", "netmodel")
    status = run("dpkg-query", "-W", "-f=${Status}", "netmodel", check=False).stdout
    assert "installed" not in status.split(), status
    assert [p for p in files if os.path.lexists(p)] == []
    # Folders stay only where they were before (shared: /usr/bin, /usr/share/man/man1, …).
    assert sorted(p for p in folders if os.path.lexists(p)) == sorted(folders_before)
