"""``--moe-backend auto`` against the vectors the project executed itself: each
release's own ``select_*_moe_backend`` run on simulated CUDA and ROCm targets by
``scripts/release/execute/moe.py`` (``golden/vllm-X.Y.Z/executed-moe.json``; its
``meta`` says what was simulated). A fixed sample of the ``auto`` cells; status,
backend enum and experts class (``tests/moe_executed.py`` compares).

Cells where the executor could not run vLLM's code to the end (a library's own Python
it imports is not in the throwaway venv: ``ModuleNotFoundError``) say nothing about
vLLM and are left out, counted."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from kernelcfg.vllm import releases
from tests import moe_executed
from tests.executed import rocm_params

pytestmark = pytest.mark.golden

SAMPLE = 16
"""One cell in SAMPLE (by a hash of its key) is checked."""
VERSIONS = tuple(v for v in releases.known_versions() if moe_executed.executed_file(v).is_file())
"""Every release with executed vectors."""


@cache
def _data(version: str) -> dict[str, Any]:
    return moe_executed.load(moe_executed.executed_file(version))


def test_the_releases_added_by_the_release_command_have_vectors() -> None:
    # `make release` executes every release it adds; the oldest releases kernelcfg knows
    # were added that way
    assert {"0.34.0", "0.28.0"} <= set(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_meta_says_what_was_simulated(version: str) -> None:
    meta = _data(version)["meta"]
    assert meta["vllm_version"] == version
    assert set(meta["worlds"]) == {"minimal", "pip", "image", "all"}
    assert meta["probes"]["replaced"], "the library probes replaced are listed"
    assert "CudaPlatformBase" in meta["platform"]["class"]
    rocm = [t for t, spec in meta["platform"]["targets"].items() if spec.get("kind") == "rocm"]
    if rocm:
        assert "RocmPlatform" in meta["platform"]["rocm_class"]
        assert set(meta["rocm_worlds"]) == set(meta["worlds"])
        assert meta["platform"]["rocm_facts"]["recomputed"], "the gfx facts recomputed"


@pytest.mark.parametrize("version", rocm_params(VERSIONS))
def test_rocm_targets_are_executed(version: str) -> None:
    # every ROCm preset kernelcfg knows is a target of the executed vectors, and its
    # cells are compared (the sample holds some of each)
    data = _data(version)
    targets = data["meta"]["platform"]["targets"]
    assert {"mi300x", "mi325x", "mi355x", "rx-7900-xtx"} <= set(targets)
    sampled = {cell[0] for cell in moe_executed.cells(data, SAMPLE)}
    assert {t for t, s in targets.items() if s.get("kind") == "rocm"} <= sampled


@pytest.mark.parametrize("version", VERSIONS)
def test_kernelcfg_picks_what_vllm_executed(version: str) -> None:
    found = moe_executed.compare(_data(version), SAMPLE)
    assert found.compared > 200
    assert found.gaps < found.compared
    assert found.wrong == []
