"""What the docs and reports tell a new user to install from, or to read, exists: no
placeholder install line, no page of a package index kernelcfg is not on."""

from __future__ import annotations

import re
from pathlib import Path

from .cli_helpers import run

ROOT = Path(__file__).resolve().parent.parent


def test_no_install_line_is_a_placeholder() -> None:
    for doc in (ROOT / "README.md", ROOT / "docs" / "index.md"):
        for line in doc.read_text().splitlines():
            if re.match(r"\s*(pipx|pip) install", line):
                assert "<" not in line, (doc.name, line)


def test_sarif_points_at_no_package_index_page() -> None:
    done = run("resolve", "--device", "h100", "--moe-backend", "aiter", "--format", "sarif")
    driver = done.json()["runs"][0]["tool"]["driver"]
    assert "pypi.org" not in str(driver)
