"""vLLM 0.25.0, added by ``make release VERSION=0.25.0``: what its hand-read
files changed from 0.26.0's, each case citing the 0.25.0
lines (paths inside the wheel) it rests on. Its MoE, linear, attention and verdict picks
are checked against the selection 0.25.0 itself executed in ``test_*_executed.py``."""

from __future__ import annotations

import pytest

from kernelcfg.checks.constraints import Context, check
from kernelcfg.targets.presets import PRESETS
from kernelcfg.vllm import releases
from kernelcfg.vllm.compile_cache import env as compile_env

from .cli_helpers import run
from .moe_release import MoeRelease
from .test_linear_old import kernel

VERSION = "0.25.0"
NEXT = "0.26.0"
LINEAR = "vllm/model_executor/kernels/linear/__init__.py"


def test_the_patch_release_resolves_as_itself_with_its_minors_picks() -> None:
    # docs/releases.md: 0.25.1 changed no selection code against 0.25.0 (its RECORD, 10
    # files); kernelcfg ships it (test_release_patches.py), so no stand-in warning
    result = run("resolve", "--device", "h100", "--vllm-version", "0.25.1", "--format", "json")
    own = run("resolve", "--device", "h100", "--vllm-version", VERSION, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["vllm_version"] == "0.25.1"
    assert "release-stand-in" not in result.stderr + str(data)
    assert data["hash"] == own.json()["hash"]


def test_kernel_config_has_no_bf16x3_router_gemm() -> None:
    # vllm/config/kernel.py:175-181: enable_cutedsl_warmup is followed by moe_backend
    def fields(version: str) -> list[str]:
        data = releases.release_data("vllm", version)
        assert data is not None
        return [f["name"] for f in data["kernel_config"]["fields"]]

    names, newer = fields(VERSION), fields(NEXT)
    assert "enable_bf16x3_router_gemm" not in names
    assert "enable_bf16x3_router_gemm" in newer


# ---------------------------------------------------------------- MoE
def test_trtllm_bf16_is_one_monolithic_class() -> None:
    # experts/trtllm_bf16_moe.py:24 TrtLlmBf16Experts (monolithic; no modular class), so a
    # DeepEP layer on B200 goes on to Triton where 0.26.0 takes TrtLlmBf16ExpertsModular
    old, new = MoeRelease(VERSION), MoeRelease(NEXT)
    at, at_new = old.where("b200", "all"), new.where("b200", "all")
    found = old.pick("unquantized/bf16", "deepseek_v3", "DP8", at)
    assert (found.backend, found.kernel) == ("FLASHINFER_TRTLLM", "TrtLlmBf16Experts")
    layout = "DP8+EP/deepep_v2"
    assert old.pick("unquantized/bf16", "deepseek_v3", layout, at).kernel == "TritonExperts"
    assert new.pick("unquantized/bf16", "deepseek_v3", layout, at_new).kernel == (
        "TrtLlmBf16ExpertsModular"
    )


def test_unquantized_lora_is_always_triton() -> None:
    # oracle/unquantized.py:183-186: LoRA returns TRITON; no TrtLlmBf16LoRAExperts
    data = releases.release_data("moe", VERSION)
    newer = releases.release_data("moe", NEXT)
    assert data is not None
    assert newer is not None
    lora = [r for r in data["oracles"]["unquantized"]["inline"] if "is_lora_enabled" in str(r)]
    assert [r["experts"] for r in lora] == ["TritonExperts"]
    assert "TrtLlmBf16LoRAExperts" not in data["experts"]
    assert "TrtLlmBf16LoRAExperts" in newer["experts"]


def test_wna16_has_no_emulation_backend() -> None:
    # oracle/int_wna16.py:99-108 priority, :111-124 map_wna16_backend (marlin, humming,
    # flashinfer_trtllm); compressed_tensors_moe.py:103-150 no --moe-backend emulation route
    data = releases.release_data("moe", VERSION)
    assert data is not None
    wna16 = data["oracles"]["wna16"]
    assert "EMULATION" not in wna16["priority"]
    assert set(wna16["values"]) == {"marlin", "humming", "flashinfer_trtllm"}
    assert "'emulation'" not in wna16["explicit"]["unknown"]
    assert "Int4EmulationTritonExperts" not in data["experts"]
    for name in ("int4_w4a16/compressed_tensors.g128", "int4_w4a16/compressed_tensors.g32"):
        assert "emulation" not in str(data["variants"][name]["inline"])


def test_trtllm_fp8_monolithic_ignores_sequence_parallel() -> None:
    # experts/trtllm_fp8_moe.py:117-122: eplb only (0.26.0 also refuses sequence parallel)
    data = releases.release_data("moe", VERSION)
    newer = releases.release_data("moe", NEXT)
    assert data is not None
    assert newer is not None
    mine = data["experts"]["TrtLlmFp8ExpertsMonolithic"]["supports"]["parallel_config"]
    theirs = newer["experts"]["TrtLlmFp8ExpertsMonolithic"]["supports"]["parallel_config"]
    assert mine["attr"] == {"enable_eplb": False}
    assert theirs["attr"]["is_sequence_parallel"] is False


# ---------------------------------------------------------------- linear
def test_no_rdna_hybrid_w4a16_kernel() -> None:
    # kernels/linear/__init__.py:404-409 the ROCm mixed-precision list; no
    # mixed_precision/rdna_hybrid_w4a16.py in the wheel
    data = releases.release_data("linear", VERSION)
    newer = releases.release_data("linear", NEXT)
    assert data is not None
    assert newer is not None
    assert data["candidate_lists"]["mp"]["rocm"] == [
        "RDNA3W4A16LinearKernel",
        "TritonW4A16LinearKernel",
        "ConchLinearKernel",
        "ExllamaLinearKernel",
    ]
    assert "RDNAHybridW4A16LinearKernel" not in data["kernels"]
    assert "RDNAHybridW4A16LinearKernel" in newer["candidate_lists"]["mp"]["rocm"]


def test_linear_errors_at_the_releases_lines() -> None:
    # the raises of __init__.py: 'Failed to find a kernel' :570 :752 :798 :838 :977, and
    # a --linear-backend without a kernel in the list (every list raises) :556 :720 :771
    # :816 :940; zentorch_linear_unary on vLLM's Zen platform, layers/utils.py:253-269
    data = releases.release_data("linear", VERSION)
    assert data is not None
    lines = {k: v["source"].split()[0] for k, v in data["no_kernel_error"].items()}
    assert lines["fp8"] == f"{LINEAR}:570"
    assert lines["nvfp4"] == f"{LINEAR}:977"
    named = data["no_named_kernel_error"]
    assert all("error" in v for v in named.values())
    assert named["mp"]["source"] == f"{LINEAR}:720 choose_mp_linear_kernel"
    assert "mxfp6" not in named
    runs = data["selectors"]["unquantized"]["dispatch_runs"]["cpu"]
    assert [r["kernel"] for r in runs] == ["zentorch_linear_unary"]


@pytest.mark.parametrize("value", ["cutlass", "flashinfer_cutlass", "emulation", "fbgemm"])
def test_nvfp4_weight_only_takes_a_named_backend(value: str) -> None:
    # __init__.py:918-920 forces Marlin for a weight-only NVFP4 layer on auto only; a named
    # backend walks the filtered NVFP4 list (:932-975), as 0.25.0's executed verdicts show
    ctx = Context(PRESETS["b200"], VERSION, "nvfp4_w4a16", expert_parallel=False)
    problem = check("linear_backend", value, ctx).problem()
    assert problem is None or problem.severity != "error"  # fbgemm: needs fbgemm_gpu
    assert kernel(VERSION, "nvfp4/w4a16", "b200", "all") == "MarlinNvFp4LinearKernel"


def test_explicit_triton_mxfp8_moe_emulates_on_cuda() -> None:
    # oracle/mxfp8.py:63-77: --moe-backend triton -> Mxfp8EmulationTritonExperts off MX
    ctx = Context(PRESETS["h100"], VERSION, "mxfp8", expert_parallel=False)
    assert check("moe_backend", "triton", ctx).problem() is None
    newer = Context(PRESETS["h100"], "0.27.0", "mxfp8", expert_parallel=False)
    problem = check("moe_backend", "triton", newer).problem()
    assert problem is not None
    assert problem.severity == "error"


# ---------------------------------------------------------------- attention
def test_rocm_aiter_unified_attention_is_bf16_only() -> None:
    # v1/attention/backends/rocm_aiter_unified_attn.py:30 supported_dtypes = [bfloat16]
    data = releases.release_data("selector", VERSION)
    newer = releases.release_data("selector", NEXT)
    assert data is not None
    assert newer is not None
    assert data["backends"]["ROCM_AITER_UNIFIED_ATTN"]["dtypes"] == ["bfloat16"]
    assert "float16" in newer["backends"]["ROCM_AITER_UNIFIED_ATTN"]["dtypes"]


def test_mla_model_types() -> None:
    # transformers_utils/model_arch_config_convertor.py:258-274 is_deepseek_mla: 'AXK1'
    # spelled upper case, no longcat_flash_ngram
    data = releases.release_data("selector", VERSION)
    newer = releases.release_data("selector", NEXT)
    assert data is not None
    assert newer is not None
    types = data["models"]["mla_model_types"]
    assert "AXK1" in types
    assert "axk1" not in types
    assert "longcat_flash_ngram" not in types
    assert set(newer["models"]["mla_model_types"]) - set(types) == {"axk1", "longcat_flash_ngram"}
    assert len(types) == 16


# ---------------------------------------------------------------- env factors
def test_json_loads_variable() -> None:
    # vllm/envs.py:1602-1604 VLLM_FLASHINFER_ALLREDUCE_FUSION_THRESHOLDS_MB: json.loads of
    # the text itself (no file read); gone in 0.26.0
    data = releases.release_data("env", VERSION)
    assert data is not None
    entry = data["variables"]["VLLM_FLASHINFER_ALLREDUCE_FUSION_THRESHOLDS_MB"]
    assert (entry["kind"], entry["default"]) == ("json_loads", {})
    assert compile_env.parse_raw(entry, '{"2": 64}') == {"2": 64}
    newer = releases.release_data("env", NEXT)
    assert newer is not None
    assert "VLLM_FLASHINFER_ALLREDUCE_FUSION_THRESHOLDS_MB" not in newer["variables"]


# ---------------------------------------------------------------- catalogue spans
# constraints.json spans that began at 0.26.0, read again in 0.25.0's wheel: each holds
SPANS = [
    # experts/cutlass_moe.py:732-735 CutlassExpertsFp4: ep_size == 1
    ("moe_backend", "cutlass", "nvfp4", True, "b200"),
    # oracle/unquantized.py:149-162 map_unquantized_backend has no marlin (ValueError)
    ("moe_backend", "marlin", "unquantized", False, "h100"),
    # kernels/linear/__init__.py:264-268 'torch': per-tensor, channel-wise, row-wise FP8 only
    ("linear_backend", "torch", "fp8_block", False, "h100"),
    ("linear_backend", "torch", "nvfp4", False, "b200"),
    ("linear_backend", "torch", "mxfp8", False, "h100"),
]


@pytest.mark.parametrize(("flag", "value", "scheme", "ep", "device"), SPANS)
def test_spans_from_0260_hold_for_0250(
    flag: str, value: str, scheme: str, ep: bool, device: str
) -> None:
    def severity(version: str) -> str | None:
        ctx = Context(PRESETS[device], version, scheme, expert_parallel=ep)
        problem = check(flag, value, ctx).problem()
        return None if problem is None else problem.severity

    assert severity(VERSION) == severity(NEXT) == "error"


@pytest.mark.parametrize("value", ["flashinfer_trtllm", "flashinfer_cudnn"])
def test_flashinfer_nvfp4_weight_only_takes_a_named_backend(value: str) -> None:
    # __init__.py:918-920 forces Marlin on auto only; a named backend walks the CUDA NVFP4
    # list (:932-975), FlashInferTrtllmNvFp4LinearKernel :451 and the cuDNN one :452 in it
    # (0.25.0's executed verdicts: 'cond' for nvfp4 and nvfp4_w4a16 alike on B200)
    for scheme in ("nvfp4", "nvfp4_w4a16"):
        ctx = Context(PRESETS["b200"], VERSION, scheme, expert_parallel=False)
        problem = check("linear_backend", value, ctx).problem()
        assert problem is not None
        assert problem.severity == "warning"  # the library's own run-time device check


def test_flashinfer_trtllm_has_no_mxfp8_linear_kernel() -> None:
    # __init__.py:232-234 the 'flashinfer_trtllm' set is the NVFP4 kernel alone; the CUDA
    # MXFP8 list (:422-429) has no TRT-LLM kernel (executed verdicts: 'refused' on B200)
    ctx = Context(PRESETS["b200"], VERSION, "mxfp8", expert_parallel=False)
    problem = check("linear_backend", "flashinfer_trtllm", ctx).problem()
    assert problem is not None
    assert problem.severity == "error"
    newer = Context(PRESETS["b200"], NEXT, "mxfp8", expert_parallel=False)
    assert check("linear_backend", "flashinfer_trtllm", newer).problem() is None
