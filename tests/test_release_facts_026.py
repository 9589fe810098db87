"""Facts first read for vLLM 0.27.0-0.34.0 (zentorch, the CPU MoE experts, the start-up
env writes, ``--linear-backend``'s load-time errors, the catalogue's release spans), read
again in 0.26.0's own source: each case cites the 0.26.0 lines (paths inside the wheel)
it rests on, and where 0.26.0 differs from 0.27.0, says how."""

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
from .test_moe_checkpoint import CT_FP8_BLOCK, CT_FP8_STATIC, CT_W8A8_INT8, GPTQ_INT4, QWEN3_30B
from .test_verdict34 import QWEN3_MOE_T5

VERSION = "0.26.0"
LINEAR = "vllm/model_executor/kernels/linear/__init__.py"


def _model(tmp_path: Path, name: str, config: dict[str, Any]) -> str:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder)


def _resolve(model: str, *args: str) -> dict[str, Any]:
    done = run(
        "resolve", "--format", "json", *args, "--vllm-version", VERSION,
        "--", "vllm", "serve", model,
    )  # fmt: skip
    assert done.exit_code in (0, 1), done.stderr
    found: dict[str, Any] = done.json()
    return found


def _check(name: str, value: str, device: str, scheme: str, **kw: Any) -> Any:
    return constraints.check(
        name, value, constraints.Context(PRESETS[device], VERSION, scheme, **kw)
    )


# ---------------------------------------------------------------- zentorch


def test_zentorch_linear_dispatch(tmp_path: Path) -> None:
    # vllm/model_executor/layers/utils.py:260 dispatch_cpu_unquantized_gemm: on vLLM's Zen
    # platform with zentorch_linear_unary registered, the layer runs it (0.27.0: :270)
    selector = releases.data_file(f"linear-{VERSION}.json")["selectors"]["unquantized"]
    (entry,) = selector["dispatch_runs"]["cpu"]
    assert entry["source"].startswith("vllm/model_executor/layers/utils.py:260 ")
    model = _model(tmp_path, "qwen3", QWEN3_MOE_T5)
    zen = _resolve(model, "--device", "epyc-genoa", "--install", "all")["selection"]
    assert zen["linear_backend"]["runs"] == "zentorch_linear_unary"
    plain = _resolve(model, "--device", "epyc-genoa", "--install", "pip")["selection"]
    assert "runs" not in plain["linear_backend"]


def test_no_zentorch_fused_moe(tmp_path: Path) -> None:
    # oracle/unquantized.py:202-204: CPU returns the CPU backend with no experts class;
    # the unquantized method's own CPU path (unquantized_fused_moe_method.py:248-252,
    # SGLFusedMOE or CPUFusedMOE) calls no zentorch op: no file under fused_moe/ names it
    data = releases.data_file(f"moe-{VERSION}.json")
    assert "CPUUnquantizedExperts" not in data["experts"]
    model = _model(tmp_path, "qwen3", QWEN3_MOE_T5)
    zen = _resolve(model, "--device", "epyc-genoa", "--install", "all")["selection"]
    assert (zen["moe_backend"]["backend"], zen["moe_backend"]["kernel"]) == ("CPU", None)
    assert "runs" not in zen["moe_backend"]


# ---------------------------------------------------------------- CPU MoE experts


def test_cpu_experts_ask_no_host_feature(tmp_path: Path) -> None:
    # experts/cpu_moe.py:47 CPUExpertsFp8 (:69-70), :205 CPUExpertsMxfp4 (:227-228), :406
    # CPUExpertsInt4 (:434-435), :565 CPUExpertsInt8 (:588-589): is_cpu() alone, so an
    # EPYC (no AMX) and an Arm server take them; oracle/int8.py:82-87 lists
    # CPUExpertsInt8 alone (no Arm nor Zen class)
    data = releases.data_file(f"moe-{VERSION}.json")
    for name in ("CPUExpertsFp8", "CPUExpertsMxfp4", "cpu_moe.CPUExpertsInt4", "CPUExpertsInt8"):
        assert data["experts"][name]["supports"]["current_device"] == {"kind": ["cpu"]}, name
    assert data["oracles"]["int8"]["backend_classes"]["CPU"] == ["CPUExpertsInt8"]
    assert not [k for k in data["experts"] if "Zen" in k or "ArmCPU" in k]
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("fp8", CT_FP8_BLOCK, "CPUExpertsFp8"),
        ("int4", GPTQ_INT4, "CPUExpertsInt4"),
        ("int8", CT_W8A8_INT8, "CPUExpertsInt8"),
    ]
    for name, quantization, kernel in cases:
        model = _model(tmp_path, name, {**QWEN3_30B, "quantization_config": quantization})
        for device in ("epyc-genoa", "graviton4", "xeon-spr"):
            found = _resolve(model, "--device", device)["selection"]["moe_backend"]
            assert (found["status"], found["kernel"]) == ("selected", kernel), (name, device)


# ---------------------------------------------------------------- start-up env writes


def test_start_up_writes() -> None:
    # vllm/platforms/cpu.py:235 VLLM_DISABLE_SHARED_EXPERTS_STREAM=1; :241-242 SD where
    # torch.cpu._is_amx_tile_supported(), over any value set (0.27.0's lines);
    # platforms/rocm.py:859 VLLM_USE_TRITON_AWQ=1 for any quantization method;
    # config/vllm.py:1180-1196 breakable CUDA graphs on for the listed architectures,
    # unless the variable is set
    amx = {"amx_tile": True, "avx512_bf16": True}
    zen4 = {"amx_tile": False, "avx512_bf16": True}
    for host, written in ((amx, True), (zen4, False)):
        found = writes(
            VERSION, {"VLLM_SSM_CONV_STATE_LAYOUT": "DS"}, Launch("cpu", False, False, host)
        )
        assert ("VLLM_SSM_CONV_STATE_LAYOUT" in found.written) is written, host
        assert found.written["VLLM_DISABLE_SHARED_EXPERTS_STREAM"] == "1"
    unknown = writes(VERSION, {}, Launch("cpu", False, False)).unknown
    assert "AMX tiles" in unknown["VLLM_SSM_CONV_STATE_LAYOUT"]
    rocm = writes(VERSION, {}, Launch("rocm", quantized=True, breakable_auto=False))
    assert rocm.written == {"VLLM_USE_TRITON_AWQ": "1"}
    cuda = writes(VERSION, {}, Launch("cuda", quantized=False, breakable_auto=True))
    assert cuda.written == {"VLLM_USE_BREAKABLE_CUDAGRAPH": "1"}
    kept = writes(VERSION, {"VLLM_USE_BREAKABLE_CUDAGRAPH": "0"}, Launch("cuda", False, True))
    assert kept.written == {}


# ---------------------------------------------------------------- --linear-backend


@pytest.mark.parametrize(
    ("listed", "line", "family"),
    [("fp8", 574, "ScaledMM"), ("mp", 756, "WNA16"), ("mxfp8", 802, "MXFP8"),
     ("mxfp4", 842, "MXFP4"), ("nvfp4", 981, "NVFP4")],
)  # fmt: skip
def test_load_time_errors(listed: str, line: int, family: str) -> None:
    # kernels/linear/__init__.py: each list's walk raises 'Failed to find a kernel' at
    # <line>; a --linear-backend with no kernel in the list raises too (:560, :724,
    # :775, :820, :944), as in 0.27.0; no MXFP6 list (Quark's OCP MX layers emulate)
    data = releases.data_file(f"linear-{VERSION}.json")
    said = data["no_kernel_error"][listed]
    assert said["source"] == f"{LINEAR}:{line}"
    assert f"implement the {family} linear layer." in said["error"]
    assert all("error" in s for s in data["no_named_kernel_error"].values())
    assert "mxfp6" not in data["no_named_kernel_error"]


def test_a_backend_with_no_kernel_for_the_layers(tmp_path: Path) -> None:
    # kernels/linear/__init__.py:560 choose_scaled_mm_linear_kernel: no exllama kernel
    # in the FP8 list: ValueError while loading
    model = _model(tmp_path, "fp8", {**QWEN3_MOE_T5, "quantization_config": CT_FP8_STATIC})
    found = _resolve(model, "--device", "h100", "--linear-backend", "exllama")
    (refusal,) = [p for p in found["problems"] if p["field"] == "linear_backend"]
    assert refusal["code"] == "linear-backend-raises"
    assert (
        "ValueError: --linear-backend=exllama was requested but no 'exllama' kernel "
        "exists for this layer type." in refusal["message"]
    )
    assert not found["valid"]


# ---------------------------------------------------------------- the catalogue's spans


def test_moe_spans_hold() -> None:
    # oracle/unquantized.py:150-163 map_unquantized_backend has no marlin (raises);
    # experts/cutlass_moe.py:732-735 CutlassExpertsFp4._supports_parallel_config is
    # ep_size == 1
    assert _check("moe_backend", "marlin", "h100", "unquantized").status == "cannot-run"
    cutlass = _check("moe_backend", "cutlass", "b200", "nvfp4", expert_parallel=True)
    assert cutlass.status == "cannot-run"
    assert "expert parallelism" in cutlass.reason
    assert _check("moe_backend", "cutlass", "b200", "nvfp4").status == "runs"


def test_torch_linear_backend_kernels() -> None:
    # kernels/linear/__init__.py:267-271 the "torch" set: the FP8 per-tensor, channel-wise
    # and row-wise kernels only (no block, NVFP4, MXFP8 or MXFP4 kernel); the NVFP4 and
    # MXFP8 lists raise without one (:944, :775)
    for scheme, device in (("nvfp4", "b200"), ("mxfp8", "h100"), ("fp8_block", "h100")):
        verdict = _check("linear_backend", "torch", device, scheme)
        assert f"'torch' has no {scheme} kernel in vLLM {VERSION}" in verdict.reason
        assert verdict.status == "cannot-run"
        assert "was requested but no 'torch' kernel exists" in verdict.reason
    mxfp4 = _check("linear_backend", "torch", "h100", "mxfp4")
    assert f"'torch' has no mxfp4 kernel in vLLM {VERSION}" in mxfp4.reason
    assert _check("linear_backend", "torch", "h100", "fp8_tensor").status == "runs"


def test_cutedsl_weight_only_nvfp4_walks_the_whole_list() -> None:
    # kernels/linear/__init__.py:936-948: an explicit backend narrows the whole NVFP4
    # list for a weight-only layer too (only auto forces Marlin), and :231-234 puts
    # FlashInferCuteDslNvFp4LinearKernel in flashinfer_cutedsl: not 0.27.0's absence
    verdict = _check("linear_backend", "flashinfer_cutedsl", "b200", "nvfp4_w4a16")
    assert verdict.status == "runs"
    older = constraints.check(
        "linear_backend", "flashinfer_cutedsl",
        constraints.Context(PRESETS["b200"], "0.27.0", "nvfp4_w4a16"),
    )  # fmt: skip
    assert older.status == "cannot-run"


@pytest.mark.parametrize(
    ("value", "device", "status"),
    [("emulation", "a100", "runs"), ("cutlass", "b200", "runs"), ("cutlass", "h100", "cannot-run"),
     ("flashinfer_cutlass", "b200", "runs")],
)  # fmt: skip
def test_nvfp4_weight_only_layers_take_the_nvfp4_kernels(
    value: str, device: str, status: str
) -> None:
    # kernels/linear/__init__.py:936-948: on an explicit backend 0.26.0 walks the whole
    # NVFP4 list for a weight-only layer, so a value serves NVFP4 W4A16 exactly as NVFP4
    # (0.27.0 narrows to the A16 kernels first and raises for these values)
    weight_only = _check("linear_backend", value, device, "nvfp4_w4a16")
    assert weight_only.status == _check("linear_backend", value, device, "nvfp4").status
    assert weight_only.status == status
    older = constraints.check(
        "linear_backend", value, constraints.Context(PRESETS[device], "0.27.0", "nvfp4_w4a16")
    )
    assert older.status == "cannot-run"
    assert "was requested but no" in older.reason


def test_explicit_triton_for_mxfp8_experts_emulates_anywhere() -> None:
    # oracle/mxfp8.py:63-78: --moe-backend triton takes Mxfp8NativeTritonExperts where
    # the platform supports MX, else Mxfp8EmulationTritonExperts, whose
    # _supports_current_device is True (experts/mxfp8_emulation_moe.py:90-91); 0.27.0
    # takes the native class alone (ROCm gfx950/gfx1250)
    for device in ("a100", "mi300x", "mi355x"):
        assert _check("moe_backend", "triton", device, "mxfp8").status == "runs", device
    older = constraints.Context(PRESETS["a100"], "0.27.0", "mxfp8")
    assert constraints.check("moe_backend", "triton", older).status == "cannot-run"
