"""``--linear-backend auto`` against vLLM 0.33.0's own linear-kernel selection, executed
on simulated targets (``golden/vllm-0.33.0/auto-picks-linear-topk.json``): the kernel, the
ordered candidate list and every trial with vLLM's reason, for every target, layer kind
and install."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelcfg.commands.pipeline import resolve_args
from kernelcfg.engine.resolution import Resolution
from kernelcfg.vllm import linear

from .conftest import golden

pytestmark = pytest.mark.golden

DATA = golden("0.33.0", "auto-picks-linear-topk")
MODEL = linear.model("0.33.0")
INSTALL = {"bare": "minimal", "wheel": "pip", "docker": "image", "full": "all"}
"""The golden worlds as kernelcfg's installs; ``full`` also sets the enabling variables."""


@pytest.mark.parametrize("target", list(DATA["linear"]["index"]))
def test_linear_walk_is_vllms(target: str) -> None:
    assert MODEL is not None
    spec = DATA["meta"]["targets"][target]
    wrong = []
    for layer, by_world in DATA["linear"]["index"][target].items():
        for world, outcome_id in by_world.items():
            expected = DATA["linear"]["outcomes"][outcome_id]
            env = {"VLLM_ROCM_USE_AITER": "1"} if world == "full" else {}
            where = MODEL.where(
                spec["kind"], spec.get("capability"), spec.get("gfx_arch"), INSTALL[world], env
            )
            got = MODEL.pick(layer, where)
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
