"""The common picks that read the same in several older releases' source: one test per
case, walked for each release. Each release's deciding lines are cited per case (``FM`` =
model_executor/layers/fused_moe, under vllm/); what differs between releases stays in
that release's own test file."""

from __future__ import annotations

import pytest

from .moe_release import MoeRelease

pytestmark = pytest.mark.golden

AITER = {"VLLM_ROCM_USE_AITER": "1"}


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.31.0"])
def test_h100_fp8_block_triton_tp_and_flashinfer_cutlass_ep(version: str) -> None:
    # FM/oracle/fp8.py (0.29, 0.30 :113-124; 0.31 :118-127): on cc 90 block FP8 puts TRITON
    # first without EP and FLASHINFER_CUTLASS first with ep_size > 1.
    release = MoeRelease(version)
    at = release.where("h100", "image")
    found = release.pick("fp8_block/fp8_config", "deepseek_v3", "TP1", at)
    assert (found.status, found.backend, found.kernel) == ("selected", "TRITON", "TritonExperts")
    found = release.pick("fp8_block/fp8_config", "deepseek_v3", "DP8+EP/deepep_high_throughput", at)
    assert (found.backend, found.kernel) == ("FLASHINFER_CUTLASS", "FlashInferExperts")


@pytest.mark.parametrize("version", ["0.31.0", "0.32.0"])
def test_h100_gpt_oss_and_unquantized_triton(version: str) -> None:
    # FM/oracle/mxfp4.py (0.31 :342-364; 0.32 :389): no FlashInfer TRT-LLM/AITER on a pip
    # H100 -> TRITON, experts/gpt_oss_triton_kernels_moe.py:36-48 accepts (9,0) <= cc <
    # (11,0); FM/oracle/unquantized.py:76-80: on Hopper the FlashInfer unquantized kernels
    # go last.
    release = MoeRelease(version)
    found = release.pick("mxfp4/gpt_oss", "gpt_oss", "TP1", release.where("h100", "pip"))
    assert (found.backend, found.kernel) == ("TRITON", "OAITritonMxfp4ExpertsMonolithic")
    found = release.pick("unquantized/bf16", "qwen3_moe", "TP1", release.where("h100", "image"))
    assert (found.backend, found.kernel) == ("TRITON", "TritonExperts")


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.31.0"])
def test_b200_nvfp4_gpt_oss_fp8_block_trtllm(version: str) -> None:
    # FLASHINFER_TRTLLM first in FM/oracle/nvfp4.py (0.29 :197; 0.31 :194-203), with
    # experts/trtllm_nvfp4_moe.py:222-231 taking (kNvfp4Static, kNvfp4Dynamic) in 0.30;
    # FLASHINFER_TRTLLM_MXFP4_BF16 first in FM/oracle/mxfp4.py (0.29 :326; 0.30, 0.31 :345);
    # FLASHINFER_TRTLLM before DEEPGEMM in FM/oracle/fp8.py (0.29, 0.30 :81-96; 0.31
    # :84-100; B200 has no cc-90 reorder, and 0.29's experts/trtllm_fp8_moe.py:88-96 passes a
    # layer without SwiGLU parameters).
    release = MoeRelease(version)
    at = release.where("b200", "image")
    found = release.pick("nvfp4/modelopt", "qwen3_moe", "TP1", at)
    assert (found.backend, found.kernel) == ("FLASHINFER_TRTLLM", "TrtLlmNvFp4ExpertsMonolithic")
    found = release.pick("mxfp4/gpt_oss", "gpt_oss", "TP1", at)
    assert (found.backend, found.kernel) == (
        "FLASHINFER_TRTLLM_MXFP4_BF16",
        "TrtLlmMxfp4ExpertsMonolithic",
    )
    found = release.pick("fp8_block/fp8_config", "deepseek_v3", "TP1", at)
    assert (found.backend, found.kernel) == ("FLASHINFER_TRTLLM", "TrtLlmFp8ExpertsMonolithic")


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.31.0"])
def test_mi300x_aiter_fp8_block_and_unquantized(version: str) -> None:
    # FM/oracle/fp8.py: VLLM_ROCM_USE_AITER set and on forces AITER -> [AiterExperts]
    # (experts/rocm_aiter_moe.py AiterExperts accepts block FP8 and (None, None));
    # FM/oracle/unquantized.py (0.29 :300-311, _return_or_raise :271; 0.30 :299-311) the same
    # for unquantized layers.
    release = MoeRelease(version)
    at = release.where("mi300x", "all", AITER)
    found = release.pick("fp8_block/fp8_config", "deepseek_v3", "TP1", at)
    assert (found.backend, found.kernel) == ("AITER", "AiterExperts")
    found = release.pick("unquantized/bf16", "qwen3_moe", "TP1", at)
    assert (found.backend, found.kernel) == ("AITER", "AiterExperts")


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.31.0", "0.32.0"])
def test_mi355x_gpt_oss_aiter_mxfp4_bf16(version: str) -> None:
    # FM/oracle/mxfp4.py AITER_MXFP4_BF16 (0.29 :327 -> :234-242; 0.30, 0.31 :347; 0.32
    # :285-290) -> AiterExperts first, which takes MXFP4 W4A16 on gfx950 only
    # (experts/rocm_aiter_moe.py: 0.29 :420; 0.32 :505-509).
    release = MoeRelease(version)
    at = release.where("mi355x", "all", AITER)
    found = release.pick("mxfp4/gpt_oss", "gpt_oss", "TP1", at)
    assert (found.backend, found.kernel) == ("AITER_MXFP4_BF16", "AiterExperts")
