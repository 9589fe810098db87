"""vLLM 0.24.0, added by ``make release VERSION=0.24.0``: what its hand-read
files changed from 0.25.0's, each case citing the 0.24.0
lines (paths inside the wheel) it rests on. Its MoE, linear, attention and verdict picks
are checked against the selection 0.24.0 itself executed in ``test_*_executed.py``."""

from __future__ import annotations

from typing import Any

import pytest

from kernelcfg.checks.constraints import Context, check
from kernelcfg.targets.presets import PRESETS
from kernelcfg.vllm import releases
from kernelcfg.vllm.compile_cache.start_up import Launch, writes

from .cli_helpers import run
from .moe_release import MoeRelease
from .test_linear_old import kernel

VERSION = "0.24.0"
NEXT = "0.25.0"
LINEAR = "vllm/model_executor/kernels/linear/__init__.py"


def _data(kind: str, version: str = VERSION) -> dict[str, Any]:
    found = releases.release_data(kind, version)
    assert found is not None, (kind, version)
    return dict(found)


def _severity(flag: str, value: str, device: str, scheme: str, version: str = VERSION) -> Any:
    ctx = Context(PRESETS[device], version, scheme, expert_parallel=False)
    problem = check(flag, value, ctx).problem()
    return None if problem is None else problem.severity


def test_kernel_config_has_no_cutedsl_warmup() -> None:
    # vllm/config/kernel.py:166-175: enable_flashinfer_autotune, moe_backend, linear_backend
    # (0.25.0 adds enable_cutedsl_warmup, :178-179)
    def fields(version: str) -> list[str]:
        return [f["name"] for f in _data("vllm", version)["kernel_config"]["fields"]]

    assert "enable_cutedsl_warmup" not in fields(VERSION)
    assert "enable_cutedsl_warmup" in fields(NEXT)


def test_backend_values() -> None:
    # config/kernel.py:122-139 MoEBackend without 'hpc'; :140-158 LinearBackend without
    # 'humming', 'xpu', 'xpu_woq' (each a value 0.25.0 adds)
    mine, newer = _data("vllm")["choices"], _data("vllm", NEXT)["choices"]
    assert set(newer["MoEBackend"]) - set(mine["MoEBackend"]) == {"hpc"}
    assert set(newer["LinearBackend"]) - set(mine["LinearBackend"]) == {"humming", "xpu", "xpu_woq"}
    result = run("resolve", "--device", "h100", "--vllm-version", VERSION, "--moe-backend", "hpc")
    assert result.exit_code == 2
    assert "hpc" in result.stderr


# ---------------------------------------------------------------- MoE
@pytest.mark.parametrize("variant", ["fp8_block/compressed_tensors", "fp8_channel/online.ptpc"])
def test_fp8_has_no_humming_experts(variant: str) -> None:
    # oracle/fp8.py:73-126 _get_priority_backends without HUMMING (0.25.0 tries it after
    # Marlin): on A100 under the FlashInfer NVLink all2all, which Marlin refuses, 0.24.0
    # raises (:242 select_fp8_moe_backend; executed 'No FP8 MoE backend supports ...')
    old, new = MoeRelease(VERSION), MoeRelease(NEXT)
    layout = "DP8+EP/flashinfer_nvlink_one_sided"
    mine = old.pick(variant, "deepseek_v3", layout, old.where("a100", "all"))
    theirs = new.pick(variant, "deepseek_v3", layout, new.where("a100", "all"))
    assert mine.kernel is None
    assert theirs.kernel == "HummingIndexedExperts"
    assert "HUMMING" not in _data("moe")["oracles"]["fp8"]["priority"]


def test_oracles_without_humming_hpc_cpu() -> None:
    # oracle/fp8.py:44-62 no HUMMING nor HPC; nvfp4.py:165-180 no HUMMING; int8.py:32-39
    # TRITON only (no CPU experts: experts/cpu_moe.py has no CPUExpertsInt8);
    # int_wna16.py:79-93 no HUMMING; mxfp8.py:19-24 no AITER_MXFP8 nor HUMMING
    oracles = _data("moe")["oracles"]
    assert "HPC" not in oracles["fp8"]["backend_classes"]
    assert "HUMMING" not in oracles["nvfp4"]["priority"]
    assert oracles["int8"]["priority"] == ["TRITON"]
    assert "priority_by" not in oracles["int8"]
    assert "HUMMING" not in oracles["wna16"]["priority"]
    assert oracles["mxfp8"]["priority"] == ["FLASHINFER_TRTLLM", "DEEPGEMM", "MARLIN", "XPU"]
    experts = _data("moe")["experts"]
    assert not {"HPCExperts", "AiterMxfp8Experts", "CPUExpertsInt8"} & set(experts)
    assert "CPU" in _data("moe", NEXT)["oracles"]["int8"]["priority"]


def test_mxfp4_has_no_emulation_fallback() -> None:
    # oracle/mxfp4.py:304-321 _get_priority_backends_for_gpt_oss ends at XPU (0.25.0 adds
    # EMULATION): a Quark W4A4 MXFP4 layer on H100 raises (:551-559)
    old, new = MoeRelease(VERSION), MoeRelease(NEXT)
    mine = old.pick("mxfp4/quark.w4a4", "deepseek_v3", "DP8", old.where("h100", "all"))
    theirs = new.pick("mxfp4/quark.w4a4", "deepseek_v3", "DP8", new.where("h100", "all"))
    assert mine.kernel is None
    assert theirs.backend == "EMULATION"


def test_mxfp8_rocm_fallback_is_native_mxfp8() -> None:
    # oracle/mxfp8.py:79-88 _select_rocm_mxfp8_backend returns NATIVE_MXFP8 (0.25.0 names
    # it TRITON_MXFP8); 'triton' is no MXFP8 value (:26-31), so vLLM raises for it
    forced = [f["backend"] for f in _data("moe")["oracles"]["mxfp8"]["forced"]]
    assert forced == ["NATIVE_MXFP8", "EMULATION"]
    assert _severity("moe_backend", "triton", "h100", "mxfp8") == "error"
    assert _severity("moe_backend", "triton", "h100", "mxfp8", NEXT) is None


def test_unquantized_swigluoai_keeps_flashinfer_first() -> None:
    # oracle/unquantized.py:48-86: no SWIGLUOAI demotion (0.25.0 :87-93), so gpt-oss's
    # BF16 experts on B200 take FlashInfer CUTLASS (executed: FlashInferExperts)
    old, new = MoeRelease(VERSION), MoeRelease(NEXT)
    mine = old.pick("unquantized/bf16", "gpt_oss", "TP1", old.where("b200", "all"))
    theirs = new.pick("unquantized/bf16", "gpt_oss", "TP1", new.where("b200", "all"))
    assert mine.kernel == "FlashInferExperts"
    assert theirs.kernel != "FlashInferExperts"


def test_trtllm_fp8_modular_refuses_flashinfer_nvlink() -> None:
    # experts/trtllm_fp8_moe.py:97-104 TrtLlmFp8ExpertsModular: no FlashInfer NVLink
    # all2all (0.25.0 takes both); :79-82 SILU and RELU2_NO_MUL only
    experts = _data("moe")["experts"]
    modular = experts["TrtLlmFp8ExpertsModular"]["supports"]
    assert "use_fi_nvl_one_sided_kernels" not in str(modular["parallel_config"])
    assert modular["activation"] == {"attr": {"activation": ["SILU", "RELU2_NO_MUL"]}}
    newer = _data("moe", NEXT)["experts"]["TrtLlmFp8ExpertsModular"]["supports"]
    assert "use_fi_nvl_one_sided_kernels" in str(newer["parallel_config"])


def test_b12x_experts_take_expert_parallel() -> None:
    # experts/flashinfer_b12x_moe.py:143-144 no non-gated MoE, :160-161 SILU only,
    # :164-165 any parallel config (0.25.0 refuses expert parallel)
    b12x = _data("moe")["experts"]["FlashInferB12xExperts"]["supports"]
    assert b12x["parallel_config"] is True
    assert b12x["activation"] == {"attr": {"activation": ["SILU"]}}
    ctx = Context(PRESETS["rtx-pro-6000"], VERSION, "nvfp4", expert_parallel=True)
    newer = Context(PRESETS["rtx-pro-6000"], NEXT, "nvfp4", expert_parallel=True)
    problem, older = check("moe_backend", "flashinfer_b12x", ctx).problem(), None
    older = check("moe_backend", "flashinfer_b12x", newer).problem()
    assert problem is None or problem.severity != "error"
    assert older is not None
    assert older.severity == "error"


def test_humming_moe_value_is_mxfp4_only() -> None:
    # oracle/mxfp4.py:283 maps 'humming'; the FP8 map (fp8.py:222-236) does not; the
    # unquantized oracle raises for any other value than its own (unquantized.py:136-149)
    assert _severity("moe_backend", "humming", "h100", "mxfp4") != "error"  # humming package
    assert _severity("moe_backend", "humming", "h100", "fp8_block") == "error"
    assert _severity("moe_backend", "humming", "h100", "unquantized") == "error"
    assert _severity("moe_backend", "humming", "h100", "fp8_block", NEXT) != "error"


@pytest.mark.parametrize("value", ["marlin", "deep_gemm", "flashinfer_trtllm", "cutlass"])
def test_wna16_moe_ignores_the_value(value: str) -> None:
    # oracle/int_wna16.py:96-168 select_wna16_moe_backend reads no --moe-backend (0.25.0's
    # map_wna16_backend is not in the wheel): int4_w4a16 layers choose as on auto
    assert _data("moe")["oracles"]["wna16"]["values"] == {}
    assert _data("moe", NEXT)["oracles"]["wna16"]["values"]
    ctx = Context(PRESETS["h100"], VERSION, "int4_w4a16", expert_parallel=False)
    problem = check("moe_backend", value, ctx).problem()
    assert problem is not None
    assert problem.severity == "warning"
    assert "ignored for int4_w4a16" in problem.message


# ---------------------------------------------------------------- linear
def test_no_humming_linear_kernels_but_mixed_precision() -> None:
    # __init__.py:277-440 the _POSSIBLE_*_KERNELS lists: no Humming FP8, INT8, MXFP8,
    # MXFP4, NVFP4 kernels; :359-368 HummingLinearKernel right after Marlin
    data, newer = _data("linear"), _data("linear", NEXT)
    names = {n for lst in data["candidate_lists"].values() for k in lst.values() for n in k}
    assert {n for n in names if "Humming" in n} == {"HummingLinearKernel"}
    mp = data["candidate_lists"]["mp"]["cuda"]
    assert mp.index("HummingLinearKernel") == mp.index("MarlinLinearKernel") + 1
    assert newer["candidate_lists"]["mp"]["cuda"][-1] == "HummingLinearKernel"
    # a W8A16 FP8 layer on A100: Marlin (_POSSIBLE_WFP8A16_KERNELS, :343-346), where
    # 0.25.0 tries Humming first
    assert kernel(VERSION, "w8a16_fp8/channel", "a100", "all") == "MarlinFP8ScaledMMLinearKernel"
    assert kernel(NEXT, "w8a16_fp8/channel", "a100", "all") == "HummingFP8ScaledMMLinearKernel"


def test_humming_mixed_precision_refuses_zero_points() -> None:
    # mixed_precision/humming.py:27-28 'Humming linear kernel only supports symmetric
    # weights'; no 'humming' --linear-backend (config/kernel.py:140-158)
    humming = _data("linear")["kernels"]["HummingLinearKernel"]
    assert humming["linear_backend_values"] == []
    assert {"attr": {"zero_points": True}} in [c["reject_if"] for c in humming["checks"]]


def test_xpu_fp8_is_one_kernel() -> None:
    # scaled_mm/xpu.py:19-37 XPUFP8ScaledMMLinearKernel serves FP8 and W8A16 FP8 on XPU
    # (__init__.py:313-315, :353-355; 0.25.0 has a W8A8 and a W8A16 class)
    lists = _data("linear")["candidate_lists"]
    assert lists["fp8"]["xpu"] == lists["wfp8a16"]["xpu"] == ["XPUFP8ScaledMMLinearKernel"]


def test_linear_errors_at_the_releases_lines() -> None:
    # the raises of __init__.py: 'Failed to find a kernel' :533 :715 :761 :801 :940, and
    # a --linear-backend without a kernel in the list :519 :683 :734 :779 :903
    data = _data("linear")
    lines = {k: v["source"].split()[0] for k, v in data["no_kernel_error"].items()}
    assert lines["fp8"] == f"{LINEAR}:533"
    assert lines["mp"] == f"{LINEAR}:715"
    assert lines["nvfp4"] == f"{LINEAR}:940"
    named = data["no_named_kernel_error"]
    assert named["mp"]["source"] == f"{LINEAR}:683 choose_mp_linear_kernel"
    assert named["nvfp4"]["source"] == f"{LINEAR}:903 init_nvfp4_linear_kernel"


@pytest.mark.parametrize("value", ["cutlass", "flashinfer_cutlass", "emulation", "fbgemm"])
def test_nvfp4_weight_only_takes_a_named_backend(value: str) -> None:
    # __init__.py:880-882 forces Marlin for a weight-only NVFP4 layer on auto only; a named
    # backend walks the filtered NVFP4 list (:897-938), as 0.24.0's executed verdicts show
    assert _severity("linear_backend", value, "b200", "nvfp4_w4a16") != "error"
    assert kernel(VERSION, "nvfp4/w4a16", "b200", "all") == "MarlinNvFp4LinearKernel"


# ---------------------------------------------------------------- attention
def test_no_flash_attn_mla_sparse_nor_hpc_attention() -> None:
    # v1/attention/backends/registry.py has neither; platforms/cuda.py:136-142 the sparse
    # MLA list without FLASH_ATTN_MLA_SPARSE
    data, newer = _data("selector"), _data("selector", NEXT)
    assert not {"FLASH_ATTN_MLA_SPARSE", "HPC_ATTN"} & set(data["backends"])
    orders = [b for p in data["platforms"]["cuda"]["priorities"] for b in p["order"]]
    assert "FLASH_ATTN_MLA_SPARSE" not in orders
    assert {"FLASH_ATTN_MLA_SPARSE", "HPC_ATTN"} <= set(newer["backends"])
    attention = {b[0] for b in _data("attention")["backends"]}
    assert not {"FLASH_ATTN_MLA_SPARSE", "HPC_ATTN"} & attention


# ---------------------------------------------------------------- start-up writes
def test_start_up_writes_hold() -> None:
    # platforms/cpu.py:234 VLLM_DISABLE_SHARED_EXPERTS_STREAM=1, :240-241 SD where
    # torch.cpu._is_amx_tile_supported(); platforms/rocm.py:846 VLLM_USE_TRITON_AWQ=1 for
    # any quantization method; config/vllm.py:1079-1093 breakable CUDA graphs on for the
    # listed architectures unless the variable is set
    cpu = writes(VERSION, {}, Launch("cpu", False, False, {"amx_tile": True}))
    assert cpu.written == {
        "VLLM_DISABLE_SHARED_EXPERTS_STREAM": "1",
        "VLLM_SSM_CONV_STATE_LAYOUT": "SD",
    }
    rocm = writes(VERSION, {}, Launch("rocm", quantized=True, breakable_auto=False))
    assert rocm.written == {"VLLM_USE_TRITON_AWQ": "1"}
    cuda = writes(VERSION, {}, Launch("cuda", quantized=False, breakable_auto=True))
    assert cuda.written == {"VLLM_USE_BREAKABLE_CUDAGRAPH": "1"}


# ---------------------------------------------------------------- catalogue spans
# constraints.json spans that began at 0.25.0, read again in 0.24.0's wheel: each holds
SPANS = [
    # experts/cutlass_moe.py:732-735 CutlassExpertsFp4: ep_size == 1
    ("moe_backend", "cutlass", "nvfp4", True, "b200"),
    # oracle/unquantized.py:136-149 map_unquantized_backend has no marlin (ValueError)
    ("moe_backend", "marlin", "unquantized", False, "h100"),
    # kernels/linear/__init__.py:242-246 'torch': per-tensor, channel-wise, row-wise FP8 only
    ("linear_backend", "torch", "fp8_block", False, "h100"),
    ("linear_backend", "torch", "nvfp4", False, "b200"),
    ("linear_backend", "torch", "mxfp8", False, "h100"),
]


@pytest.mark.parametrize(("flag", "value", "scheme", "ep", "device"), SPANS)
def test_spans_from_0250_hold_for_0240(
    flag: str, value: str, scheme: str, ep: bool, device: str
) -> None:
    def severity(version: str) -> str | None:
        ctx = Context(PRESETS[device], version, scheme, expert_parallel=ep)
        problem = check(flag, value, ctx).problem()
        return None if problem is None else problem.severity

    assert severity(VERSION) == severity(NEXT) == "error"


def test_flashinfer_trtllm_has_no_mxfp8_linear_kernel() -> None:
    # __init__.py:218-220 the 'flashinfer_trtllm' set is the NVFP4 kernel alone; the CUDA
    # MXFP8 list (:388-393) has no TRT-LLM kernel
    assert _severity("linear_backend", "flashinfer_trtllm", "b200", "mxfp8") == "error"


# ---------------------------------------------------------------- vllm serve
@pytest.mark.parametrize(
    ("args", "said"),
    [
        # engine/arg_utils.py: no --enable-per-request-metrics, --jit-monitor-mode,
        # --mm-ipc-gpu-memory-gb, --model-class-overrides (0.25.0 adds the four)
        (["--enable-per-request-metrics"], "unrecognized arguments"),
        (["--jit-monitor-mode", "warn"], "unrecognized arguments"),
        # config/cache.py:19 CacheDType: no int4_per_token_head
        (["--kv-cache-dtype", "int4_per_token_head"], "invalid choice"),
        # config/kernel.py:166-175: no enable_cutedsl_warmup field
        (["--kernel-config", '{"enable_cutedsl_warmup": false}'], "enable_cutedsl_warmup"),
    ],
)
def test_serve_refuses_what_0250_added(args: list[str], said: str) -> None:
    options = _data("serve")["options"]
    newer = _data("serve", NEXT)["options"]
    assert {o["dest"] for o in options} < {o["dest"] for o in newer}
    launch = ["--", "vllm", "serve", "Qwen/Qwen3-8B", *args]
    result = run("resolve", "--device", "h100", "--vllm-version", VERSION, *launch)
    assert result.exit_code == 2
    assert said in result.stderr
    assert run("resolve", "--device", "h100", "--vllm-version", NEXT, *launch).exit_code == 0
