"""``--linear-backend auto`` and ``--sparse-indexer-topk-backend auto`` against vLLM
0.33.0's and 0.34.0's own selection, executed on simulated targets
(``golden/vllm-X.Y.Z/auto-picks-linear-topk.json``): the linear kernel, the ordered
candidate list and every trial with vLLM's reason, for every target, layer kind and
install; the top-k backend and its whole walk for every target, row count and top-k."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelcfg.commands.pipeline import resolve_args
from kernelcfg.engine.resolution import Resolution
from kernelcfg.vllm.kernels import linear, topk

from .conftest import golden

pytestmark = pytest.mark.golden

RELEASES = ("0.33.0", "0.34.0")
"""The releases with executed linear picks."""
INSTALL = {"bare": "minimal", "wheel": "pip", "docker": "image", "full": "all"}
"""The golden worlds as kernelcfg's installs; ``full`` also sets the enabling variables
(0.34.0's ``cuda_toolkit`` piece, in docker and full, is the ``nvcc_12_9`` library of
kernelcfg's ``image`` and ``all``)."""
CASES = [
    (version, target)
    for version in RELEASES
    for target in golden(version, "auto-picks-linear-topk")["linear"]["index"]
]
"""Every (release, golden target)."""


@pytest.mark.parametrize(("version", "target"), CASES)
def test_linear_walk_is_vllms(version: str, target: str) -> None:
    data = golden(version, "auto-picks-linear-topk")
    found = linear.model(version)
    assert found is not None
    spec = data["meta"]["targets"][target]
    wrong = []
    for layer, by_world in data["linear"]["index"][target].items():
        for world, outcome_id in by_world.items():
            expected = data["linear"]["outcomes"][outcome_id]
            env = {"VLLM_ROCM_USE_AITER": "1"} if world == "full" else {}
            where = found.where(
                spec["kind"], spec.get("capability"), spec.get("gfx_arch"), INSTALL[world], env
            )
            got = found.pick(layer, where)
            trials = [(n, "ok" if v == "ok" else "rejected", r) for n, v, r in got.trials]
            if (
                (got.status, got.kernel) != (expected["status"], expected["kernel"])
                or list(got.candidates) != expected["candidates"]
                or trials != [tuple(t) for t in expected["trials"]]
            ):
                wrong.append((layer, world))
            elif got.status == "selected":
                assert set(got.values) <= set(expected["linear_backend_values"]) or not got.values
    assert wrong == []


@pytest.mark.parametrize("version", RELEASES)
def test_indexer_topk_auto_walk_is_vllms(version: str) -> None:
    """``sparse_indexer_topk_backend=auto``: the backend and the whole walk (names,
    verdicts, cooperative's reasons), read from the target's kind and capability as
    ``engine/indexer_topk.py`` reads a preset's; no install changes it."""
    data = golden(version, "auto-picks-linear-topk")
    facts = topk.facts(version)
    assert facts is not None
    found = data["sparse_indexer_topk"]
    checked = 0
    for target, shapes in found["index"].items():
        spec = data["meta"]["targets"][target]
        major, _, minor = (spec["capability"] or "").partition(".")
        capability = (int(major), int(minor)) if major else None
        for shape, by_world in shapes.items():
            rows, k = (int(part.split("=")[1]) for part in shape.split(","))
            backend, chain = topk.pick(facts, spec["kind"], capability, rows, k)
            for outcome_id in by_world.values():
                outcome = found["outcomes"][outcome_id]
                assert backend == outcome["backend"], (target, shape)
                expected = [
                    (name, "ok" if verdict == "ok" else "refused", reason)
                    for name, verdict, reason in outcome["chain"]
                ]
                assert chain == expected, (target, shape)
                checked += 1
    assert checked == 304


def _resolve(args: list[str]) -> Resolution:
    result = resolve_args(args)
    assert isinstance(result, Resolution)
    return result


def test_selection_in_a_resolve() -> None:
    result = _resolve(["--vllm-version", "0.33", "--quant-scheme", "fp8_block", "--device", "h100"])
    picked = result.selection["linear_backend"]
    assert (picked["kernel"], picked["value"]) == ("DeepGemmFp8BlockScaledMMKernel", "deep_gemm")
    assert picked["by_install"]["image"] == "FlashInferFp8DeepGEMMDynamicBlockScaledKernel"


def test_no_kernel_is_an_error_naming_vllms_reason() -> None:
    result = _resolve(
        ["--vllm-version", "0.33", "--quant-scheme", "nvfp4_w4a16", "--device", "mi300x"]
    )
    problem = next(p for p in result.problems if p.code == "linear-no-kernel")
    assert problem.severity == "error"
    assert "Forced NVFP4 kernel MarlinNvFp4LinearKernel is not supported" in problem.message
    assert result.exit_code() == 1


def test_online_fp8_is_per_tensor_dynamic(tmp_path: Path) -> None:
    result = _resolve(["--vllm-version", "0.33", "--quantization", "fp8", "--device", "b200"])
    assert result.selection["linear_backend"]["layers"] == {
        "fp8_tensor/dynamic_act": "CutlassFP8ScaledMMLinearKernel"
    }


def test_034_picks_as_033_but_where_its_source_changed() -> None:
    """vLLM 0.34.0 keeps the lists and checks, except: unquantized CUDA layers dispatch to
    ``cuda_unquantized_gemm``, and DeepGEMM needs an nvcc >= 12.9 (``pip install vllm``
    brings none), so FP8-block layers fall to CUTLASS there."""
    old, new = linear.model("0.33.0"), linear.model("0.34.0")
    assert old is not None
    assert new is not None
    changed = {}
    for device, capability in (
        ("h100", "9.0"),
        ("b200", "10.0"),
        ("rtx-pro-6000", "12.0"),
        ("a100", "8.0"),
    ):
        for layer in old.data["layers"]:
            a = old.pick(layer, old.where("cuda", capability, None, "pip", {})).kernel
            b = new.pick(layer, new.where("cuda", capability, None, "pip", {})).kernel
            if a != b:
                changed[(device, layer)] = b
    assert changed == {
        ("h100", "unquantized/bf16"): "cuda_unquantized_gemm",
        ("b200", "unquantized/bf16"): "cuda_unquantized_gemm",
        ("rtx-pro-6000", "unquantized/bf16"): "cuda_unquantized_gemm",
        ("a100", "unquantized/bf16"): "cuda_unquantized_gemm",
        ("h100", "fp8_block/128x128"): "CutlassFp8BlockScaledMMKernel",
        ("b200", "fp8_block/128x128"): "CutlassFp8BlockScaledMMKernel",
        ("rtx-pro-6000", "fp8_block/128x128"): "CutlassFp8BlockScaledMMKernel",
    }
