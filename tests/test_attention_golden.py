"""The attention selector against vLLM 0.33.0's and 0.34.0's own, executed on simulated
targets (``golden/vllm-X/attention-picks.json``).

What must hold, release by release: kernelcfg says "error" for an explicit
``--attention-backend`` exactly where vLLM refuses it in every install (verdict ``E``)
and never where vLLM starts in some install (``O``, ``M``, ``I``); the ``auto`` pick is
vLLM's, install by install; the attention config hashes as vLLM hashes it (0.33.0).
0.34.0 walks its own order where it differs (on gfx1100 and gfx1201 TRITON_ATTN before
ROCM_ATTN).
"""

from __future__ import annotations

import json
import shlex
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.commands.pipeline import resolve_args
from kernelcfg.engine.resolution import Resolution
from kernelcfg.targets.presets import PRESETS, Target
from kernelcfg.vllm.kernel_config import attention as attention_config
from kernelcfg.vllm.kernel_config import hashing
from kernelcfg.vllm.kernels.attention.facts import Features, Selection
from kernelcfg.vllm.kernels.attention.features import features, platform_of
from kernelcfg.vllm.kernels.attention.selector import Selector, selector

from .conftest import golden

pytestmark = pytest.mark.golden

RELEASES = ("0.33.0", "0.34.0")
"""The releases with executed attention picks."""
DATA = golden("0.33.0", "attention-picks")
SELECTOR = selector("0.33.0")
FEATURES = {f["id"]: f for f in DATA["meta"]["features"]}
INSTALL = {"wheel": "pip", "docker": "image", "extras": "all"}
"""The golden worlds as kernelcfg's installs (CPU's host-ISA worlds are all ``pip``)."""
HOSTS = {
    "wheel": "xeon-spr",
    "wheel-avx512": "epyc-genoa",
    "wheel-noavx512": "graviton4",
}
"""The CPU target's golden worlds (host ISAs: AVX-512 and AMX; AVX-512 without AMX; an
Arm64 host without either) as kernelcfg's CPU presets."""
CASES = [(v, t) for v in RELEASES for t in golden(v, "attention-picks")["meta"]["targets"]]
"""Every (release, golden target)."""


def _data(version: str) -> dict[str, Any]:
    return golden(version, "attention-picks")


@cache
def _selector(version: str) -> Selector:
    found = selector(version)
    assert found is not None
    return found


@cache
def _target(version: str, name: str) -> Target:
    spec = _data(version)["meta"]["targets"][name]
    for preset in PRESETS.values():
        if preset.kind == spec["kind"] and (
            spec["kind"] in ("cpu", "xpu") or preset.device == spec["device_name"]
        ):
            return preset
    raise AssertionError(f"no preset for golden target {name}")


@cache
def _features(version: str, feature: str) -> Features:
    spec = next(f for f in _data(version)["meta"]["features"] if f["id"] == feature)
    return features(
        _selector(version),
        spec["hf_config"],
        None,
        dtype=spec["dtype"],
        kv_cache_dtype=spec["kv_cache_dtype"],
        tensor_parallel_size=spec["tensor_parallel_size"],
    )


def _select(version: str, target: str, feature: str, backend: str | None, world: str) -> Selection:
    model = _selector(version)
    found = PRESETS[HOSTS[world]] if target == "cpu" else _target(version, target)
    where = platform_of(model, found, INSTALL.get(world, "pip"), {})
    return model.select(backend, _features(version, feature), where)


@pytest.mark.parametrize(("version", "target"), CASES)
def test_explicit_backends_error_exactly_where_vllm_refuses(version: str, target: str) -> None:
    data = _data(version)
    worlds = data["meta"]["targets"][target]["worlds"]
    false_errors, missed = [], []
    for feature, letters in data["explicit"]["verdicts"][target].items():
        for backend, letter in zip(data["meta"]["backends"], letters, strict=True):
            error = all(
                _select(version, target, feature, backend, w).status == "error" for w in worlds
            )
            if letter == "E" and not error:
                missed.append((feature, backend))
            elif letter in "OMI" and error:
                false_errors.append((feature, backend, letter))
    assert false_errors == []
    assert missed == []


@pytest.mark.parametrize(
    ("version", "target"), [(v, t) for v, t in CASES if t not in ("cpu", "xpu")]
)
def test_honoured_and_refused_install_by_install(version: str, target: str) -> None:
    """On CUDA and ROCm each install's outcome is vLLM's: honoured or refused (another
    platform's backend is refused outright: vLLM fails with it later)."""
    data = _data(version)
    explicit, model, kind = data["explicit"], _selector(version), _target(version, target).kind
    wrong = []
    for feature, by_world in explicit["index"][target].items():
        for world, ids in by_world.items():
            for backend, outcome_id in zip(data["meta"]["backends"], ids, strict=True):
                outcome = explicit["outcomes"][outcome_id]
                mine = _select(version, target, feature, backend, world)
                facts = model.backends.get(backend, {})
                if facts.get("platform", "cuda") not in ("cuda", kind):
                    continue
                if kind == "rocm" and facts.get("platform") == "cpu":
                    continue
                expected = "selected" if outcome["status"] == "honoured" else "error"
                if mine.status != expected:
                    wrong.append((feature, world, backend, outcome.get("message")))
    assert wrong == []


@pytest.mark.parametrize(("version", "target"), CASES)
def test_auto_pick_is_vllms(version: str, target: str) -> None:
    data = _data(version)
    wrong = []
    for feature, by_world in data["auto"]["index"][target].items():
        for world, outcome_id in by_world.items():
            outcome = data["auto"]["outcomes"][outcome_id]
            mine = _select(version, target, feature, None, world)
            expected = outcome["backend"] if outcome["status"] == "selected" else "error"
            got = mine.backend if mine.status == "selected" else mine.status
            if got != expected:
                wrong.append((feature, world, expected, got))
    assert wrong == []


@pytest.mark.parametrize("version", RELEASES)
def test_auto_walk_gives_vllms_reasons(version: str) -> None:
    """The candidates passed over carry vLLM's own reasons, in vLLM's order (on ROCm's
    gfx1100 too, where 0.34.0 swaps two of them)."""
    data = _data(version)
    checked = 0
    for target in ("h100", "b200", "rtx-pro-6000", "a100", "rx-7900-xtx"):
        for feature, by_world in data["auto"]["index"][target].items():
            outcome = data["auto"]["outcomes"][by_world["wheel"]]
            mine = _select(version, target, feature, None, "wheel")
            for check, (name, verdict, reasons) in zip(
                mine.candidates, outcome["candidates"], strict=False
            ):
                assert check.backend == name
                assert (check.verdict == "ok") == (verdict == "ok")
                if verdict != "ok":
                    assert list(check.reasons) == reasons
                checked += 1
    assert checked > 100


@pytest.mark.parametrize("kv", ["auto", "fp8", "fp8_e5m2"])
def test_034_walks_triton_before_rocm_attn_on_gfx1100(kv: str) -> None:
    """0.34.0 swaps ROCM_ATTN and TRITON_ATTN on gfx1100 and gfx1201, unless the KV cache
    is fp8_e5m2; 0.33.0 and CDNA keep ROCM_ATTN first."""
    spec = FEATURES["mha.h128.bf16.kv-auto"]
    for version, device, first in (
        ("0.34.0", "rx-7900-xtx", "ROCM_ATTN" if kv == "fp8_e5m2" else "TRITON_ATTN"),
        ("0.34.0", "rx-9070-xt", "ROCM_ATTN" if kv == "fp8_e5m2" else "TRITON_ATTN"),
        ("0.33.0", "rx-7900-xtx", "ROCM_ATTN"),
        ("0.34.0", "mi300x", "ROCM_ATTN"),
    ):
        model = _selector(version)
        found = features(model, spec["hf_config"], None, kv_cache_dtype=kv)
        where = platform_of(model, PRESETS[device], "pip", {})
        order = model.priorities(found, where)
        assert order is not None
        assert next(b for b in order if b in ("ROCM_ATTN", "TRITON_ATTN")) == first, version


@pytest.mark.parametrize(
    ("head", "sinks", "device", "flash_attn", "diff_kv"),
    [
        (64, True, "h100", "selected", "error"),
        (128, True, "h100", "selected", "selected"),
        (64, False, "h100", "selected", "selected"),
        (192, False, "b200", "error", "selected"),
    ],
)
def test_034_diffkv_reads_its_v_head_size(
    head: int, sinks: bool, device: str, flash_attn: str, diff_kv: str
) -> None:
    """vLLM 0.34.0 checks an FP8 KV cache with the backend's own V head size
    (flash_attn.py:499), FLASH_ATTN_DIFFKV's 128 (flash_attn_diffkv.py:37): with sinks and
    a QK head size unlike it, SM90 upgrades FA3 to FA4 (fa_utils.py:154), which takes FP8
    KV only at 512 (fa_utils.py:308); on SM100, 192 with V 128 keeps FA4 (fa_utils.py:201).
    FLASH_ATTN has none (its V is its QK head size), and 0.33.0 gives both the QK one."""
    spec = FEATURES["mha.h64.bf16.kv-fp8.sinks" if sinks else "mha.h64.bf16.kv-fp8"]
    hf = {**spec["hf_config"], "head_dim": head}
    for version, expected in (("0.34.0", (flash_attn, diff_kv)), ("0.33.0", (flash_attn,) * 2)):
        model = _selector(version)
        found = features(model, hf, None, kv_cache_dtype="fp8")
        where = platform_of(model, PRESETS[device], "pip", {})
        got = tuple(
            model.select(name, found, where).status for name in ("FLASH_ATTN", "FLASH_ATTN_DIFFKV")
        )
        assert got == expected, version


def _resolve(args: list[str]) -> Resolution:
    result = resolve_args(args)
    assert isinstance(result, Resolution)
    return result


def _words(cli: str) -> list[str]:
    return [] if cli == "(no flag)" else shlex.split(cli)


@pytest.mark.parametrize(
    "case", DATA["attention_config_hash"]["cases"], ids=lambda c: str(c["cli"])[:60]
)
def test_attention_config_hash(case: dict[str, Any]) -> None:
    result = _resolve([*_words(case["cli"]), "--vllm-version", "0.33", "--device", "h100"])
    assert result.attention is not None
    assert result.attention.hash == case["hash"]


def test_default_factors_are_vllms() -> None:
    found = attention_config.facts("0.33.0")
    assert found is not None
    factors = attention_config.factors(found, found.defaults)
    assert factors == DATA["attention_config_hash"]["default_factors"]
    assert list(factors) == DATA["attention_config_hash"]["fields_hashed"]
    assert hashing.digest(factors) == DATA["attention_config_hash"]["cases"][0]["hash"]


def test_a_golden_model_through_the_command_line(tmp_path: Path) -> None:
    """The whole path: config.json on disk, flags, the JSON contract."""
    spec = FEATURES["mha.h64.fp16.kv-auto.sinks"]
    (tmp_path / "config.json").write_text(json.dumps(spec["hf_config"]))
    base = ["--vllm-version", "0.33", "--hf-config-path", str(tmp_path), "--device", "h100"]
    result = _resolve(base)
    assert result.attention is not None
    picked = result.attention.selection
    wheel = DATA["auto"]["outcomes"][DATA["auto"]["index"]["h100"][spec["id"]]["wheel"]]
    assert picked is not None
    assert picked["backend"] == wheel["backend"]


def test_indexer_topk_selection_per_decode_rows(tmp_path: Path) -> None:
    spec = FEATURES["mla.h576.bf16.kv-fp8.dsa.nh16"]
    (tmp_path / "config.json").write_text(json.dumps(spec["hf_config"]))
    for device, bands in (
        ("h100", {"1-64": "cooperative", "65+": "persistent"}),
        ("rtx-pro-6000", {"1-64": "persistent", "65+": "persistent"}),
        ("mi355x", {"1-64": "per_row", "65+": "per_row"}),
    ):
        result = _resolve(
            ["--vllm-version", "0.33", "--hf-config-path", str(tmp_path), "--device", device]
        )
        picked = result.selection["sparse_indexer_topk_backend"]
        assert (picked["topk"], picked["by_rows"]) == (2048, bands), device


@pytest.mark.parametrize("version", ["0.30", "0.31", "0.32", "0.34"])
def test_indexer_topk_selection_in_other_releases(tmp_path: Path, version: str) -> None:
    """The same walk from 0.30.0 (the field's first release; its thresholds unchanged
    to 0.33.0) to 0.34.0, which also keeps SM11x off the cooperative kernel; 0.29.0 has
    no such field and no selection."""
    spec = FEATURES["mla.h576.bf16.kv-fp8.dsa.nh16"]
    (tmp_path / "config.json").write_text(json.dumps(spec["hf_config"]))
    flags = ["--vllm-version", version, "--hf-config-path", str(tmp_path)]
    picked = _resolve([*flags, "--device", "h100"]).selection["sparse_indexer_topk_backend"]
    assert picked["by_rows"] == {"1-64": "cooperative", "65+": "persistent"}
    thor = _resolve([*flags, "--device", "jetson-thor"]).selection
    cooperative = thor["sparse_indexer_topk_backend"]["by_rows"]["1-64"] == "cooperative"
    assert cooperative == (version != "0.34")
    old = _resolve(
        ["--vllm-version", "0.29", "--hf-config-path", str(tmp_path), "--device", "h100"]
    )
    assert "sparse_indexer_topk_backend" not in old.selection
