"""The KernelConfig vectors the project executes (``scripts/release/execute/config.py``):
every known release has them, and the generator's inputs are the union of real vLLM's,
each taken from the nearest release that holds it (a release's own when real vLLM's
vectors exist, which is how the generator is checked against them)."""

from __future__ import annotations

import sys
from pathlib import Path

from kernelcfg.vllm import releases

from .conftest import golden, golden_versions

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "release" / "execute"))

import config  # noqa: E402


def test_every_known_release_has_kernel_config_vectors() -> None:
    missing = [v for v in releases.known_versions() if v not in golden_versions()]
    assert not missing, (
        f"no cases.json for {missing}: run python scripts/release/execute/config.py "
        "VERSION --pack (make release does)"
    )


def _real() -> list[str]:
    return [v for v, _ in config.real_sources("cases")]


def test_a_release_with_real_vectors_is_executed_on_its_own_inputs() -> None:
    version = _real()[-1]
    inputs = {c["id"]: c for c in config.case_inputs(version)["cases"]}
    for case in golden(version, "cases")["cases"]:
        assert inputs[case["id"]]["kwargs_py"] == case["kwargs_py"]
        assert "dropped_before" not in inputs[case["id"]]


def test_an_older_release_takes_the_union_nearest_first() -> None:
    real = _real()
    older = min(releases.known_versions(), key=config._key)
    assert older not in real
    made = config.case_inputs(older)
    assert made["sources"][0] == min(real, key=config._key)
    ids = {c["id"] for c in made["cases"]}
    assert ids == {c["id"] for v in real for c in golden(v, "cases")["cases"]}
    nearest = {c["id"]: c for c in golden(made["sources"][0], "cases")["cases"]}
    for case in made["cases"]:
        if case["id"] in nearest:
            assert case["kwargs_py"] == nearest[case["id"]]["kwargs_py"]
    platform = config.platform_inputs(older)
    for version in real:
        for record in golden(version, "platform-cases")["validate_flashinfer_moe_ep_model"]:
            row = {k: record[k] for k in config.VALIDATE_INPUTS}
            assert row in platform["validate_flashinfer_moe_ep_model"]
