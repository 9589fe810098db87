"""``--moe-backend auto`` on vLLM 0.31.0: hand-derived expectations from the 0.31.0 source
(no golden exists for it), for what differs from 0.32.0 (its common cases, shared with other
releases, are in test_moe_common_picks.py). Each case
names the 0.31.0 lines (under vllm/) that decide it; ``FM`` = model_executor/layers/fused_moe."""

from __future__ import annotations

import pytest

from .moe_release import MoeRelease, reasons

pytestmark = pytest.mark.golden

RELEASE = MoeRelease("0.31.0")
MODEL = RELEASE.model
where = RELEASE.where
pick = RELEASE.pick
AITER = {"VLLM_ROCM_USE_AITER": "1"}


def test_data_is_031() -> None:
    # FM/oracle/mxfp4.py:112-166 has no CUTLASS_MXFP4_MXFP4 / FLASHINFER_MOE_EP_* members,
    # FM/oracle/nvfp4.py:42-56 no FLASHINFER_MOE_EP_CUTEDSL, experts/flashinfer_moe_ep.py does
    # not exist, and quantization/utils/humming/priority.py (prioritize_humming) does not exist.
    assert MODEL is not None
    data = MODEL.data
    assert data["vllm_version"] == "0.31.0"
    assert "FlashInferMoeEpExperts" not in data["experts"]
    mx = data["oracles"]["mxfp4"]
    for gone in ("CUTLASS_MXFP4_MXFP4", "FLASHINFER_MOE_EP_CUTEDSL", "FLASHINFER_MOE_EP_DEEP_GEMM"):
        assert gone not in mx["backend_classes"]
    assert "flashinfer_moe_ep_cutedsl" not in data["oracles"]["nvfp4"]["values"]
    for oracle in data["oracles"].values():
        assert all(r.get("op") != "prioritize_humming" for r in oracle.get("reorder", ()))
    assert mx["activation_filter"]["bf16_fallback"] is False


# ---------------------------------------------------------------- what differs from 0.32
def test_h100_nvfp4_marlin_not_humming() -> None:
    # FM/oracle/nvfp4.py:194-203: MARLIN before HUMMING as written, no prioritize_humming
    # (0.32 nvfp4.py:213 moves HUMMING ahead of MARLIN on SM90).
    found = pick("nvfp4/modelopt", "qwen3_moe", "TP1", where("h100", "image"))
    assert (found.backend, found.kernel) == ("MARLIN", "MarlinExperts")
    assert not found.moved


def test_h100_wna16_and_mxfp8_marlin_not_humming() -> None:
    # FM/oracle/int_wna16.py:132-140 and FM/oracle/mxfp8.py:19-28,132: MARLIN before HUMMING.
    at = where("h100", "image")
    found = pick("int4_w4a16/gptq", "qwen3_moe", "TP1", at)
    assert (found.backend, found.kernel) == ("MARLIN", "MarlinExperts")
    found = pick("mxfp8/any", "qwen3_moe", "TP1", at)
    assert (found.backend, found.kernel) == ("MARLIN", "MarlinExperts")


def test_b200_quark_w4a4_no_cutlass_mxfp4_and_no_bf16_fallback() -> None:
    # FM/oracle/mxfp4.py:467-482 _filter_by_activation keeps only the kMxfp4Dynamic variants and
    # EMULATION (no BF16 fallback, no CUTLASS_MXFP4_MXFP4); :613-623 loop.
    found = pick("mxfp4/quark.w4a4", "qwen3_moe", "TP1", where("b200", "all"))
    assert [b for b, _ in found.candidates] == ["AITER_MXFP4_MXFP4", "EMULATION"]
    assert (found.backend, found.kernel) == (
        "EMULATION",
        "OCP_MXQuantizationEmulationTritonExperts",
    )
    # without amd-quark the emulation class refuses and :648-654 raises
    found = pick("mxfp4/quark.w4a4", "qwen3_moe", "TP1", where("b200", "image"))
    assert found.status == "error"
    assert found.message is not None
    assert "Candidate backends were: ['AITER_MXFP4_MXFP4', 'EMULATION']" in found.message
    assert "backend: EMULATION, reason: kernel requires amd-quark package" in found.message


def test_b200_quark_w4a8_fp8_errors_without_bf16_fallback() -> None:
    # FM/oracle/mxfp4.py:467-482: requested kFp8StaticTensorSym keeps [AITER_MXFP4_FP8,
    # EMULATION]; 0.32 appends the BF16 variants and picks FLASHINFER_TRTLLM_MXFP4_BF16.
    found = pick("mxfp4/quark.w4a8_fp8", "qwen3_moe", "TP1", where("b200", "image"))
    assert found.status == "error"
    assert [b for b, _ in found.candidates] == ["AITER_MXFP4_FP8", "EMULATION"]


def test_sm12x_gpt_oss_triton_refused_then_marlin() -> None:
    # experts/gpt_oss_triton_kernels_moe.py:36-48: CUDA (9,0) <= cc < (11,0) refuses SM120;
    # FM/oracle/mxfp4.py:342-364 keeps TRITON before MARLIN (no SM12x reorder).
    found = pick("mxfp4/gpt_oss", "gpt_oss", "TP1", where("rtx-pro-6000", "image"))
    order = [b for b, _ in found.candidates]
    assert order.index("TRITON") < order.index("MARLIN")
    why = reasons(found)[("TRITON", "OAITritonMxfp4ExpertsMonolithic")]
    assert why == (
        "kernel does not support current device NVIDIA RTX PRO 6000 Blackwell Server Edition"
    )
    assert (found.backend, found.kernel) == ("MARLIN", "MarlinExperts")


def test_b200_nvfp4_vllm_cutlass_needs_ep_size_1() -> None:
    # experts/cutlass_moe.py:733-736: CutlassExpertsFp4 takes ep_size == 1 only (0.32 takes EP
    # with allgather_reducescatter); with no FlashInfer (bare) TP8+EP falls to MARLIN.
    found = pick("nvfp4/modelopt", "qwen3_moe", "TP8+EP", where("b200", "minimal"))
    why = reasons(found)[("VLLM_CUTLASS", "CutlassExpertsFp4")]
    assert why is not None
    assert why.startswith("kernel does not support parallel config")
    assert (found.backend, found.kernel) == ("MARLIN", "MarlinExperts")


def test_aiter_w4a16_refuses_deepseek_v3_routing() -> None:
    # experts/aiter_mxfp4_w4a16_moe.py:338-347: Renormalize, RenormalizeNaive, DeepseekV4 only
    # (RoutingMethodType.DeepSeekV3 = 2, FM/config.py:111); the OAI monolithic class takes
    # Renormalize(Naive) only, so the modular OAITritonExperts is picked.
    at = where("mi300x", "all", AITER)
    found = pick("mxfp4/gpt_oss", "gpt_oss", "TP1", at, routing_method="DeepSeekV3")
    assert reasons(found)[("AITER_TRITON_MXFP4_BF16", "AiterW4A16ExpertsMonolithic")] == (
        "kernel does not support routing method 2"
    )
    assert (found.backend, found.kernel) == ("TRITON", "OAITritonExperts")


def test_trtllm_bf16_refuses_minimax2_routing() -> None:
    # experts/trtllm_bf16_moe.py:246-258: no RoutingMethodType.MiniMax2 (= 7, FM/config.py:122).
    found = pick(
        "unquantized/bf16", "qwen3_moe", "TP1", where("b200", "image"), routing_method="MiniMax2"
    )
    assert reasons(found)[("FLASHINFER_TRTLLM", "TrtLlmBf16ExpertsMonolithic")] == (
        "kernel does not support routing method 7"
    )
    assert (found.backend, found.kernel) == ("FLASHINFER_CUTLASS", "FlashInferExperts")


def test_aiter_mxfp8_batch_invariant() -> None:
    # experts/aiter_mxfp8_moe.py has no _supports_batch_invariance override: TritonExperts'
    # True (experts/triton_moe.py:192) applies, so VLLM_BATCH_INVARIANT keeps AITER_MXFP8.
    at = where("mi355x", "all", {**AITER, "VLLM_BATCH_INVARIANT": "1"})
    found = pick(
        "mxfp8/any",
        "gpt_oss",
        "TP1",
        at,
        activation="SWIGLUOAI_UNINTERLEAVE",
        swiglu_alpha=1.702,
        swiglu_beta=1.0,
    )
    assert (found.backend, found.kernel) == ("AITER_MXFP8", "AiterMxfp8Experts")


def test_mxfp4_config_situ_goes_through_the_oracle() -> None:
    # quantization/mxfp4.py:483-487: Mxfp4MoEMethod always calls
    # select_deepseek_v4_mxfp4_moe_backend (no K3 SiTU shortcut); on ROCm the list is
    # [AITER_MXFP4_BF16, EMULATION] (FM/oracle/mxfp4.py:371-375).
    at = where("mi355x", "all", AITER)
    found = pick(
        "mxfp4/mxfp4_config",
        "deepseek_v4",
        "TP1",
        at,
        activation="SITU",
        activation_situ_linear_beta=1.0,
    )
    assert (found.chosen_by, found.backend, found.kernel) == (
        "oracle",
        "AITER_MXFP4_BF16",
        "AiterExperts",
    )


def test_no_a4w4_dsv4_model_type_check() -> None:
    # FM/config.py:1318 FusedMoEConfig.__post_init__ has no VLLM_ROCM_USE_AITER_MOE_A4W4_DSV4
    # check (0.32 config.py:1367 raises for other model types).
    env = {**AITER, "VLLM_ROCM_USE_AITER_MOE_A4W4_DSV4": "1"}
    found = pick("unquantized/bf16", "qwen3_moe", "TP1", where("mi300x", "all", env))
    assert (found.status, found.backend, found.kernel) == ("selected", "AITER", "AiterExperts")
