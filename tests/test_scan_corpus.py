"""``scan`` on real deployment files from public repositories (``tests/data/scan-corpus``:
64 files, every form of launch, each with its launches written down by hand in
``expected.json``; its README says where each file comes from and how the expected
launches were decided). Each file is laid out under the name it has in its repository,
as ``scan`` meets it there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .cli_helpers import run

pytestmark = pytest.mark.cli

CORPUS = Path(__file__).parent / "data" / "scan-corpus"
EXPECTED: list[dict[str, Any]] = json.loads((CORPUS / "expected.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def laid_out(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Each corpus file in a folder of its own, under its name in its repository."""
    root = tmp_path_factory.mktemp("corpus")
    paths = []
    for number, entry in enumerate(EXPECTED):
        folder = root / f"{number:03d}"
        folder.mkdir()
        path = folder / Path(entry["source"]["path"]).name
        path.write_bytes((CORPUS / entry["file"]).read_bytes())
        paths.append(path)
    return paths


def test_the_corpus_covers_every_form() -> None:
    forms = {form.split("-")[0] for entry in EXPECTED for form in entry["form"]}
    assert len(EXPECTED) >= 40
    assert {"dockerfile", "k8s", "compose", "shell", "md", "python", "negative"} <= forms


def test_scan_finds_every_expected_launch_and_nothing_else(laid_out: list[Path]) -> None:
    done = run("scan", "--device", "h100", "--format", "json", "--", *map(str, laid_out))
    rows = done.json()["lines"]
    got = [(row["file"], row["line"], row["argv"], sorted(row["unresolved"])) for row in rows]
    want = [
        (str(path), launch["line"], launch["argv"], sorted(launch["unresolved"]))
        for path, entry in zip(laid_out, EXPECTED, strict=True)
        for launch in entry["launches"]
    ]
    assert got == want


def test_the_environment_written_before_a_launch_is_its_own(laid_out: list[Path]) -> None:
    done = run("scan", "--device", "h100", "--format", "json", "--", *map(str, laid_out))
    rows = iter(done.json()["lines"])
    for entry in EXPECTED:
        for launch in entry["launches"]:
            row = next(rows)
            assert launch["env"].items() <= row["env"].items(), entry["file"]
