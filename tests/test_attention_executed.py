"""``--attention-backend`` against the vectors the project executed itself: vLLM
0.34.0's own ``CudaPlatform.get_attn_backend_cls`` / ``get_valid_backends`` and each
backend's ``validate_configuration``, run on simulated CUDA targets by
``scripts/release/execute/attention.py`` (``golden/vllm-0.34.0/executed-attention.json``;
its ``meta`` says what was simulated).

Every ``auto`` cell (target x install x model feature set): the pick, and the candidates
passed over with vLLM's reasons; a fixed sample of the explicit cells: kernelcfg refuses
a CUDA backend in an install exactly where vLLM raises, and honours it where vLLM does."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.targets.presets import PRESETS, Target
from kernelcfg.vllm.kernels.attention.facts import Features, Selection
from kernelcfg.vllm.kernels.attention.features import features, platform_of
from kernelcfg.vllm.kernels.attention.selector import Selector, selector

pytestmark = pytest.mark.golden

FILE = Path(__file__).resolve().parent / "golden" / "vllm-0.34.0" / "executed-attention.json"
SAMPLE = 8
"""One explicit (target, feature, world, backend) cell in SAMPLE is checked."""


def _load() -> dict[str, Any]:
    with FILE.open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


DATA = _load()
VERSION = DATA["meta"]["vllm_version"]
FEATURES = {f["id"]: f for f in DATA["meta"]["features"]}


@cache
def _selector() -> Selector:
    found = selector(VERSION)
    assert found is not None
    return found


@cache
def _target(name: str) -> Target:
    spec = DATA["meta"]["platform"]["targets"][name]
    return next(p for p in PRESETS.values() if p.device == spec["device_name"])


@cache
def _features(feature: str) -> Features:
    spec = FEATURES[feature]
    return features(
        _selector(),
        spec["hf_config"],
        None,
        dtype=spec["dtype"],
        kv_cache_dtype=spec["kv_cache_dtype"],
        tensor_parallel_size=spec["tensor_parallel_size"],
    )


def _select(target: str, feature: str, backend: str | None, world: str) -> Selection:
    model = _selector()
    env = DATA["meta"]["worlds"][world].get("env", {})
    where = platform_of(model, _target(target), world, env)
    return model.select(backend, _features(feature), where)


def test_meta_says_what_was_simulated() -> None:
    meta = DATA["meta"]
    assert set(meta["worlds"]) == {"pip", "image", "all"}
    assert len(meta["features"]) == 60
    assert meta["probes"]["replaced"], "the library probes replaced are listed"


def test_kernelcfg_picks_what_vllm_0_34_executed_on_auto() -> None:
    auto = DATA["auto"]
    wrong = []
    for target, by_feature in auto["index"].items():
        for feature, by_world in by_feature.items():
            for world, oid in by_world.items():
                outcome = auto["outcomes"][oid]
                mine = _select(target, feature, None, world)
                expected = outcome["backend"] if outcome["status"] == "selected" else "error"
                got = mine.backend if mine.status == "selected" else mine.status
                if got != expected:
                    wrong.append((target, feature, world, expected, got))
    assert len(wrong) == 0, wrong[:10]


def test_kernelcfg_refuses_where_vllm_0_34_raised() -> None:
    explicit, backends = DATA["explicit"], DATA["meta"]["backends"]
    model = _selector()
    compared, wrong = 0, []
    for target, by_feature in explicit["index"].items():
        for feature, by_world in by_feature.items():
            for world, numbers in by_world.items():
                for backend, number in zip(backends, numbers, strict=True):
                    key = f"{target}|{feature}|{world}|{backend}"
                    if hashlib.sha256(key.encode()).digest()[0] % SAMPLE:
                        continue
                    if model.backends.get(backend, {}).get("platform", "cuda") != "cuda":
                        continue  # another platform's backend: fails later, not here
                    outcome = explicit["outcomes"][number]
                    mine = _select(target, feature, backend, world)
                    compared += 1
                    refused = outcome["status"] == "refused"
                    if (mine.status == "error") != refused:
                        wrong.append((target, feature, world, backend, outcome.get("message")))
    assert compared > 1000
    assert wrong == []
