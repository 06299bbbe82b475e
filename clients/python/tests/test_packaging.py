"""What the package says about itself agrees: the oldest Python it supports is the one
``requires-python`` names, the lowest version classifier, the version mypy checks for,
and the one the README states; the running interpreter is one of them; the wheel the in-tree
backend builds holds ``py.typed`` and every module, the generated ones included."""

import re
import sys
import tomllib
import zipfile
from pathlib import Path

import netmodel_client

CLIENT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((CLIENT / "pyproject.toml").read_text())


def test_the_oldest_python_is_stated_once():
    project = PROJECT["project"]
    oldest = re.fullmatch(r">=(\d+)\.(\d+)", project["requires-python"])
    assert oldest, project["requires-python"]
    major, minor = int(oldest[1]), int(oldest[2])
    versions = [
        tuple(map(int, c.rsplit(" ", 1)[1].split(".")))
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: \d+\.\d+", c)
    ]
    assert min(versions) == (major, minor), versions
    assert PROJECT["tool"]["mypy"]["python_version"] == f"{major}.{minor}"
    assert PROJECT["tool"]["mypy"]["strict"] is True
    assert f"Python {major}.{minor} and later" in (CLIENT / "README.md").read_text()
    assert sys.version_info[:2] >= (major, minor)


def test_the_package_is_typed(tmp_path):
    assert (Path(netmodel_client.__file__).parent / "py.typed").exists()
    assert PROJECT["project"]["version"] == netmodel_client.__version__
    sys.path.insert(0, str(CLIENT / "build_backend"))
    try:
        import netmodel_build
    finally:
        sys.path.pop(0)
    name = netmodel_build.build_wheel(str(tmp_path))
    assert name == f"netmodel_client-{netmodel_client.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(tmp_path / name) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"netmodel_client-{netmodel_client.__version__}.dist-info/METADATA").decode()
    modules = {f"netmodel_client/{p.name}" for p in (CLIENT / "netmodel_client").glob("*.py")}
    assert {"netmodel_client/py.typed", "netmodel_client/results.py", "netmodel_client/_protocol.py"} <= names
    assert modules <= names
    assert f"Requires-Python: {PROJECT['project']['requires-python']}\n" in metadata
