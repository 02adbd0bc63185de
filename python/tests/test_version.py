"""One version for the npm and Python packages; the wheel is typed."""

from __future__ import annotations

import json
from pathlib import Path

import atropos_edge

PYTHON_DIR = Path(__file__).resolve().parents[1]


def test_the_version_is_package_jsons() -> None:
    package_json = PYTHON_DIR.parent / "package.json"
    assert atropos_edge.__version__ == json.loads(package_json.read_text())["version"]


def test_the_package_is_marked_typed() -> None:
    assert (PYTHON_DIR / "atropos_edge" / "py.typed").is_file()
