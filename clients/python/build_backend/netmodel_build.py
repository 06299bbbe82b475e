"""The client's build backend (PEP 517, PEP 660), in the tree so that a wheel builds
offline: ``pip wheel clients/python`` with build isolation installs nothing, since
``build-system.requires`` is empty. Standard library only.

The wheel holds ``netmodel_client/*.py`` and ``py.typed`` (PEP 561), and the metadata
``pyproject.toml``'s ``[project]`` states (core metadata 2.1). Entries are sorted and
dated 1980-01-01 (or ``SOURCE_DATE_EPOCH``), so the same tree gives the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "netmodel_client"
TAG = "py3-none-any"


def _project() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project


def _dist_name(project: dict[str, Any]) -> str:
    # Wheel file names: the normalized name with runs of -_. as one underscore.
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _epoch() -> int:
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)


def _package_files() -> list[Path]:
    folder = ROOT / PACKAGE
    files = sorted(p for p in folder.iterdir() if p.is_file() and (p.suffix == ".py" or p.name == "py.typed"))
    if not (folder / "py.typed").is_file():
        raise RuntimeError(f"{folder}/py.typed is missing: the wheel would not be typed")
    return files


def _metadata(project: dict[str, Any]) -> bytes:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
    ]
    if project.get("keywords"):
        lines.append("Keywords: " + ",".join(project["keywords"]))
    if "license" in project:
        lines.append(f"License: {project['license']['text']}")
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    lines.append(f"Requires-Python: {project['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in requirements]
    readme = project.get("readme")
    body = ""
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        body = (ROOT / readme).read_text(encoding="utf-8")
    return ("\n".join(lines) + "\n\n" + body).encode("utf-8")


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(directory: str, contents: list[tuple[str, bytes]]) -> str:
    project = _project()
    dist = f"{_dist_name(project)}-{project['version']}"
    info = f"{dist}.dist-info"
    wheel_meta = f"Wheel-Version: 1.0\nGenerator: netmodel_build\nRoot-Is-Purelib: true\nTag: {TAG}\n"
    entries = sorted(contents) + [
        (f"{info}/METADATA", _metadata(project)),
        (f"{info}/WHEEL", wheel_meta.encode()),
        (f"{info}/top_level.txt", f"{PACKAGE}\n".encode()),
    ]
    record = "".join(_record_line(n, d) + "\n" for n, d in entries) + f"{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode()))
    name = f"{dist}-{TAG}.whl"
    stamp = time.gmtime(_epoch())[:6]
    with zipfile.ZipFile(Path(directory) / name, "w", zipfile.ZIP_DEFLATED) as wheel:
        for entry, data in entries:
            item = zipfile.ZipInfo(entry, date_time=stamp)
            item.external_attr = 0o644 << 16
            item.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(item, data)
    return name


def build_wheel(wheel_directory: str, config_settings: Any = None, metadata_directory: Any = None) -> str:
    return _write_wheel(wheel_directory, [(f"{PACKAGE}/{p.name}", p.read_bytes()) for p in _package_files()])


def build_editable(wheel_directory: str, config_settings: Any = None, metadata_directory: Any = None) -> str:
    # PEP 660: a .pth file that puts this folder on sys.path.
    return _write_wheel(wheel_directory, [(f"_{PACKAGE}_editable.pth", f"{ROOT}\n".encode())])


def build_sdist(sdist_directory: str, config_settings: Any = None) -> str:
    project = _project()
    dist = f"{_dist_name(project)}-{project['version']}"
    files = [ROOT / "pyproject.toml", ROOT / "README.md", Path(__file__).resolve(), *_package_files()]
    name = f"{dist}.tar.gz"
    with tarfile.open(Path(sdist_directory) / name, "w:gz", format=tarfile.PAX_FORMAT) as sdist:

        def add(arcname: str, data: bytes) -> None:
            item = tarfile.TarInfo(f"{dist}/{arcname}")
            item.size, item.mtime, item.mode = len(data), _epoch(), 0o644
            sdist.addfile(item, io.BytesIO(data))

        for path in files:
            add(path.relative_to(ROOT).as_posix(), path.read_bytes())
        add("PKG-INFO", _metadata(project))
    return name
