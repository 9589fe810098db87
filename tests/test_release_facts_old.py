"""Facts first read for vLLM 0.29.0-0.34.0 (the host CPU's features, zentorch, the
start-up env writes, the catalogue's release spans), read again in 0.27.0's and
0.28.0's own source: each case cites the lines (paths inside the wheel) it rests on,
and where the older releases differ, the release that does otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.checks import constraints
from kernelcfg.targets.presets import PRESETS
from kernelcfg.vllm import releases
from kernelcfg.vllm.compile_cache.start_up import Launch, writes

from .cli_helpers import run
from .test_moe_checkpoint import CT_FP8_STATIC, CT_W8A8_INT8, QWEN3_30B
from .test_verdict34 import QWEN3_MOE_T5

OLD = ("0.27.0", "0.28.0")
"""The releases whose source these cases read."""


def _model(tmp_path: Path, name: str, config: dict[str, Any]) -> str:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder)


def _selection(version: str, model: str, *args: str) -> dict[str, Any]:
    done = run(
        "resolve", "--format", "json", *args, "--vllm-version", version,
        "--", "vllm", "serve", model,
    )  # fmt: skip
    assert done.exit_code in (0, 1), done.stderr
    found: dict[str, Any] = done.json()["selection"]
    return found


# ---------------------------------------------------------------- zentorch


@pytest.mark.parametrize("version", OLD)
def test_no_zentorch_int8_experts(tmp_path: Path, version: str) -> None:
    # vllm/model_executor/layers/fused_moe/oracle/int8.py:72-78: the CPU backend lists
    # ArmCPUExpertsInt8 and CPUExpertsInt8 only (0.29.0 puts ZenCPUExpertsInt8 first)
    data = releases.data_file(f"moe-{version}.json")
    assert data["oracles"]["int8"]["backend_classes"]["CPU"] == [
        "ArmCPUExpertsInt8",
        "CPUExpertsInt8",
    ]
    assert "ZenCPUExpertsInt8" not in data["experts"]
    model = _model(tmp_path, "w8a8", {**QWEN3_30B, "quantization_config": CT_W8A8_INT8})
    zen = ("--device", "epyc-genoa", "--install")
    picks = [_selection(version, model, *zen, i)["moe_backend"]["kernel"] for i in ("all", "pip")]
    assert picks[0] == picks[1]
    assert _selection("0.29.0", model, *zen, "all")["moe_backend"]["kernel"] == "ZenCPUExpertsInt8"


def test_cpu_experts_ask_no_amx_in_027(tmp_path: Path) -> None:
    # 0.27.0 experts/cpu_moe.py:557 CPUExpertsInt8._supports_current_device: x86 alone
    # (0.28.0 :1059 adds AMX tiles and is_supported_config's dimension checks); :49, :207,
    # :408 CPUExpertsFp8, CPUExpertsMxfp4, CPUExpertsInt4: is_cpu() alone
    experts = releases.data_file("moe-0.27.0.json")["experts"]
    for name in ("CPUExpertsFp8", "CPUExpertsMxfp4", "cpu_moe.CPUExpertsInt4"):
        assert experts[name]["supports"]["current_device"] == {"kind": ["cpu"]}, name
    assert "extra" not in experts["CPUExpertsInt8"]
    model = _model(tmp_path, "w8a8", {**QWEN3_30B, "quantization_config": CT_W8A8_INT8})
    old = _selection("0.27.0", model, "--device", "epyc-genoa")["moe_backend"]
    assert (old["status"], old["kernel"]) == ("selected", "CPUExpertsInt8")
    new = _selection("0.28.0", model, "--device", "epyc-genoa")["moe_backend"]
    assert new["status"] == "error"
    assert _selection("0.28.0", model, "--device", "xeon-spr")["moe_backend"]["kernel"] == (
        "CPUExpertsInt8"
    )


def test_zentorch_fused_moe_since_028(tmp_path: Path) -> None:
    # 0.28.0 experts/cpu_moe.py:167 CPUUnquantizedExperts, :301 is_zentorch_moe_supported
    # in process_weights_after_loading; 0.27.0's cpu_moe.py has no such class (its CPU
    # MoE is the unquantized method's own path, unquantized_fused_moe_method.py:250-255)
    model = _model(tmp_path, "qwen3", QWEN3_MOE_T5)
    new = _selection("0.28.0", model, "--device", "epyc-genoa", "--install", "all")
    assert (new["moe_backend"]["kernel"], new["moe_backend"]["runs"]) == (
        "CPUUnquantizedExperts",
        "zentorch_fused_moe",
    )
    old = _selection("0.27.0", model, "--device", "epyc-genoa", "--install", "all")
    assert (old["moe_backend"]["backend"], old["moe_backend"]["kernel"]) == ("CPU", None)
    assert "runs" not in old["moe_backend"]


@pytest.mark.parametrize(("version", "line"), [("0.27.0", 270), ("0.28.0", 305), ("0.29.0", 473)])
def test_zentorch_linear_dispatch(tmp_path: Path, version: str, line: int) -> None:
    # vllm/model_executor/layers/utils.py:<line> dispatch_cpu_unquantized_gemm: on vLLM's
    # Zen platform with zentorch_linear_unary registered, the layer runs it
    selector = releases.data_file(f"linear-{version}.json")["selectors"]["unquantized"]
    (entry,) = selector["dispatch_runs"]["cpu"]
    assert entry["source"].startswith(f"vllm/model_executor/layers/utils.py:{line} ")
    model = _model(tmp_path, "qwen3", QWEN3_MOE_T5)
    zen = _selection(version, model, "--device", "epyc-genoa", "--install", "all")
    assert zen["linear_backend"]["runs"] == "zentorch_linear_unary"
    plain = _selection(version, model, "--device", "epyc-genoa", "--install", "pip")
    assert "runs" not in plain["linear_backend"]


# ---------------------------------------------------------------- start-up env writes


@pytest.mark.parametrize("version", OLD)
def test_cpu_layout_written_on_amx_hosts(version: str) -> None:
    # vllm/platforms/cpu.py:241-242 (0.27.0), :270-271 (0.28.0): SD where
    # torch.cpu._is_amx_tile_supported(), over any value set; 0.29.0 asks AVX512-BF16
    amx = {"amx_tile": True, "avx512_bf16": True}
    zen4 = {"amx_tile": False, "avx512_bf16": True}
    for host, written in ((amx, True), (zen4, False)):
        found = writes(
            version, {"VLLM_SSM_CONV_STATE_LAYOUT": "DS"}, Launch("cpu", False, False, host)
        )
        assert ("VLLM_SSM_CONV_STATE_LAYOUT" in found.written) is written, host
        assert found.written["VLLM_DISABLE_SHARED_EXPERTS_STREAM"] == "1"  # cpu.py:235/:264
    newer = writes("0.29.0", {}, Launch("cpu", False, False, zen4)).written
    assert newer["VLLM_SSM_CONV_STATE_LAYOUT"] == "SD"
    unknown = writes(version, {}, Launch("cpu", False, False)).unknown
    assert "AMX tiles" in unknown["VLLM_SSM_CONV_STATE_LAYOUT"]


@pytest.mark.parametrize("version", OLD)
def test_rocm_awq_and_breakable_graphs_written(version: str) -> None:
    # vllm/platforms/rocm.py:895 (0.27.0), :947 (0.28.0): VLLM_USE_TRITON_AWQ=1 for any
    # quantization method; vllm/config/vllm.py:1230 (0.27.0), :1333 (0.28.0): breakable
    # CUDA graphs on for the listed architectures, unless the variable is set
    rocm = writes(version, {}, Launch("rocm", quantized=True, breakable_auto=False))
    assert rocm.written == {"VLLM_USE_TRITON_AWQ": "1"}
    cuda = writes(version, {}, Launch("cuda", quantized=False, breakable_auto=True))
    assert cuda.written == {"VLLM_USE_BREAKABLE_CUDAGRAPH": "1"}
    kept = writes(version, {"VLLM_USE_BREAKABLE_CUDAGRAPH": "0"}, Launch("cuda", False, True))
    assert kept.written == {}


# ---------------------------------------------------------------- the catalogue's spans


def _check(version: str, name: str, value: str, device: str, scheme: str, **kw: Any) -> Any:
    return constraints.check(
        name, value, constraints.Context(PRESETS[device], version, scheme, **kw)
    )


@pytest.mark.parametrize("version", OLD)
def test_moe_spans_hold_for_the_old_releases(version: str) -> None:
    # oracle/unquantized.py map_unquantized_backend has no marlin (raises ValueError);
    # experts/cutlass_moe.py:732-735 (0.27.0), :736-739 (0.28.0): CutlassExpertsFp4
    # _supports_parallel_config is ep_size == 1
    marlin = _check(version, "moe_backend", "marlin", "h100", "unquantized")
    assert marlin.status == "cannot-run"
    cutlass = _check(version, "moe_backend", "cutlass", "b200", "nvfp4", expert_parallel=True)
    assert cutlass.status == "cannot-run"
    assert "expert parallelism" in cutlass.reason
    assert _check(version, "moe_backend", "cutlass", "b200", "nvfp4").status == "runs"


@pytest.mark.parametrize("version", [*OLD, "0.29.0"])
def test_torch_linear_backend_kernels(version: str) -> None:
    # vllm/model_executor/kernels/linear/__init__.py's "torch" set: the FP8 per-tensor,
    # channel-wise and row-wise kernels (:280-284 in 0.27.0), BlockWise since 0.28.0
    # (:303-308), no NVFP4 kernel before 0.30.0, no MXFP4/MXFP8 one before 0.33.0
    # and where it has none, 0.27.0 raises (:590, :805, :856, :1043) where 0.28.0 warns
    for scheme, device in (("nvfp4", "b200"), ("mxfp8", "h100"), ("mxfp4", "h100")):
        verdict = _check(version, "linear_backend", "torch", device, scheme)
        assert f"'torch' has no {scheme} kernel in vLLM {version}" in verdict.reason
        raises = version == "0.27.0"
        assert verdict.status == ("cannot-run" if raises else "falls-back")
        assert ("was requested but no 'torch' kernel exists" in verdict.reason) is raises
    block = _check(version, "linear_backend", "torch", "h100", "fp8_block")
    assert (block.status == "runs") is (version != "0.27.0")
    assert _check("0.30.0", "linear_backend", "torch", "b200", "nvfp4").status == "runs"


# ---------------------------------------------------------------- --linear-backend


@pytest.mark.parametrize("version", OLD)
def test_a_backend_with_no_kernel_for_the_layers(tmp_path: Path, version: str) -> None:
    # 0.27.0 vllm/model_executor/kernels/linear/__init__.py:590 (choose_scaled_mm_linear_
    # kernel; :754, :805, :856, :909, :1043 for the other lists): a --linear-backend with
    # no kernel in the layer's list raises; 0.28.0 :372 _resolve_backend_kernels warns
    # and walks the whole list (MXFP6 alone raises, :939)
    model = _model(tmp_path, "fp8", {**QWEN3_MOE_T5, "quantization_config": CT_FP8_STATIC})
    done = run(
        "resolve", "--format", "json", "--device", "h100", "--vllm-version", version,
        "--linear-backend", "exllama", "--", "vllm", "serve", model,
    )  # fmt: skip
    found = done.json()
    said = [p for p in found["problems"] if p["field"] == "linear_backend"]
    if version == "0.27.0":
        (refusal,) = said
        assert refusal["code"] == "linear-backend-raises"
        assert (
            "ValueError: --linear-backend=exllama was requested but no 'exllama' kernel "
            "exists for this layer type." in refusal["message"]
        )
        assert not found["valid"]
    else:
        assert [p["severity"] for p in said] == ["warning"]
        assert "vLLM warns and chooses automatically" in said[0]["message"]


@pytest.mark.parametrize("version", [*OLD, "0.29.0"])
def test_mxfp6_without_a_kernel_of_the_backend(version: str) -> None:
    # init_mxfp6_linear_kernel raises when the narrowed list is empty (0.27.0 :909,
    # 0.28.0 :939); from 0.29.0 _filter_kernels_by_backend (:341) already warns and
    # returns the whole list, so that raise is never reached
    verdict = _check(version, "linear_backend", "humming", "mi355x", "mxfp6")
    raises = version in OLD
    assert verdict.status == ("cannot-run" if raises else "falls-back")
    assert ("kernel exists for MXFP6 layers" in verdict.reason) is raises
