"""``--linear-backend`` against the vectors the project executed itself: vLLM 0.34.0's
own ``init_*_linear_kernel`` / ``choose_mp_linear_kernel`` / ``dispatch_unquantized_gemm``
run on simulated CUDA targets by ``scripts/release/execute/linear.py``
(``golden/vllm-0.34.0/executed-linear.json``; its ``meta`` says what was simulated).

Every ``auto`` cell (targets x install worlds, the env-switch worlds included, x layer
kinds): status and kernel, the list walked and every trial; and a fixed sample of the
explicit ``--linear-backend`` cells where kernelcfg narrows the list (``pick_named``):
status and kernel."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.vllm.kernels import linear

pytestmark = pytest.mark.golden

FILE = Path(__file__).resolve().parent / "golden" / "vllm-0.34.0" / "executed-linear.json"
SAMPLE = 4
"""One explicit-value cell in SAMPLE (by a hash of its key) is checked."""


def _load() -> dict[str, Any]:
    with FILE.open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


DATA = _load()
MODEL = linear.model(DATA["meta"]["vllm_version"])


def _cells(explicit: bool) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    cells = []
    outcomes = DATA["linear"]["outcomes"]
    for target, by_layer in DATA["linear"]["index"].items():
        for layer, by_world in by_layer.items():
            for world, by_value in by_world.items():
                for value, oid in by_value.items():
                    if (value != "auto") != explicit:
                        continue
                    key = f"{target}|{layer}|{world}|{value}"
                    if explicit and hashlib.sha256(key.encode()).digest()[0] % SAMPLE:
                        continue
                    cells.append((target, layer, world, value, outcomes[oid]))
    return cells


def _where(target: str, world: str) -> linear.Where:
    assert MODEL is not None
    spec = DATA["meta"]["platform"]["targets"][target]
    env = dict(DATA["meta"]["worlds"][world].get("env", {}))
    install = world.split("+", maxsplit=1)[0]
    return MODEL.where("cuda", spec["capability"], None, install, env)


def test_meta_says_what_was_simulated() -> None:
    meta = DATA["meta"]
    assert {"minimal", "pip", "image", "all"} <= set(meta["worlds"])
    assert any(w.get("env") for w in meta["worlds"].values()), "env switches are worlds"
    assert meta["probes"]["replaced"], "the library probes replaced are listed"
    assert "auto" in meta["linear_backend_values"]


def test_kernelcfg_walks_what_vllm_0_34_executed_on_auto() -> None:
    assert MODEL is not None
    wrong = []
    cells = _cells(explicit=False)
    for target, layer, world, _, outcome in cells:
        got = MODEL.pick(layer, _where(target, world))
        trials = [[n, "ok" if v == "ok" else "rejected", r] for n, v, r in got.trials]
        if (got.status, got.kernel) != (outcome["status"], outcome.get("kernel")):
            wrong.append((target, layer, world, got.kernel, outcome.get("kernel")))
        elif got.status == "selected" and (
            list(got.candidates) != outcome["candidates"] or trials != outcome["trials"]
        ):
            wrong.append((target, layer, world, "walk", got.trials))
    assert len(cells) > 1400
    assert wrong == []


def test_kernelcfg_narrows_as_vllm_0_34_executed_a_named_backend() -> None:
    assert MODEL is not None
    compared, wrong = 0, []
    for target, layer, world, value, outcome in _cells(explicit=True):
        got = MODEL.pick_named(layer, _where(target, world), value)
        if got is None:  # kernelcfg: no kernel of that backend, vLLM walks as on auto
            continue
        compared += 1
        if (got.status, got.kernel) != (outcome["status"], outcome.get("kernel")):
            wrong.append((target, layer, world, value, got.kernel, outcome.get("kernel")))
    assert compared > 300
    assert wrong == []
