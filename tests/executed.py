"""The vectors the project executed itself from vLLM releases
(``golden/vllm-X.Y.Z/executed-*.json``, made by ``scripts/release/execute/all.py``):
which releases have them, and loading one (kept per process)."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

from kernelcfg.vllm import releases as known

GOLDEN = Path(__file__).resolve().parent / "golden"


def _path(version: str, kind: str) -> Path:
    """``executed-<kind>.json``, or ``.json.gz`` (older releases are kept packed)."""
    plain = GOLDEN / f"vllm-{version}" / f"executed-{kind}.json"
    return plain if plain.is_file() else plain.with_name(plain.name + ".gz")


RELEASES = tuple(known.known_versions())
"""The releases kernelcfg knows; each test module checks those of them whose selection
of its kind was executed (:func:`releases`), so a release is covered once
``execute/all.py`` has made its vectors."""


def releases(kind: str) -> tuple[str, ...]:
    """Those of ``RELEASES`` that have ``kind`` (top-k came in 0.30.0; a release whose
    selection was not executed for ``kind`` has none)."""
    return tuple(v for v in RELEASES if _path(v, kind).is_file())


@cache
def load(version: str, kind: str) -> dict[str, Any]:
    """``executed-<kind>.json`` (or ``.json.gz``) of one release."""
    path = _path(version, kind)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


ROCM_NOT_EXECUTED = {
    "0.23.0": "its vectors were made before the executor simulated ROCm targets; run on "
    "ROCm, 0.23.0's MoE cells show 972 kernelcfg has not matched yet (the DP8+EP MoRI "
    "layouts, where vLLM takes the Triton experts) and its attention cells more: ROCm "
    "for 0.23.0 is the next release round's to-do list",
}
"""Releases whose executed vectors hold no ROCm target yet, and why."""


def rocm_params(versions: tuple[str, ...]) -> list[object]:
    """``versions`` as test parameters, those in :data:`ROCM_NOT_EXECUTED` expected to
    fail (strictly: once their ROCm cells are executed the mark must go)."""
    import pytest

    return [
        pytest.param(v, marks=pytest.mark.xfail(strict=True, reason=ROCM_NOT_EXECUTED[v]))
        if v in ROCM_NOT_EXECUTED
        else v
        for v in versions
    ]
