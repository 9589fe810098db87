"""``--attention-backend`` against the vectors the project executed itself: each
release's own ``CudaPlatform`` / ``RocmPlatform.get_attn_backend_cls`` /
``get_valid_backends`` and each backend's ``validate_configuration``, run on simulated
CUDA and ROCm targets by
``scripts/release/execute/attention.py`` (``golden/vllm-X.Y.Z/executed-attention.json``;
its ``meta`` says what was simulated).

Every ``auto`` cell (target x install x model feature set): the pick, and the candidates
passed over with vLLM's reasons; a fixed sample of the explicit cells: kernelcfg refuses
a backend of the target's platform in an install exactly where vLLM raises, and honours
it where vLLM does."""

from __future__ import annotations

import hashlib
from functools import cache

import pytest

from kernelcfg.targets.presets import PRESETS, Target
from kernelcfg.vllm.kernels.attention.facts import Features, Selection
from kernelcfg.vllm.kernels.attention.features import features, platform_of
from kernelcfg.vllm.kernels.attention.selector import Selector, selector

from .executed import load, releases, rocm_params

RELEASES = releases("attention")
"""The releases whose attention selection was executed."""

pytestmark = pytest.mark.golden

SAMPLE = 8
"""One explicit (target, feature, world, backend) cell in SAMPLE is checked."""


@cache
def _selector(version: str) -> Selector:
    found = selector(version)
    assert found is not None
    return found


@cache
def _target(version: str, name: str) -> Target:
    spec = load(version, "attention")["meta"]["platform"]["targets"][name]
    return next(p for p in PRESETS.values() if p.device == spec["device_name"])


@cache
def _features(version: str, feature: str) -> Features:
    spec = next(f for f in load(version, "attention")["meta"]["features"] if f["id"] == feature)
    return features(
        _selector(version),
        spec["hf_config"],
        None,
        dtype=spec["dtype"],
        kv_cache_dtype=spec["kv_cache_dtype"],
        tensor_parallel_size=spec["tensor_parallel_size"],
    )


def _select(
    version: str,
    target: str,
    feature: str,
    backend: str | None,
    world: str,
    model: Selector | None = None,
) -> Selection:
    model = model or _selector(version)
    meta = load(version, "attention")["meta"]
    worlds = meta["rocm_worlds"] if _target(version, target).kind == "rocm" else meta["worlds"]
    env = worlds[world].get("env", {})
    where = platform_of(model, _target(version, target), world, env)
    return model.select(backend, _features(version, feature), where)


@pytest.mark.parametrize("version", RELEASES)
def test_meta_says_what_was_simulated(version: str) -> None:
    meta = load(version, "attention")["meta"]
    assert meta["vllm_version"] == version
    assert set(meta["worlds"]) == {"pip", "image", "all"}
    assert len(meta["features"]) == 60
    assert meta["probes"]["replaced"], "the library probes replaced are listed"


@pytest.mark.parametrize("version", rocm_params(RELEASES))
def test_rocm_targets_are_executed(version: str) -> None:
    # every ROCm preset kernelcfg knows, with vLLM's own RocmPlatform selecting
    data = load(version, "attention")
    targets = data["meta"]["platform"]["targets"]
    rocm = {t for t, spec in targets.items() if spec.get("kind") == "rocm"}
    assert rocm == {"mi300x", "mi325x", "mi355x", "rx-7900-xtx"}
    assert rocm <= set(data["auto"]["index"])
    # real vLLM's two ROCm installs: the wheel, and the ROCm image with aiter
    assert set(data["meta"]["rocm_worlds"]) == {"pip", "image"}
    assert "aiter" in data["meta"]["rocm_worlds"]["image"]["libraries"]
    assert data["meta"]["platform"]["rocm_facts"]["recomputed"], "the gfx facts recomputed"


@pytest.mark.parametrize("version", RELEASES)
def test_kernelcfg_picks_what_vllm_executed_on_auto(version: str) -> None:
    auto = load(version, "attention")["auto"]
    wrong = []
    for target, by_feature in auto["index"].items():
        for feature, by_world in by_feature.items():
            for world, oid in by_world.items():
                outcome = auto["outcomes"][oid]
                mine = _select(version, target, feature, None, world)
                expected = outcome["backend"] if outcome["status"] == "selected" else "error"
                got = mine.backend if mine.status == "selected" else mine.status
                if got != expected:
                    wrong.append((target, feature, world, expected, got))
    assert len(wrong) == 0, wrong[:10]


@pytest.mark.parametrize("version", RELEASES)
def test_kernelcfg_refuses_where_vllm_raised(version: str) -> None:
    data = load(version, "attention")
    explicit, backends = data["explicit"], data["meta"]["backends"]
    model = _selector(version)
    compared, wrong = 0, []
    for target, by_feature in explicit["index"].items():
        for feature, by_world in by_feature.items():
            for world, row in by_world.items():
                for backend, number in zip(backends, explicit["rows"][row], strict=True):
                    key = f"{target}|{feature}|{world}|{backend}"
                    if hashlib.sha256(key.encode()).digest()[0] % SAMPLE:
                        continue
                    home = model.backends.get(backend, {}).get("platform")
                    if home not in (None, _target(version, target).kind):
                        continue  # another platform's backend: fails later, not here
                    outcome = explicit["outcomes"][number]
                    mine = _select(version, target, feature, backend, world)
                    compared += 1
                    refused = outcome["status"] == "refused"
                    if (mine.status == "error") != refused:
                        wrong.append((target, feature, world, backend, outcome.get("message")))
    assert compared > 1000
    assert wrong == []
