"""``--moe-backend auto`` on vLLM 0.32.0: hand-derived expectations from the 0.32.0 source
(no golden exists for it), for what differs from 0.33.0 and for the common cases
(those several releases share are in test_moe_common_picks.py). Each case
names the 0.32.0 lines (under vllm/) that decide it; ``FM`` = model_executor/layers/fused_moe."""

from __future__ import annotations

from typing import Any

import pytest

from kernelcfg.vllm.kernels.moe import layer as moe_layer

from .moe_release import MoeRelease, reasons

pytestmark = pytest.mark.golden

RELEASE = MoeRelease("0.32.0")
MODEL = RELEASE.model
where = RELEASE.where
pick = RELEASE.pick
AITER = {"VLLM_ROCM_USE_AITER": "1"}


def test_data_is_032() -> None:
    # FM/experts/rocm_aiter_moe.py:446 one AiterExperts class; aiter_mxfp4_w4a4_moe.py and
    # Mxfp4MoeBackend.AITER_TRITON_MXFP4_MXFP4 do not exist yet (oracle/mxfp4.py:150-160).
    assert MODEL is not None
    assert MODEL.data["vllm_version"] == "0.32.0"
    experts = MODEL.data["experts"]
    assert "AiterExperts" in experts
    for gone in ("AiterFp8BlockExperts", "AiterMxfp4Experts", "AiterW4A4ExpertsMonolithic"):
        assert gone not in experts
    assert "AITER_TRITON_MXFP4_MXFP4" not in MODEL.data["oracles"]["mxfp4"]["backend_classes"]
    assert "aiter_triton_mxfp4_mxfp4" not in MODEL.data["oracles"]["mxfp4"]["values"]
    assert all(c["name"] != "decomposed" for c in MODEL.data["base_checks"])


# ---------------------------------------------------------------- common cases
def test_h100_fp8_block_tp1_triton() -> None:
    # oracle/fp8.py:123-132: on cc 90 block FP8 without EP puts TRITON first.
    found = pick("fp8_block/fp8_config", "deepseek_v3", "TP1", where("h100", "image"))
    assert (found.status, found.backend, found.kernel) == ("selected", "TRITON", "TritonExperts")


def test_h100_fp8_block_ep_flashinfer_cutlass() -> None:
    # oracle/fp8.py:123-130: on cc 90 block FP8 with ep_size >= 2 FLASHINFER_CUTLASS goes first.
    at = where("h100", "image")
    found = pick("fp8_block/fp8_config", "deepseek_v3", "DP8+EP/deepep_high_throughput", at)
    assert (found.backend, found.kernel) == ("FLASHINFER_CUTLASS", "FlashInferExperts")


def test_b200_nvfp4_and_gpt_oss_trtllm() -> None:
    # oracle/nvfp4.py priority FLASHINFER_TRTLLM first (TrtLlmNvFp4ExpertsMonolithic,
    # experts/trtllm_nvfp4_moe.py:461); oracle/mxfp4.py:389 FLASHINFER_TRTLLM_MXFP4_BF16 first.
    at = where("b200", "image")
    found = pick("nvfp4/modelopt", "qwen3_moe", "TP1", at)
    assert (found.backend, found.kernel) == ("FLASHINFER_TRTLLM", "TrtLlmNvFp4ExpertsMonolithic")
    found = pick("mxfp4/gpt_oss", "gpt_oss", "TP1", at)
    assert (found.backend, found.kernel) == (
        "FLASHINFER_TRTLLM_MXFP4_BF16",
        "TrtLlmMxfp4ExpertsMonolithic",
    )


# ---------------------------------------------------------------- one AiterExperts class
def test_mi300x_fp8_block_aiter_experts() -> None:
    # oracle/fp8.py:212-217 AITER -> [AiterExperts]; rocm_aiter_moe.py:486-502 accepts
    # (kFp8Static128BlockSym, kFp8Dynamic128Sym); VLLM_ROCM_USE_AITER set -> forced (:495-508).
    found = pick("fp8_block/fp8_config", "deepseek_v3", "TP1", where("mi300x", "all", AITER))
    assert (found.status, found.backend, found.kernel) == ("selected", "AITER", "AiterExperts")


def test_mi300x_unquantized_aiter_experts() -> None:
    # oracle/unquantized.py:127-132 AITER -> [AiterExperts]; (None, None) in SUPPORTED_W_A.
    found = pick("unquantized/bf16", "qwen3_moe", "TP1", where("mi300x", "all", AITER))
    assert (found.backend, found.kernel) == ("AITER", "AiterExperts")


def test_forced_aiter_reports_the_one_class() -> None:
    # oracle/fp8.py:495-508 _return_or_raise over [AiterExperts]: the reason is AiterExperts'
    # (activation format), not 0.33's last split class (quantization scheme).
    at = where("mi300x", "all", AITER)
    found = pick("fp8_tensor/fp8_config.static", "qwen3_moe", "DP8+EP/deepep_low_latency", at)
    # FM/modular_kernel.py:89-96: the value is the tuple ("batched_experts",), printed at :587-588.
    assert found.message == (
        "ValueError: FP8 MoE backend AITER does not support the deployment configuration since "
        "kernel does not support ('batched_experts',) activation format."
    )


# ---------------------------------------------------------------- what differs from 0.33
def test_mi300x_gpt_oss_w4a16_refuses_ep() -> None:
    # experts/aiter_mxfp4_w4a16_moe.py:329-335: not use_ep (0.33: not use_all2all_kernels), so
    # TP8+EP (use_ep, no all2all) refuses it and the walk goes on to TRITON.
    found = pick("mxfp4/gpt_oss", "gpt_oss", "TP8+EP", where("mi300x", "all", AITER))
    why = reasons(found)[("AITER_TRITON_MXFP4_BF16", "AiterW4A16ExpertsMonolithic")]
    assert why is not None
    assert why.startswith("kernel does not support parallel config")
    assert (found.backend, found.kernel) == ("TRITON", "OAITritonMxfp4ExpertsMonolithic")


def test_hash_routing_refuses_every_monolithic_class() -> None:
    # FM/modular_kernel.py:570-571: has_hash_routing and is_monolithic() -> refused (0.33 lets
    # AiterW4A16ExpertsMonolithic through with _supports_hash_routing).
    at = where("mi300x", "all", AITER)
    found = pick("mxfp4/gpt_oss", "gpt_oss", "TP1", at, has_hash_routing=True)
    assert reasons(found)[("AITER_TRITON_MXFP4_BF16", "AiterW4A16ExpertsMonolithic")] == (
        "kernel does not support hash routing"
    )
    assert (found.backend, found.kernel) == ("TRITON", "OAITritonExperts")


def test_b200_qwen3_5_fp8_block_keeps_deepgemm() -> None:
    # oracle/fp8.py:479-492 reads only VLLM_(MOE_)USE_DEEP_GEMM; should_auto_disable_deep_gemm
    # (utils/deep_gemm.py:39-52) only sets Fp8Config.use_deep_gemm (config/vllm.py:1522-1533),
    # which the MoE oracle never reads. 0.33 (fp8.py:497-503) drops DEEPGEMM here.
    found = pick("fp8_block/fp8_config", "qwen3_5_moe", "TP1", where("b200", "pip"))
    assert (found.backend, found.kernel) == ("DEEPGEMM", "TritonOrDeepGemmExperts")


def test_gfx1100_has_no_fp8_triton() -> None:
    # experts/triton_moe.py:157 supports_fp8(); platforms/rocm.py:1184-1185 on_cdna() or
    # on_rdna4() (:229-232: gfx9*/gfx1250, gfx1200/gfx1201) -> gfx1100 has no FP8 scheme.
    found = pick("fp8_block/fp8_config", "deepseek_v3", "TP1", where("rx-7900-xtx", "pip"))
    assert found.message == (
        "NotImplementedError: No FP8 MoE backend supports the deployment configuration."
    )
    why = reasons(found)[("TRITON", "TritonExperts")]
    assert why is not None
    assert why.startswith("kernel does not support quantization scheme")


def test_mi355x_mxfp8_aiter_needs_swigluoai() -> None:
    # experts/aiter_mxfp8_moe.py:59-86: after the base checks, anything but
    # SWIGLUOAI_UNINTERLEAVE is refused (0.33 also takes SILU); next TRITON_MXFP8.
    found = pick("mxfp8/any", "qwen3_moe", "TP1", where("mi355x", "all", AITER))
    assert reasons(found)[("AITER_MXFP8", "AiterMxfp8Experts")] == (
        "kernel hardcodes SwiGLU-OAI activation and requires activation=swigluoai_uninterleave; "
        "got activation=silu"
    )
    assert (found.backend, found.kernel) == ("TRITON_MXFP8", "Mxfp8NativeTritonExperts")


def _qwen38(num_experts: int) -> dict[str, Any]:
    model = {
        "hidden_dim": 2560,
        "intermediate_size": 640,
        "num_experts": num_experts,
        "top_k": 8,
        "activation": "SILU",
        "routing_method": "Renormalize",
        "has_bias": False,
        "in_dtype": "bfloat16",
        "model_type": "qwen3_8",
    }
    return moe_layer.layer_features(model, moe_layer.Layout(8, 1, True))


def test_qwen38_tep8_forced_emulation_on_gfx950() -> None:
    # oracle/mxfp4.py:581-611 _requires_qwen38_tep8_emulation (kMxfp4Dynamic, use_ep, ep 8,
    # E=512, local 64, H=2560, N=640, gfx950) -> :676-689 _return_or_raise(EMULATION).
    assert MODEL is not None
    found = MODEL.pick("mxfp4/quark.w4a4", _qwen38(512), where("mi355x", "all", AITER))
    assert (found.backend, found.kernel) == (
        "EMULATION",
        "OCP_MXQuantizationEmulationTritonExperts",
    )
    # another expert count keeps the native AITER W4A4 pick (AITER_MXFP4_MXFP4, :306-311)
    found = MODEL.pick("mxfp4/quark.w4a4", _qwen38(256), where("mi355x", "all", AITER))
    assert (found.backend, found.kernel) == ("AITER_MXFP4_MXFP4", "AiterExperts")


def test_qwen38_forced_emulation_raises_without_quark() -> None:
    # oracle/mxfp4.py:518-523,526-545: a forced backend that fails raises with its reason.
    assert MODEL is not None
    found = MODEL.pick("mxfp4/quark.w4a4", _qwen38(512), where("mi355x", "pip"))
    assert found.message == (
        "ValueError: Mxfp4 MoE backend 'EMULATION' does not support the deployment configuration "
        "since kernel requires amd-quark package."
    )


def test_cpu_int8_intermediate_multiple_of_32() -> None:
    # experts/cpu_moe.py:1029-1032: CPUExpertsInt8 also needs intermediate % 32 (0.33 pads it).
    at = where("cpu", "pip")
    found = pick(
        "int8_w8a8/compressed_tensors", "qwen3_moe", "TP1", at, intermediate_size_per_partition=48
    )
    assert reasons(found)[("CPU", "CPUExpertsInt8")] == (
        "kernel requires intermediate dim divisible by 32"
    )
    assert found.status == "error"


def test_cpu_fp8_silu_only() -> None:
    # experts/cpu_moe.py:468: CPUExpertsFp8 takes SILU only (0.33 adds GELU/GELU_TANH); the CPU
    # fp8 oracle returns NONE without raising (oracle/fp8.py raises on cuda/rocm only).
    found = pick("fp8_block/fp8_config", "qwen3_moe", "TP1", where("cpu", "pip"), activation="GELU")
    assert reasons(found)[("CPU", "CPUExpertsFp8")] == (
        "kernel does not support MoEActivation.GELU activation"
    )
    assert found.status == "no_kernel"


def test_trtllm_nvfp4_monolithic_takes_simulated_routing() -> None:
    # experts/trtllm_nvfp4_moe.py:478-494 lists RoutingMethodType.Simulated (0.33 dropped it, so
    # 0.33 falls to the modular class).
    found = pick(
        "nvfp4/modelopt", "qwen3_moe", "TP1", where("b200", "image"), routing_method="Simulated"
    )
    assert (found.backend, found.kernel) == ("FLASHINFER_TRTLLM", "TrtLlmNvFp4ExpertsMonolithic")
