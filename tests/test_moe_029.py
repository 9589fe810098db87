"""``--moe-backend auto`` on vLLM 0.29.0: hand-derived expectations from the 0.29.0 source
(no golden exists for it), for what differs from 0.30.0 and for the common cases
(those several releases share are in test_moe_common_picks.py). Each case
names the 0.29.0 lines (under vllm/) that decide it; ``FM`` = model_executor/layers/fused_moe,
``CT`` = model_executor/layers/quantization/compressed_tensors/compressed_tensors_moe."""

from __future__ import annotations

import pytest

from .moe_release import MoeRelease, reasons
from .test_moe_golden import layer

pytestmark = pytest.mark.golden

RELEASE = MoeRelease("0.29.0")
MODEL = RELEASE.model
where = RELEASE.where
pick = RELEASE.pick
AITER = {"VLLM_ROCM_USE_AITER": "1"}


def test_data_is_029() -> None:
    # FM/oracle/mxfp4.py:102-140 has no AITER_TRITON_MXFP4_BF16 and :234-242 gives
    # AITER_MXFP4_BF16 [AiterExperts, AiterW4A16ExpertsMonolithic]; :279-318 no
    # aiter_triton_mxfp4_bf16 value; FM/oracle/int_wna16.py:51-60 no RDNA3 (experts/rdna3_moe.py
    # does not exist); quantization/utils/quant_utils.py has no kFp8Static128BlockE8M0Sym.
    assert MODEL is not None
    data = MODEL.data
    assert data["vllm_version"] == "0.29.0"
    assert "Rdna3WNA16Experts" not in data["experts"]
    mxfp4 = data["oracles"]["mxfp4"]
    assert "AITER_TRITON_MXFP4_BF16" not in mxfp4["priority"]
    assert "CPU" not in mxfp4["priority"]
    assert mxfp4["backend_classes"]["AITER_MXFP4_BF16"] == [
        "AiterExperts",
        "AiterW4A16ExpertsMonolithic",
    ]
    assert "aiter_triton_mxfp4_bf16" not in mxfp4["values"]
    wna16 = data["oracles"]["wna16"]
    assert "RDNA3" not in wna16["priority"]
    assert "rdna3" not in wna16["values"]
    assert "kFp8Static128BlockE8M0Sym" not in data["key_strings"]


# ---------------------------------------------------------------- common cases


def test_h100_gpt_oss_and_unquantized_triton() -> None:
    # FM/oracle/mxfp4.py:321-341: the gpt-oss list without AITER_TRITON_MXFP4_BF16 or CPU ->
    # TRITON with the OAI monolithic class on Hopper; FM/oracle/unquantized.py:76-79: the
    # FlashInfer unquantized kernels go last on Hopper.
    found = pick("mxfp4/gpt_oss", "gpt_oss", "TP1", where("h100", "pip"))
    assert (found.backend, found.kernel) == (
        "TRITON",
        "OAITritonMxfp4ExpertsMonolithic",
    )
    assert "AITER_TRITON_MXFP4_BF16" not in [b for b, _ in found.candidates]
    found = pick("unquantized/bf16", "qwen3_moe", "TP1", where("h100", "image"))
    assert (found.backend, found.kernel) == ("TRITON", "TritonExperts")


# ---------------------------------------------------------------- what differs from 0.30
def test_mi300x_gpt_oss_no_aiter_triton_w4a16() -> None:
    # FM/oracle/mxfp4.py:234-242: AiterW4A16ExpertsMonolithic is AITER_MXFP4_BF16's second
    # class, and experts/aiter_mxfp4_w4a8_moe.py:633-639 takes gfx950/gfx1250 only (no
    # gfx942), so MI300X TP8+EP falls through to TRITON (0.30: AITER_TRITON_MXFP4_BF16).
    found = pick("mxfp4/gpt_oss", "gpt_oss", "TP8+EP", where("mi300x", "all", AITER))
    assert (found.backend, found.kernel) == (
        "TRITON",
        "OAITritonMxfp4ExpertsMonolithic",
    )
    why = reasons(found)[("AITER_MXFP4_BF16", "AiterW4A16ExpertsMonolithic")]
    assert why == "kernel does not support current device AMD Instinct MI300X"


def test_rdna3_compressed_tensors_goes_to_its_own_method() -> None:
    # CT/compressed_tensors_moe.py:91-98: on ROCm rocm_moe_rdna.is_supported (:16-28: 4 bits,
    # on_gfx1100, torch.ops._rocm_C.moe_gptq_gemm_rdna3) returns
    # CompressedTensorsWNA16RDNA3MoEMethod (compressed_tensors_moe_wna16_rdna3.py:57), whose
    # apply (:126) runs the HIP kernel; the inherited __init__'s oracle pick is TRITON.
    # Without the ROCm ops the plain method and the oracle's TRITON class.
    found = pick(
        "int4_w4a16/compressed_tensors.g128",
        "qwen3_moe",
        "TP1",
        where("rx-7900-xtx", "image"),
    )
    assert (found.status, found.chosen_by, found.backend, found.kernel) == (
        "selected",
        "inline",
        "TRITON",
        "CompressedTensorsWNA16RDNA3MoEMethod (moe_gptq_gemm_rdna3)",
    )
    found = pick(
        "int4_w4a16/compressed_tensors.g128",
        "qwen3_moe",
        "TP1",
        where("rx-7900-xtx", "pip"),
    )
    assert (found.chosen_by, found.backend, found.kernel) == (
        "oracle",
        "TRITON",
        "TritonWNA16Experts",
    )
    assert "RDNA3" not in [b for b, _ in found.candidates]


def test_cpu_mxfp4_after_the_loop() -> None:
    # FM/oracle/mxfp4.py:618-627: on CPU, after the (filtered) loop, CPU is tried with
    # activation None whatever the checkpoint declares, so Quark W4A4 runs on CPUExpertsMxfp4
    # (0.30 lists CPU as a BF16 variant and filters it out); :344-366 the DeepSeek-V4 list has
    # no CPU branch, so :708 raises.
    at = where("cpu", "all")
    found = pick("mxfp4/quark.w4a4", "qwen3_moe", "TP1", at)
    assert (found.backend, found.kernel) == ("CPU", "CPUExpertsMxfp4")
    assert found.candidates[-1][0] == "CPU"
    found = pick("mxfp4/mxfp4_config", "deepseek_v4", "TP1", at)
    assert (found.status, found.message) == (
        "error",
        "NotImplementedError: No MXFP4 MoE backend supports the deployment configuration.",
    )
    assert found.candidates[0][0] == "FLASHINFER_TRTLLM_MXFP4_MXFP8"


def test_cpu_fp8_block_refuses_deepseek_routing() -> None:
    # experts/cpu_moe.py:609-618: CPUExpertsFp8 takes Default / Renormalize / RenormalizeNaive
    # only (0.30 adds DeepSeekV3 / DeepseekV4), so DeepSeek-V3 on CPU finds no backend;
    # FM/oracle/fp8.py:445-452 returns NONE off CUDA/ROCm.
    found = pick("fp8_block/fp8_config", "deepseek_v3", "TP1", where("cpu", "all"))
    assert (found.status, found.backend) == ("no_kernel", "NONE")
    assert reasons(found)[("CPU", "CPUExpertsFp8")] == "kernel does not support routing method 2"


def test_trtllm_fp8_swiglu_parameters_need_mxfp8() -> None:
    # experts/trtllm_fp8_moe.py:88-96: a SwiGLU clamp/alpha/beta is refused unless the keys are
    # (kMxfp8Static, kMxfp8Dynamic) (0.30 also takes block FP8 with SILU), so block FP8 with
    # swiglu_limit on B200 goes on to DEEPGEMM (FM/oracle/fp8.py:81-96).
    found = pick(
        "fp8_block/fp8_config",
        "qwen3_moe",
        "TP1",
        where("b200", "image"),
        swiglu_limit=7.0,
    )
    assert reasons(found)[("FLASHINFER_TRTLLM", "TrtLlmFp8ExpertsMonolithic")] == (
        "the TRTLLM FP8 kernels apply the SwiGLU alpha/beta/clamp parameters only for MXFP8 weights"
    )
    assert (found.backend, found.kernel) == ("DEEPGEMM", "TritonOrDeepGemmExperts")


def test_batched_triton_fixed_activation_list() -> None:
    # experts/fused_batched_moe.py:841-851: BatchedTritonExperts takes the fixed eight
    # activations on every platform (0.30 uses the masked list off XPU, with SWIGLUSTEP), so
    # a SWIGLUSTEP layer under DeepEP low-latency finds no unquantized backend on H100.
    found = pick(
        "unquantized/bf16",
        "qwen3_moe",
        "DP8+EP/deepep_low_latency",
        where("h100", "image"),
        activation="SWIGLUSTEP",
    )
    assert (found.status, found.message) == (
        "error",
        "NotImplementedError: No Unquantized MoE backend supports the deployment configuration.",
    )
    why = reasons(found)[("BATCHED_TRITON", "BatchedTritonExperts")]
    assert why == "kernel does not support MoEActivation.SWIGLUSTEP activation"


def test_flashinfer_cutedsl_has_no_situ() -> None:
    # experts/flashinfer_cutedsl_moe.py:98-104: no SITU in 0.29 (0.30 adds it).
    assert MODEL is not None
    feats = layer("qwen3_moe", "TP1")
    feats.update(activation="SITU", activation_situ_beta=1.0)
    found = MODEL.probe("nvfp4/modelopt", feats, where("b200", "image"), ["FLASHINFER_CUTEDSL"])
    assert found["FLASHINFER_CUTEDSL"].reason == (
        "kernel does not support MoEActivation.SITU activation"
    )


def test_x86_cpu_unquantized_zentorch_bypass() -> None:
    # experts/cpu_moe.py:463-464: X86CPUUnquantizedExperts accepts before its bf16 and shape
    # checks when zentorch's fused MoE op takes the layer (0.30 checks bf16 first), so an
    # fp32 layer on a Zen host with zentorch stays on the x86 class; without zentorch the
    # bf16 check refuses it and the portable class (cpu_moe.py:171) takes it.
    at = where("cpu", "all", features={"zen": True})
    found = pick("unquantized/bf16", "qwen3_moe", "TP1", at, in_dtype="float32")
    assert (found.backend, found.kernel) == ("CPU", "X86CPUUnquantizedExperts")
    found = pick("unquantized/bf16", "qwen3_moe", "TP1", where("cpu", "pip"), in_dtype="float32")
    assert reasons(found)[("CPU", "X86CPUUnquantizedExperts")] == (
        "kernel requires bfloat16 activations"
    )
    assert (found.backend, found.kernel) == ("CPU", "CPUUnquantizedExperts")


def test_humming_indexed_under_ep() -> None:
    # experts/fused_humming_moe.py:106-119: the preferred Humming GEMM is indexed unless
    # VLLM_HUMMING_MOE_GEMM_TYPE is grouped_contiguous / grouped (0.30 prefers
    # grouped_contiguous under EP).
    at = where("h100", "pip")
    layout = "DP8+EP/flashinfer_nvlink_two_sided"
    found = pick("fp8_block/fp8_config", "qwen3_moe", layout, at)
    assert (found.backend, found.kernel) == ("HUMMING", "HummingIndexedExperts")
    at = where("h100", "pip", {"VLLM_HUMMING_MOE_GEMM_TYPE": "grouped"})
    found = pick("fp8_block/fp8_config", "qwen3_moe", layout, at)
    assert (found.backend, found.kernel) == ("HUMMING", "HummingGroupedExperts")
