"""vLLM 0.26.0, added by ``make release VERSION=0.26.0``: what its hand-read
files changed from 0.27.0's, each case citing the 0.26.0
lines (paths inside the wheel) it rests on. Its MoE picks are checked against the
selection 0.26.0 itself executed in ``test_moe_executed.py``."""

from __future__ import annotations

from typing import Any

import pytest

from kernelcfg.vllm import releases
from kernelcfg.vllm.kernels.attention import checks

from .moe_release import MoeRelease
from .test_attention_old import MODELS, TYPICAL, _outcome, _pick
from .test_linear_old import changed, kernel

VERSION = "0.26.0"
NEXT = "0.27.0"
FUSED_MOE = "vllm/model_executor/layers/fused_moe"


def test_kernel_config_has_no_jit_warmup_nor_batched_triton() -> None:
    # vllm/config/kernel.py: no enable_jit_warmup field, MoEBackend without batched_triton;
    # the rules' field docs follow (generated fields, hand-kept docs)
    release, newer = releases.load(VERSION), releases.load(NEXT)
    assert "batched_triton" not in release.choices("moe_backend")
    assert "batched_triton" in newer.choices("moe_backend")
    assert "enable_jit_warmup" not in release.rules["docs"]["fields"]


def test_xpu_ir_default_is_xpu_kernels() -> None:
    # vllm/platforms/xpu.py:442 ["xpu_kernels", "native"] without inductor;
    # vllm/kernels/vllm_c.py:20-23 vllm_c on CUDA-alike only; kernels/xpu_ops.py:18
    rules = releases.load(VERSION).rules
    assert rules["ir_defaults"]["xpu"]["*"][0] == ["xpu_kernels", "not inductor"]
    assert releases.load(NEXT).rules["ir_defaults"]["xpu"]["*"][0][0] == "vllm_c"
    assert rules["ir_providers"]["vllm_c"]["platforms"] == ["cuda", "rocm"]
    assert rules["ir_providers"]["xpu_kernels"]["platforms"] == ["xpu"]


# ---------------------------------------------------------------- linear
QUARK = "QuarkOCP_MX emulation (weights dequantised, GEMM in BF16)"


def test_linear_picks_that_differ_from_027() -> None:
    # quark/schemes/quark_ocp_mx.py:210-212: Quark's OCP MX layers emulate inside the
    # scheme (no init_mxfp4/mxfp6_linear_kernel there); kernels/linear/__init__.py:467-475
    # no ROCm MXFP4 list (compressed-tensors W4A4 MXFP4 finds no kernel on ROCm)
    for install in ("minimal", "all"):
        found = changed(NEXT, VERSION, install)
        assert found
        for (device, layer), (_old, new) in found.items():
            if layer == "mxfp4/w4a4":
                assert (device, new) == ("mi300x", None)
            else:
                assert layer.startswith(("mxfp6/", "mxfp4/w4a16", "mxfp4/w4a8")), layer
                assert new == QUARK


def test_mxfp4_list_and_walk() -> None:
    # kernels/linear/__init__.py:467-475 _POSSIBLE_MXFP4_KERNELS: CUDA FlashInfer, Marlin,
    # Humming, no emulation kernel; :808-850 init_mxfp4_linear_kernel asks is_supported only
    data = releases.release_data("linear", VERSION)
    assert data is not None
    assert data["candidate_lists"]["mxfp4"]["cuda"] == [
        "FlashInferMxFp4LinearKernel",
        "MarlinMxFp4LinearKernel",
        "HummingMxFp4LinearKernel",
    ]
    assert "rocm" not in data["candidate_lists"]["mxfp4"]
    for name in data["candidate_lists"]["mxfp4"]["cuda"]:
        assert all(c["stage"] == "is_supported" for c in data["kernels"][name]["checks"])
    assert "mxfp6" not in data["candidate_lists"]
    assert kernel(VERSION, "mxfp4/w4a4", "h100", "all") == "MarlinMxFp4LinearKernel"


def test_nvfp4_w4a16_explicit_walks_the_whole_list() -> None:
    # kernels/linear/__init__.py:936-948: no narrowing to the A16 kernels (auto forces
    # Marlin, :922-924, as 0.27.0 does)
    data = releases.release_data("linear", VERSION)
    newer = releases.release_data("linear", NEXT)
    assert data is not None
    assert newer is not None
    rule = data["nvfp4_w4a16_rule"]
    assert rule["a16_kernels"] == data["candidate_lists"]["nvfp4"]["cuda"]
    assert len(newer["nvfp4_w4a16_rule"]["a16_kernels"]) == 2
    assert kernel(VERSION, "nvfp4/w4a16", "b200", "all") == "MarlinNvFp4LinearKernel"


def test_rocm_fp8_kernels_need_mi3xx() -> None:
    # scaled_mm/pytorch.py:104-110 RowWise "requires MI3xx."; scaled_mm/rocm.py:82-85
    data = releases.release_data("linear", VERSION)
    assert data is not None
    reasons = {
        c["reason"]
        for name in ("RowWiseTorchFP8ScaledMMLinearKernel", "ROCmFP8ScaledMMLinearKernel")
        for c in data["kernels"][name]["checks"]
    }
    assert {"requires MI3xx.", "requires MI3xx or gfx12x"} <= reasons


# ---------------------------------------------------------------- attention
@pytest.mark.parametrize(("model", "device", "install", "expected"), TYPICAL)
def test_typical_models_as_027(model: str, device: str, install: str, expected: str) -> None:
    # the CUDA, ROCm and CPU priority lists are 0.27.0's (MLA refused on CPU as there)
    if (model, device) == ("r1", "cpu"):
        assert _pick(VERSION, MODELS[model], device).status == "error"
        return
    assert _outcome(_pick(VERSION, MODELS[model], f"{device}/{install}")) == expected


def test_fp8_kv_cache_needs_fa3_on_sm90() -> None:
    # v1/attention/backends/flash_attn.py:178-188 supports_kv_cache_dtype: FP8 with FA3 on
    # SM90 only (0.27.0's flash_attn_supports_kv_cache_dtype also takes FA4 on SM100)
    llama = MODELS["llama"]
    old = _pick(VERSION, llama, "b200/pip", "FLASH_ATTN", kv="fp8")
    assert old.status == "error"
    assert "kv_cache_dtype not supported" in str(old.message)
    assert _pick(NEXT, llama, "b200/pip", "FLASH_ATTN", kv="fp8").status == "selected"
    assert _pick(VERSION, llama, "h100/pip", "FLASH_ATTN", kv="fp8").status == "selected"


def test_flash_attn_data_differences() -> None:
    # flash_attn.py:205-226 no FP8 KV combination check; fa_utils.py:239-247 FA4 on
    # Blackwell above head size 128 only at 192 (any V); rocm_aiter_fa.py:784 on_mi3xx;
    # registry.py: no CUTLASS_MSA / TRITON_MSA
    data = releases.release_data("selector", VERSION)
    assert data is not None
    assert data["flash_attn"]["fp8_kv_sm100_fa4"] is False
    assert (data["flash_attn"]["fa4_hd256"], data["flash_attn"]["fa4_hd192"]) == (False, "any_v")
    assert not checks._fa4_tmem_fits(256, 256, False, hd192_any_v=True)
    assert checks._fa4_tmem_fits(192, 192, False, hd192_any_v=True)
    assert not checks._fa4_tmem_fits(192, 192, False)
    assert all(
        "fa_kv_refused" not in c["if"] for c in data["backends"]["FLASH_ATTN"]["combination"]
    )
    assert data["backends"]["ROCM_AITER_FA"]["capability"] == {"gfx_in": ["gfx942", "gfx950"]}
    assert checks._ARCH_RULES["gfx_in"]("gfx950", ["gfx942", "gfx950"])
    assert not checks._ARCH_RULES["gfx_in"]("gfx1250", ["gfx942", "gfx950"])
    assert "CUTLASS_MSA" not in data["backends"]


# ---------------------------------------------------------------- MoE
def test_marlin_refuses_one_sided_flashinfer_nvlink() -> None:
    # experts/marlin_moe.py:658-662 _supports_parallel_config: one- and two-sided refused
    old, new = MoeRelease(VERSION), MoeRelease(NEXT)
    layout = "DP8+EP/flashinfer_nvlink_one_sided"
    found = old.pick("fp8_tensor/fp8_config.dynamic", "qwen3_moe", layout, old.where("a100", "all"))
    assert found.status == "error"
    newer = new.pick("fp8_tensor/fp8_config.dynamic", "qwen3_moe", layout, new.where("a100", "all"))
    assert (newer.status, newer.kernel) == ("selected", "MarlinExperts")


def test_no_situ_activation_anywhere() -> None:
    # experts/marlin_moe.py:641-655, triton_moe.py:123-135, trtllm_mxfp4_moe.py:103-106,
    # trtllm_nvfp4_moe.py:199-207, deep_gemm_moe.py:446-447, rocm_aiter_moe.py:262; no file
    # under experts/ names SITU, and every _supports_activation is an explicit list
    data = releases.release_data("moe", VERSION)
    newer = releases.release_data("moe", NEXT)
    assert data is not None
    assert newer is not None

    def listed(facts: dict[str, Any]) -> list[str]:
        return [
            name
            for name, cls in facts["experts"].items()
            if "SITU" in str(cls["supports"].get("activation"))
        ]

    assert listed(data) == []
    assert "MarlinExperts" in listed(newer)


def test_trtllm_mxfp4_monolithic_takes_no_deepseek_routing() -> None:
    # experts/trtllm_mxfp4_moe.py:136-142: Renormalize routings only, so DeepSeek-V3's
    # layer takes the modular class (as the executed vectors show on B200)
    old, new = MoeRelease(VERSION), MoeRelease(NEXT)
    args = ("mxfp4/quark.w4a16", "deepseek_v3", "TP1")
    assert old.pick(*args, old.where("b200", "all")).kernel == "TrtLlmMxfp4ExpertsModular"
    assert new.pick(*args, new.where("b200", "all")).kernel == "TrtLlmMxfp4ExpertsMonolithic"


def test_wna16_oracle_has_no_triton_backend() -> None:
    # oracle/int_wna16.py:101-117 _get_priority_backends, :136-213 no
    # _backend_incompatibility_reason
    data = releases.release_data("moe", VERSION)
    assert data is not None
    wna16 = data["oracles"]["wna16"]
    assert "TRITON" not in wna16["priority"]
    assert wna16["backend_checks"] == {}
    assert "triton" not in wna16["values"]


def test_wna16_methods_without_an_oracle() -> None:
    # moe_wna16.py:191 MoeWNA16Method runs fused_experts; compressed_tensors_moe.py:104-168
    # a compressed-tensors layer on ROCm goes to CompressedTensorsWNA16MoEMethod (Triton)
    old = MoeRelease(VERSION)
    cuda = old.where("h100", "all")
    found = old.pick("int4_w4a16/moe_wna16", "qwen3_moe", "TP1", cuda)
    assert (found.status, found.backend) == ("selected", None)
    assert found.kernel is not None
    assert found.kernel.startswith("MoeWNA16Method")
    rocm = old.where("mi300x", "all")
    ct = old.pick("int4_w4a16/compressed_tensors.g128", "qwen3_moe", "TP1", rocm)
    assert ct.kernel is not None
    assert ct.kernel.startswith("TritonWNA16Experts")
    assert old.pick("int4_w4a16/compressed_tensors.g128", "qwen3_moe", "TP1", cuda).kernel == (
        "MarlinExperts"
    )


def test_inc_mxfp4_moe_raises() -> None:
    # quantization/inc/schemes/factory.py:9-22 resolve_scheme knows INCWna16Scheme only
    old = MoeRelease(VERSION)
    found = old.pick("mxfp4/inc", "qwen3_moe", "TP1", old.where("b200", "all"))
    assert found.status == "error"
    assert str(found.message).startswith("NotImplementedError: No INC scheme found")


def test_rocm_mxfp8_falls_back_unchecked() -> None:
    # oracle/mxfp8.py:170-171 -> _select_rocm_mxfp8_backend (:108-134): native dot_scaled
    # on gfx95, emulation elsewhere, no is_supported_config
    old, new = MoeRelease(VERSION), MoeRelease(NEXT)
    found = old.pick("mxfp8/any", "qwen3_moe", "TP1", old.where("mi300x", "minimal"))
    assert (found.backend, found.kernel) == ("EMULATION", "Mxfp8EmulationTritonExperts")
    assert "TRITON_MXFP8" not in old.model.data["oracles"]["mxfp8"]["priority"]
    assert "TRITON_MXFP8" in new.model.data["oracles"]["mxfp8"]["priority"]


def test_mxfp4_after_the_loop() -> None:
    # oracle/mxfp4.py:544-563: ROCm TRITON_UNFUSED (_return_or_raise), CUDA raises
    data = releases.release_data("moe", VERSION)
    assert data is not None
    spec = data["oracles"]["mxfp4"]
    assert [f["backend"] for f in spec["forced"]] == ["XPU", "CPU", "TRITON_UNFUSED"]
    assert spec["no_candidate"]["raises_when"] == {"kind": ["cuda"]}
    dsv4 = data["oracles"]["mxfp4_deepseek_v4"]
    assert {"when": {"kind": ["rocm"]}, "priority": ["AITER_MXFP4_BF16"]}.items() <= next(
        r for r in dsv4["priority_by"] if r["when"] == {"kind": ["rocm"]}
    ).items()


def test_int8_cpu_first_on_cpu() -> None:
    # oracle/int8.py:54-55 _move_to_front(CPU) on a CPU platform; :81-87 CPUExpertsInt8 only
    old = MoeRelease(VERSION)
    found = old.pick("int8_w8a8/compressed_tensors", "qwen3_moe", "TP1", old.where("cpu", "pip"))
    assert (found.backend, found.kernel) == ("CPU", "CPUExpertsInt8")


def test_aiter_on_mi3xx_only() -> None:
    # vllm/_aiter_ops.py:68-72 is_aiter_found_and_supported: on_mi3xx (gfx942, gfx950);
    # experts/aiter_mxfp4_w4a8_moe.py:200-207 gfx950 only; 0.26.0 names no gfx1250
    data = releases.release_data("moe", VERSION)
    newer = releases.release_data("moe", NEXT)
    assert data is not None
    assert newer is not None
    experts = data["experts"]
    assert experts["AiterExperts"]["supports"]["current_device"]["gfx_contains"] == [
        "gfx942",
        "gfx950",
    ]
    assert experts["AiterW4A8ExpertsMonolithic"]["supports"]["current_device"]["gfx_in"] == [
        "gfx950"
    ]
    assert (
        "gfx1250" in newer["experts"]["AiterExperts"]["supports"]["current_device"]["gfx_contains"]
    )


def test_mla_model_types() -> None:
    # vllm/transformers_utils/model_arch_config_convertor.py:260-284 is_deepseek_mla: no
    # k3_dspark (0.27.0 adds it), the list exactly as the source has it
    data = releases.release_data("selector", VERSION)
    newer = releases.release_data("selector", NEXT)
    assert data is not None
    assert newer is not None
    types = data["models"]["mla_model_types"]
    assert "k3_dspark" not in types
    assert "k3_dspark" in newer["models"]["mla_model_types"]
    assert len(types) == 17
