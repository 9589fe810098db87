"""``--moe-backend auto`` on vLLM 0.30.0: hand-derived expectations from the 0.30.0 source
(no golden exists for it), for what differs from 0.31.0 and for the common cases
(those several releases share are in test_moe_common_picks.py). Each case
names the 0.30.0 lines (under vllm/) that decide it; ``FM`` = model_executor/layers/fused_moe,
``CT`` = model_executor/layers/quantization/compressed_tensors/compressed_tensors_moe."""

from __future__ import annotations

import pytest

from .moe_release import MoeRelease, reasons

pytestmark = pytest.mark.golden

RELEASE = MoeRelease("0.30.0")
MODEL = RELEASE.model
where = RELEASE.where
pick = RELEASE.pick
AITER = {"VLLM_ROCM_USE_AITER": "1"}
GPT_OSS_MXFP8 = {
    "activation": "SWIGLUOAI_UNINTERLEAVE",
    "swiglu_alpha": 1.702,
    "swiglu_beta": 1.0,
}


def test_data_is_030() -> None:
    # FM/oracle/fp8.py:43-66 has no CPU_W8A8, FM/oracle/int_wna16.py:53-62 no ZEN_CPU,
    # FM/oracle/unquantized.py:36-45 no MOONEP, FM/oracle/w4a8.py:32-33 CUTLASS only;
    # experts/moonep_experts.py and experts/zentorch_moe.py do not exist;
    # FM/modular_kernel.py:548-593 has no hash-routing check; quantization/utils/quant_utils.py
    # has no kNvfp4DynamicToken.
    assert MODEL is not None
    data = MODEL.data
    assert data["vllm_version"] == "0.30.0"
    for gone in (
        "CPUExpertsFp8W8A8",
        "PowerCPUExpertsInt8",
        "ZentorchExpertsInt4",
        "MoonEPExperts",
    ):
        assert gone not in data["experts"]
    oracles = data["oracles"]
    assert "CPU_W8A8" not in oracles["fp8"]["priority"]
    assert "ZEN_CPU" not in oracles["wna16"]["backend_classes"]
    assert "MOONEP" not in oracles["unquantized"]["backend_classes"]
    assert oracles["w4a8"]["priority"] == ["CUTLASS"]
    assert oracles["w4a8"]["values"] == {}
    assert all(c["name"] != "hash_routing" for c in data["base_checks"])
    assert "kNvfp4DynamicToken" not in data["key_strings"]


# ---------------------------------------------------------------- common cases


def test_h100_gpt_oss_and_unquantized_triton() -> None:
    # FM/oracle/mxfp4.py:342-364 (same list as 0.31) -> TRITON with the OAI monolithic class;
    # FM/oracle/unquantized.py:76-79: on Hopper the FlashInfer unquantized kernels go last.
    found = pick("mxfp4/gpt_oss", "gpt_oss", "TP1", where("h100", "pip"))
    assert (found.backend, found.kernel) == (
        "TRITON",
        "OAITritonMxfp4ExpertsMonolithic",
    )
    found = pick("unquantized/bf16", "qwen3_moe", "TP1", where("h100", "image"))
    assert (found.backend, found.kernel) == ("TRITON", "TritonExperts")
    assert [b for b, _ in found.candidates] == [
        "TRITON",
        "BATCHED_TRITON",
        "FLASHINFER_TRTLLM",
        "FLASHINFER_CUTLASS",
    ]


# ---------------------------------------------------------------- what differs from 0.31
def test_unquantized_forced_aiter_that_refuses_raises() -> None:
    # FM/oracle/unquantized.py:299-311: with VLLM_ROCM_USE_AITER set and on (and not RDNA4
    # AITER), AITER goes through _return_or_raise (:271-284): a refusal raises ValueError
    # (0.31 :328-356 warns and falls back to TRITON). gfx1100 is no AITER device.
    found = pick("unquantized/bf16", "qwen3_moe", "TP1", where("rx-7900-xtx", "all", AITER))
    assert found.status == "error"
    assert found.message is not None
    assert found.message.startswith(
        "ValueError: Unquantized MoE backend ROCm AITER does not support the deployment "
        "configuration since kernel does not support current device AMD Radeon RX 7900 XTX"
    )


def test_xpu_unquantized_no_triton_fallback_and_int8_not_on_triton() -> None:
    # FM/oracle/unquantized.py:95-96: XPU list is [XPU] only, so VLLM_BATCH_INVARIANT (XPUExperts
    # refuses it) leaves nothing (:324-326 NotImplementedError); experts/triton_moe.py:133-136:
    # the INT8 schemes need CUDA cc >= 7.5 or ROCm (no XPU), so INT8 W8A8 on XPU finds none.
    at = where("xpu", "image", {"VLLM_BATCH_INVARIANT": "1"})
    found = pick("unquantized/bf16", "qwen3_moe", "TP1", at)
    assert [b for b, _ in found.candidates] == ["XPU"]
    assert (found.status, found.message) == (
        "error",
        "NotImplementedError: No Unquantized MoE backend supports the deployment configuration.",
    )
    found = pick("int8_w8a8/compressed_tensors", "qwen3_moe", "TP1", where("xpu", "image"))
    assert found.status == "error"
    why = reasons(found)[("TRITON", "TritonExperts")]
    assert why is not None
    assert why.startswith("kernel does not support quantization scheme")


def test_w4a8_fp8_sm90_cutlass_and_its_error_text() -> None:
    # CT/compressed_tensors_moe.py:167 _is_fp8_w4a8_sm90 (capability == 90) -> W4A8 FP8 method;
    # FM/oracle/w4a8.py:54 backend = CUTLASS only, :76-79 raises with the last reason alone.
    at = where("h100", "image")
    found = pick("w4a8_fp8/compressed_tensors", "qwen3_moe", "TP1", at)
    assert (found.backend, found.kernel) == ("CUTLASS", "CutlassExpertsW4A8Fp8")
    found = pick("w4a8_fp8/compressed_tensors", "qwen3_moe", "DP8+EP/deepep_low_latency", at)
    assert found.message == (
        "NotImplementedError: W4A8 MoE backend CUTLASS does not support the deployment "
        "configuration: kernel does not support ('batched_experts',) activation format."
    )


def test_w4a8_fp8_off_sm90_goes_to_the_int8_method() -> None:
    # CT/compressed_tensors_moe.py:167-182: off capability 90 _is_dynamic_token_w4a8_int
    # (compressed_tensors.py:513-535, no INT type check) takes the checkpoint to
    # CompressedTensorsW4A8Int8MoEMethod; FM/oracle/w4a8_int8.py raises off CPU (0.31 walks
    # [CUTLASS, HUMMING] and picks HUMMING on B200); w4a8_int8.py:93 is the raise.
    found = pick("w4a8_fp8/compressed_tensors", "qwen3_moe", "TP1", where("b200", "all"))
    assert (found.status, found.oracle, found.message) == (
        "error",
        "w4a8_int8",
        "NotImplementedError: W4A8 Int8 MoE is only supported on CPU platforms",
    )


def test_aiter_w4a16_takes_ep_without_all2all() -> None:
    # experts/aiter_mxfp4_w4a16_moe.py:336-345: not use_all2all_kernels (0.31: not use_ep), so
    # TP8+EP (no all2all) keeps AiterW4A16ExpertsMonolithic on MI300X.
    found = pick("mxfp4/gpt_oss", "gpt_oss", "TP8+EP", where("mi300x", "all", AITER))
    assert (found.backend, found.kernel) == (
        "AITER_TRITON_MXFP4_BF16",
        "AiterW4A16ExpertsMonolithic",
    )


def test_aiter_mxfp8_needs_no_aiter_switch_but_flydsl() -> None:
    # experts/aiter_mxfp8_moe.py:80-85: current device is ROCm with supports_mx (gfx95*) only;
    # :100-103: without aiter's flydsl the class refuses after the base checks -> TRITON_MXFP8.
    found = pick("mxfp8/any", "gpt_oss", "TP1", where("mi355x", "all"), **GPT_OSS_MXFP8)
    assert (found.backend, found.kernel) == ("AITER_MXFP8", "AiterMxfp8Experts")
    found = pick("mxfp8/any", "gpt_oss", "TP1", where("mi355x", "image"), **GPT_OSS_MXFP8)
    assert reasons(found)[("AITER_MXFP8", "AiterMxfp8Experts")] == (
        "kernel requires the aiter flydsl package, which is not installed"
    )
    assert (found.backend, found.kernel) == ("TRITON_MXFP8", "Mxfp8NativeTritonExperts")


def test_online_nvfp4_per_token_selects_with_the_dynamic_key() -> None:
    # quantization/online/nvfp4.py:98-102: select_nvfp4_moe_backend(..., kNvfp4Dynamic) (0.31
    # passes kNvfp4DynamicToken, which CutlassExpertsFp4 refuses); without FlashInfer the B200
    # pick is VLLM_CUTLASS.
    found = pick("nvfp4/online.per_token", "qwen3_moe", "TP1", where("b200", "minimal"))
    assert (found.backend, found.kernel) == ("VLLM_CUTLASS", "CutlassExpertsFp4")


def test_no_hash_routing_check() -> None:
    # FM/modular_kernel.py:548-593 has no has_hash_routing branch: a monolithic class takes a
    # hash-routed layer (0.31 :553-554 refuses every monolithic class).
    found = pick(
        "nvfp4/modelopt",
        "qwen3_moe",
        "TP1",
        where("b200", "image"),
        has_hash_routing=True,
    )
    assert (found.backend, found.kernel) == (
        "FLASHINFER_TRTLLM",
        "TrtLlmNvFp4ExpertsMonolithic",
    )


def test_cpu_fp8_block_and_wna16_without_the_new_cpu_backends() -> None:
    # FM/oracle/fp8.py:130-132: CPU goes to the front (no CPU_W8A8 / CPUExpertsFp8W8A8, even with
    # AMX-FP8); FM/oracle/int_wna16.py:121-122: the CPU list is [CPU] (no ZEN_CPU).
    at = where("cpu", "all", features={"amx_fp8": True})
    found = pick("fp8_block/fp8_config", "deepseek_v3", "TP1", at)
    assert found.candidates[0][0] == "CPU"
    assert (found.backend, found.kernel) == ("CPU", "CPUExpertsFp8")
    found = pick("int4_w4a16/compressed_tensors.g128", "qwen3_moe", "TP1", where("cpu", "all"))
    assert [b for b, _ in found.candidates] == ["CPU"]
    assert (found.backend, found.kernel) == ("CPU", "CPUExpertsInt4")
