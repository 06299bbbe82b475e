#!/usr/bin/env python3
"""Packs the Node client as `npm pack` does, without npm: usage `clients/node/pack.py OUTDIR`
writes OUTDIR/NAME-VERSION.tgz and prints its path. `npm install THAT.tgz` installs it.

npm's layout: every entry under `package/`; package.json, the README and the licence
always, and what package.json's `files` names (a file, or a folder taken whole). Entries
are sorted, owned by 0:0, mode 0644 (0755 for executables), dated 1985-10-26 as npm
dates them, and gzip carries no time stamp, so the same tree gives the same bytes.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
NPM_DATE = 499162500  # 1985-10-26T08:15:00Z, npm pack's date for every entry
ALWAYS = re.compile(r"(?i)^(package\.json|readme(\..*)?|licen[cs]e(\..*)?)$")


def files_of(root: Path) -> list[Path]:
    manifest = json.loads((root / "package.json").read_text(encoding="utf-8"))
    chosen: set[Path] = {p for p in root.iterdir() if p.is_file() and ALWAYS.match(p.name)}
    for entry in manifest.get("files", []):
        path = (root / entry).resolve()
        if root not in path.parents:
            raise SystemExit(f"pack.py: package.json files entry {entry!r} is outside {root}")
        if path.is_dir():
            chosen |= {p for p in path.rglob("*") if p.is_file() and "node_modules" not in p.parts}
        elif path.is_file():
            chosen.add(path)
        else:
            raise SystemExit(f"pack.py: package.json files entry {entry!r} does not exist")
    return sorted(chosen, key=lambda p: p.relative_to(root).as_posix())


def pack(root: Path, outdir: Path) -> Path:
    manifest = json.loads((root / "package.json").read_text(encoding="utf-8"))
    # npm's file name: a scope's @ dropped and its / made a -.
    name = manifest["name"].lstrip("@").replace("/", "-")
    target = outdir / f"{name}-{manifest['version']}.tgz"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path in files_of(root):
            data = path.read_bytes()
            item = tarfile.TarInfo("package/" + path.relative_to(root).as_posix())
            item.size, item.mtime = len(data), NPM_DATE
            item.mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
            item.uid = item.gid = 0
            tar.addfile(item, io.BytesIO(data))
    target.write_bytes(gzip.compress(raw.getvalue(), compresslevel=9, mtime=0))
    return target


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: clients/node/pack.py OUTDIR")
    print(pack(HERE, Path(sys.argv[1])))
