"""``--moe-backend auto`` against the vectors the project executed itself: vLLM 0.34.0's
own ``select_*_moe_backend`` run on simulated CUDA targets by
``scripts/release/execute/moe.py`` (``golden/vllm-0.34.0/executed-moe.json``; its
``meta`` says what was simulated). A fixed sample of the ``auto`` cells; status,
backend enum and experts class.

Cells where the executor could not run vLLM's code to the end (a library's own Python
it imports is not in the throwaway venv: ``ModuleNotFoundError``) would say nothing
about vLLM; since Humming and cuda-bindings are installed there
(``scripts/release/execute/extras.py``) there are none."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.vllm.kernels import words as kernel_words
from kernelcfg.vllm.kernels.moe import oracle
from tests import test_moe_golden as golden

pytestmark = pytest.mark.golden

FILE = Path(__file__).resolve().parent / "golden" / "vllm-0.34.0" / "executed-moe.json"
SAMPLE = 16
"""One cell in SAMPLE (by a hash of its key) is checked."""


def _load() -> dict[str, Any]:
    with FILE.open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


DATA = _load()


def _cells() -> list[tuple[str, str, str, str, str, dict[str, Any]]]:
    cells = []
    outcomes = DATA["moe"]["outcomes"]
    for target, by_variant in DATA["moe"]["index"].items():
        for variant, by_model in by_variant.items():
            for model, by_layout in by_model.items():
                for layout, by_world in by_layout.items():
                    for world, by_value in by_world.items():
                        if "auto" not in by_value or model == "None":
                            continue
                        key = f"{target}|{variant}|{model}|{layout}|{world}"
                        if hashlib.sha256(key.encode()).digest()[0] % SAMPLE:
                            continue
                        cells.append(
                            (target, variant, model, layout, world, outcomes[by_value["auto"]])
                        )
    return cells


def _where(found: oracle.MoeModel, target: str, world: str) -> kernel_words.Where:
    spec = DATA["meta"]["platform"]["targets"][target]
    env = dict(DATA["meta"]["worlds"][world].get("env", {}))
    where = kernel_words.where(found.data, "cuda", spec["capability"], None, world, env)
    return dataclasses.replace(where, device_name=spec["device_name"])


def _simulation_gap(outcome: dict[str, Any]) -> bool:
    return outcome["status"] == "error" and "ModuleNotFoundError" in (outcome.get("error") or "")


def test_meta_says_what_was_simulated() -> None:
    meta = DATA["meta"]
    assert meta["vllm_version"] == "0.34.0"
    assert set(meta["worlds"]) == {"minimal", "pip", "image", "all"}
    assert meta["probes"]["replaced"], "the library probes replaced are listed"
    assert "CudaPlatformBase" in meta["platform"]["class"]


def test_kernelcfg_picks_what_vllm_0_34_executed() -> None:
    found = oracle.model("0.34.0")
    assert found is not None
    compared, gaps, wrong = 0, 0, []
    for target, variant, model, layout, world, outcome in _cells():
        if _simulation_gap(outcome):
            gaps += 1
            continue
        pick = found.pick(variant, golden.layer(model, layout), _where(found, target, world))
        backend = f"{pick.enum}.{pick.backend}" if pick.backend else None
        got = (pick.status, backend, pick.kernel)
        want = (outcome["status"], outcome.get("backend"), outcome.get("experts"))
        compared += 1
        if got != want:
            wrong.append((target, variant, model, layout, world, got, want))
    assert compared > 200
    assert gaps == 0
    assert wrong == []
