"""``--moe-backend auto`` on vLLM 0.34.0: hand-derived expectations from the 0.34.0 source
(no golden exists for it) for the changes that move picks or texts. Each case names the
0.34.0 lines (under vllm/) that decide it; ``FM`` = model_executor/layers/fused_moe."""

from __future__ import annotations

import pytest

from kernelcfg.vllm.kernels.moe import oracle

from .moe_release import MoeRelease, reasons

pytestmark = pytest.mark.golden

RELEASE = MoeRelease("0.34.0")
MODEL = RELEASE.model
where = RELEASE.where
pick = RELEASE.pick
PADDED = "kernel does not support ('padded_standard',) activation format"


def test_data_is_034() -> None:
    assert MODEL is not None
    assert MODEL.data["vllm_version"] == "0.34.0"
    assert "ZentorchExpertsInt4" not in MODEL.data["experts"]


# ---------------------------------------------------------------- DeepEP v2: padded_standard
def test_h100_fp8_block_deepep_v2_image() -> None:
    # FM/config.py:1479-1480 activation_format = PaddedStandard on deepep_v2; oracle/fp8.py:129-136
    # puts FLASHINFER_CUTLASS first (cc 90, block, ep >= 2); FlashInferExperts is Standard, and
    # FM/modular_kernel.py:687-688 (is_superset, :119-135) rejects it; TritonOrDeepGemmExperts is
    # PaddedStandard (experts/fallback.py:48-62, deep_gemm_moe.py:165-167, triton_moe.py:143-145).
    found = pick("fp8_block/fp8_config", "deepseek_v3", "DP8+EP/deepep_v2", where("h100", "image"))
    assert (found.status, found.backend, found.kernel) == (
        "selected",
        "DEEPGEMM",
        "TritonOrDeepGemmExperts",
    )
    assert found.trials[0] == oracle.Trial(
        "FLASHINFER_CUTLASS", "FlashInferExperts", "refused", PADDED
    )


def test_h100_fp8_block_deepep_v2_pip_has_no_nvcc() -> None:
    # utils/deep_gemm.py:156-165: no nvcc on a driver-only pip host -> is_deep_gemm_supported()
    # False -> DeepGemmExperts._supports_current_device (deep_gemm_moe.py:171) fails; next TRITON.
    found = pick("fp8_block/fp8_config", "deepseek_v3", "DP8+EP/deepep_v2", where("h100", "pip"))
    assert (found.backend, found.kernel) == ("TRITON", "TritonExperts")
    assert reasons(found)[("DEEPGEMM", "TritonOrDeepGemmExperts")] == (
        "kernel does not support current device NVIDIA H100 80GB HBM3"
    )


@pytest.mark.parametrize(
    ("add", "backend", "kernel"),
    [((), "TRITON", "TritonExperts"), (("nvcc",), "DEEPGEMM", "TritonOrDeepGemmExperts")],
)
def test_b200_deepgemm_needs_nvcc(add: tuple[str, ...], backend: str, kernel: str) -> None:
    # utils/deep_gemm.py:151-177: DeepGEMM also needs nvcc >= 12.9; pip on a driver-only host
    # lacks it (0.33 picked DEEPGEMM here), a host with a CUDA toolkit has it.
    found = pick("fp8_block/fp8_config", "qwen3_moe", "TP1", where("b200", "pip", add=add))
    assert (found.backend, found.kernel) == (backend, kernel)


def test_b200_nvfp4_deepep_v2_pip_moves_off_cutlass() -> None:
    # oracle/nvfp4.py:267 passes config.activation_format (padded_standard); CutlassExpertsFp4 and
    # MarlinExperts are Standard (rejected, modular_kernel.py:687); BatchedHummingGroupedExperts is
    # batched; HummingGroupedExperts is PaddedStandard (fused_humming_moe.py:881-883).
    found = pick("nvfp4/modelopt", "qwen3_moe", "DP8+EP/deepep_v2", where("b200", "pip"))
    assert (found.backend, found.kernel) == ("HUMMING", "HummingGroupedExperts")
    assert reasons(found)[("VLLM_CUTLASS", "CutlassExpertsFp4")] == PADDED
    assert reasons(found)[("MARLIN", "MarlinExperts")] == PADDED


def test_b200_nvfp4_deepep_v2_image_trtllm_modular() -> None:
    # experts/trtllm_nvfp4_moe.py:313-315: TrtLlmNvFp4ExpertsModular is PaddedStandard.
    found = pick("nvfp4/modelopt", "qwen3_moe", "DP8+EP/deepep_v2", where("b200", "image"))
    assert (found.backend, found.kernel) == ("FLASHINFER_TRTLLM", "TrtLlmNvFp4ExpertsModular")


# ---------------------------------------------------------------- RDNA AITER (gfx11)
def test_gfx1100_fp8_aiter_is_dropped() -> None:
    # oracle/fp8.py:480-489: skip AITER when is_rdna_aiter_enabled(); _aiter_ops.py:2313-2324 now
    # reads on_rdna() (platforms/rocm.py:217,231-233: gfx11/gfx12, not gfx1250); 0.33 forced AITER
    # on gfx1100 and raised.
    at = where("rx-7900-xtx", "all", {"VLLM_ROCM_USE_AITER": "1"})
    found = pick("fp8_block/fp8_config", "deepseek_v3", "TP1", at)
    assert (found.status, found.backend, found.kernel) == ("selected", "TRITON", "TritonExperts")
    assert all(t.backend != "AITER" for t in found.trials)
    assert "AITER" in dict(found.dropped)
    assert found.message is None


def test_gfx1100_unquantized_aiter_is_dropped() -> None:
    # oracle/unquantized.py:295-303: same rdna term; AITER is no longer tried (and warned about).
    at = where("rx-7900-xtx", "all", {"VLLM_ROCM_USE_AITER": "1"})
    found = pick("unquantized/bf16", "qwen3_moe", "TP1", at)
    assert (found.backend, found.kernel) == ("TRITON", "TritonExperts")
    assert [t.backend for t in found.trials] == ["TRITON"]


# ---------------------------------------------------------------- SM11x
def test_sm110_mxfp4_gpt_oss_prefers_marlin() -> None:
    # oracle/mxfp4.py:445-457: on family 110 or 120 TRITON moves after BATCHED_MARLIN.
    found = pick("mxfp4/gpt_oss", "gpt_oss", "TP1", where("thor", "pip", capability="11.0"))
    order = [b for b, _ in found.candidates]
    assert order.index("TRITON") == order.index("BATCHED_MARLIN") + 1
    assert (found.backend, found.kernel) == ("MARLIN", "MarlinExperts")


def test_sm110_cutlass_fp4_excluded() -> None:
    # experts/cutlass_moe.py:723-730: CutlassExpertsFp4 on families 100 and 120 only.
    found = pick("nvfp4/modelopt", "qwen3_moe", "TP1", where("thor", "minimal", capability="11.0"))
    assert reasons(found)[("VLLM_CUTLASS", "CutlassExpertsFp4")] == (
        "kernel does not support current device thor"
    )
    assert (found.backend, found.kernel) == ("MARLIN", "MarlinExperts")


# ---------------------------------------------------------------- TRT-LLM MXFP4 split
def test_trtllm_mxfp4_mxfp8_modular_class() -> None:
    # oracle/mxfp4.py:231-246 lists Monolithic, Mxfp8 Modular, Modular; the MXFP8-activation
    # modular class is TrtLlmMxfp4Mxfp8ExpertsModular (trtllm_mxfp4_moe.py:502-513).
    found = pick("mxfp4/mxfp4_config", "deepseek_v4", "TP1", where("b200", "image"))
    assert (found.backend, found.kernel) == (
        "FLASHINFER_TRTLLM_MXFP4_MXFP8",
        "TrtLlmMxfp4Mxfp8ExpertsModular",
    )


def test_trtllm_mxfp4_bf16_modular_on_deepep_v2() -> None:
    # trtllm_mxfp4_moe.py:488-499: TrtLlmMxfp4ExpertsModular takes (kMxfp4Static, None) only and
    # is PaddedStandard (:295-297); the Mxfp8 class refuses the BF16 key.
    found = pick("mxfp4/gpt_oss", "gpt_oss", "DP8+EP/deepep_v2", where("b200", "image"))
    assert (found.backend, found.kernel) == (
        "FLASHINFER_TRTLLM_MXFP4_BF16",
        "TrtLlmMxfp4ExpertsModular",
    )
    why = reasons(found)[("FLASHINFER_TRTLLM_MXFP4_BF16", "TrtLlmMxfp4Mxfp8ExpertsModular")]
    assert why is not None
    assert why.startswith("kernel does not support quantization scheme")


# ---------------------------------------------------------------- texts
def test_fp8_forced_deepgemm_text() -> None:
    # oracle/fp8.py:460-471 return_or_raise; oracle/base.py:168-177 make_log_unsupported with
    # name 'Fp8' (fp8.py:407) and the backend quoted.
    at = where("a100", "image", {"VLLM_USE_DEEP_GEMM": "1"})
    found = pick("fp8_block/fp8_config", "qwen3_moe", "TP1", at)
    assert found.message == (
        "ValueError: Fp8 MoE backend 'DEEPGEMM' does not support the deployment configuration "
        "since kernel does not support current device NVIDIA A100-SXM4-80GB."
    )


def test_mori_epv1_text() -> None:
    # FM/config.py:1446-1449: use_mori_epv1_kernels asserts rocm_aiter_fmoe_enabled.
    at = where("rx-7900-xtx", "minimal")
    found = pick("int8_w8a8/compressed_tensors", "qwen3_moe", "DP8+EP/mori_high_throughput", at)
    assert (
        found.message == "AssertionError: MoRI EPv1 needs to be used with aiter fused_moe for now."
    )


def test_unquantized_lora_needs_standard_layout() -> None:
    # oracle/unquantized.py:236-253: LoRA on a non-Standard layout raises first.
    at = where("h100", "image")
    found = pick(
        "unquantized/bf16", "qwen3_moe", "DP8+EP/deepep_low_latency", at, is_lora_enabled=True
    )
    assert found.message == (
        "ValueError: MoE LoRA requires a Standard activation layout, but this deployment produces "
        "'batched_experts' (all2all_backend='deepep_low_latency', moe_backend='auto'). Disable "
        "LoRA or select a backend that produces the Standard layout."
    )


def test_unquantized_lora_triton_is_checked() -> None:
    # oracle/unquantized.py:265-269: return_or_raise(TRITON, is_lora=True) -> 'LoRA ' in the text.
    found = pick("unquantized/bf16", "qwen3_moe", "TP1", where("cpu", "pip"), is_lora_enabled=True)
    assert found.message == (
        "ValueError: Unquantized MoE LoRA backend 'TRITON' does not support the deployment "
        "configuration since kernel does not support current device cpu."
    )


def test_trtllm_nvfp4_swiglustep_per_token() -> None:
    # experts/trtllm_nvfp4_moe.py:55-70: checked before the base checks, reason not prefixed.
    at = where("b200", "image")
    found = pick("nvfp4/online.per_token", "qwen3_moe", "TP1", at, activation="SWIGLUSTEP")
    assert reasons(found)[("FLASHINFER_TRTLLM", "TrtLlmNvFp4ExpertsModular")] == (
        "SWIGLUSTEP requires per-tensor NVFP4 activation scales"
    )


def test_parallel_config_repr_has_mori_ep_v2() -> None:
    # FM/config.py:1045-1059: the dataclass gained mori_ep_v2 (printed in the reason).
    found = pick("mxfp4/gpt_oss", "gpt_oss", "DP8+EP/deepep_v2", where("b200", "image"))
    why = reasons(found)[("FLASHINFER_TRTLLM_MXFP4_BF16", "TrtLlmMxfp4ExpertsMonolithic")]
    assert why is not None
    assert why.endswith("enable_eplb=False, mori_ep_v2=False)")


def test_zentorch_wna16_rename() -> None:
    # oracle/int_wna16.py:108-113 ZEN_CPU -> ZentorchExpertsWNA16 (experts/zentorch_moe.py:41).
    at = where("cpu", "all", features={"zen": True})
    found = pick("int4_w4a16/gptq", "qwen3_moe", "TP1", at)
    assert (found.backend, found.kernel) == ("ZEN_CPU", "ZentorchExpertsWNA16")


def test_cpu_fp8_no_kernel_fails_to_load() -> None:
    # FM/oracle/fp8.py:509-514 returns NONE off CUDA/ROCm (no CPU class takes per-tensor FP8);
    # quantization/fp8.py:703 then asserts an experts class while loading the weights.
    found = pick("fp8_tensor/fp8_config.static", "qwen3_moe", "TP1", where("cpu", "pip"))
    assert (found.status, found.backend, found.message) == ("no_kernel", "NONE", None)
    assert found.fails
    assert found.load_error is not None
    assert "AssertionError" in found.load_error
