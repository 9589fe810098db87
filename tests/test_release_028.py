"""vLLM 0.28.0, added by ``make release VERSION=0.28.0``: what its hand-read
files changed from 0.29.0's, each case citing the 0.28.0
lines (paths inside the wheel) it rests on. Its MoE picks are checked against the
selection 0.28.0 itself executed in ``test_moe_executed.py``."""

from __future__ import annotations

import pytest

from kernelcfg.checks.constraints import Context, check
from kernelcfg.targets.presets import PRESETS
from kernelcfg.vllm import releases
from kernelcfg.vllm.compile_cache.env import env_value
from kernelcfg.vllm.kernels.attention import checks

from .moe_release import MoeRelease
from .test_attention_old import MODELS, R1, TYPICAL, _outcome, _pick
from .test_linear_old import kernel, pick

VERSION = "0.28.0"
NEXT = "0.29.0"
FORCE_MARLIN = {"VLLM_TEST_FORCE_FP8_MARLIN": "1"}


def test_serve_options_match_the_kernel_config_choices() -> None:
    # both files generated from the one wheel: `vllm serve --moe-backend` offers
    # MoEBackend's values (vllm/config/kernel.py:131-143, no b12x nor the
    # flashinfer_moe_ep_mega_* backends of 0.29.0)
    release = releases.load(VERSION)
    serve = releases.release_data("serve", VERSION)
    assert serve is not None
    option = next(o for o in serve["options"] if "--moe-backend" in o["strings"])
    assert sorted(option["choices"]) == sorted(release.choices("moe_backend"))
    assert "b12x" not in release.choices("moe_backend")
    assert "b12x" in releases.load(NEXT).choices("moe_backend")


def test_breakable_cuda_graphs_on_every_platform_alike() -> None:
    # vllm/config/vllm.py:1314-1333: one inline tuple, whatever the platform (0.29.0
    # leaves DeepSeek-V3.2 out on ROCm)
    release = releases.load(VERSION)
    assert release.breakable_architectures("rocm") == release.breakable_architectures("cuda")
    assert "DeepseekV4ForCausalLM" in release.breakable_architectures("rocm")
    newer = releases.load(NEXT)
    assert newer.breakable_architectures("rocm") < newer.breakable_architectures("cuda")


def test_renamed_triton_attention_variable_is_always_none() -> None:
    # vllm/envs.py:555-565,643: VLLM_TRITON_ATTN_USE_TD warns and returns None
    assert env_value(VERSION, {"VLLM_TRITON_ATTN_USE_TD": "1"}, "VLLM_TRITON_ATTN_USE_TD") is None


# ---------------------------------------------------------------- linear
def test_fp8_marlin_first_below_sm89() -> None:
    # kernels/linear/__init__.py:397-405: MarlinFP8ScaledMMLinearKernel heads the CUDA
    # list; scaled_mm/marlin.py:46-55 refuses cc >= 89 unless VLLM_TEST_FORCE_FP8_MARLIN
    layer = "fp8_tensor/dynamic_act"
    assert kernel(VERSION, layer, "a100") == "MarlinFP8ScaledMMLinearKernel"
    assert kernel(NEXT, layer, "a100") != "MarlinFP8ScaledMMLinearKernel"
    assert kernel(VERSION, layer, "h100") == kernel(NEXT, layer, "h100")
    assert kernel(VERSION, layer, "h100", env=FORCE_MARLIN) == "MarlinFP8ScaledMMLinearKernel"
    refused = {name: why for name, _, why in pick(VERSION, layer, "h100").trials}
    assert "VLLM_TEST_FORCE_FP8_MARLIN=1" in (refused["MarlinFP8ScaledMMLinearKernel"] or "")


def test_no_trtllm_mxfp8_linear_kernel() -> None:
    # kernels/linear/__init__.py:504-512 and :271: no FlashInferTrtllmMxfp8LinearKernel
    for version, present in ((VERSION, False), (NEXT, True)):
        found = releases.release_data("linear", version)
        assert found is not None
        lists = found["candidate_lists"]["mxfp8"]["cuda"]
        assert ("FlashInferTrtllmMxfp8LinearKernel" in lists) is present


def test_mxfp8_flashinfer_cutlass_needs_no_flashinfer() -> None:
    # kernels/linear/mxfp8/flashinfer.py:22-28: is_supported asks for cc >= 100 only
    # (held to the executed vectors: b200 without FlashInfer takes it)
    assert kernel(VERSION, "mxfp8/1x32", "b200", "minimal") == "FlashInferCutlassMxfp8LinearKernel"
    assert kernel(VERSION, "mxfp8/1x32", "a100", "minimal") != "FlashInferCutlassMxfp8LinearKernel"


def test_nvfp4_linear_under_batch_invariance() -> None:
    # kernels/linear/__init__.py:1018-1046: VLLM_BATCH_INVARIANT forces CUTLASS where
    # supported, else emulation, for every NVFP4 layer; :1052-1053 a W4A16 layer raises
    invariant = {"VLLM_BATCH_INVARIANT": "1"}
    assert kernel(VERSION, "nvfp4/w4a4", "b200", "image", invariant) == "CutlassNvFp4LinearKernel"
    assert kernel(VERSION, "nvfp4/w4a4", "a100", "image", invariant) == "EmulationNvFp4LinearKernel"
    raised = pick(VERSION, "nvfp4/w4a16", "a100", "image", invariant)
    assert raised.status == "error"
    assert "does not support W4A16" in (raised.message or "")
    assert kernel(VERSION, "nvfp4/w4a16", "a100", "image") == "MarlinNvFp4LinearKernel"


def test_b12x_has_no_w4a16_kernel() -> None:
    # kernels/linear/__init__.py:246 _LINEAR_BACKEND_KERNEL_MAP['b12x'] lists no W4A16
    # kernel and :353-381 warns and keeps the list: NVFP4 weight-only layers select as
    # on auto (0.32.0 adds B12xNvFp4W4A16LinearKernel)
    ctx = Context(PRESETS["rtx-pro-6000"], VERSION, "nvfp4_w4a16")
    problem = check("linear_backend", "b12x", ctx).problem()
    assert problem is not None
    assert problem.severity == "warning"
    assert "no nvfp4_w4a16 kernel" in problem.message or "not nvfp4_w4a16" in problem.message


# ---------------------------------------------------------------- attention
@pytest.mark.parametrize(("model", "device", "install", "expected"), TYPICAL)
def test_typical_models_as_029(model: str, device: str, install: str, expected: str) -> None:
    # the CUDA and ROCm priority lists are 0.29.0's (vllm/platforms/cuda.py and rocm.py
    # differ in neither)
    assert _outcome(_pick(VERSION, MODELS[model], f"{device}/{install}")) == expected


def test_mla_on_cpu_is_cpu_mla_whatever_the_host() -> None:
    # vllm/platforms/cpu.py:90-98: no AMX_MLA; any other request is logged and ignored
    found = _pick(VERSION, R1, "cpu")
    assert (found.status, found.backend) == ("selected", "CPU_MLA")
    asked = _pick(VERSION, R1, "cpu", "TRITON_MLA")
    assert (asked.status, asked.backend) == ("ignored", "CPU_MLA")
    assert _pick(NEXT, R1, "cpu").status == "depends"


def test_an_unimportable_backend_reads_bare_importerror_on_cuda() -> None:
    # vllm/platforms/cuda.py:389-390: `except ImportError: invalid_reasons_i = ["ImportError"]`
    found = _pick(VERSION, MODELS["llama"], "b200/minimal")
    reasons = {c.backend: c.reasons for c in found.candidates}
    assert reasons["FLASHINFER"] == ("ImportError",)
    newer = {c.backend: c.reasons for c in _pick(NEXT, MODELS["llama"], "b200/minimal").candidates}
    assert newer["FLASHINFER"] != ("ImportError",)


def test_fa4_has_no_head_size_256_kernel() -> None:
    # vllm/v1/attention/backends/fa_utils.py:172-178 and :185-190: FA2 for head size 256
    # on SM100+, the TMEM limit allowing 192/128 only
    selector = releases.release_data("selector", VERSION)
    assert selector is not None
    assert selector["flash_attn"]["fa4_hd256"] is False
    assert not checks._fa4_tmem_fits(256, 256, kernel_256=False)
    assert checks._fa4_tmem_fits(256, 256, kernel_256=True)
    assert checks._fa4_tmem_fits(192, 128, kernel_256=False)
    assert checks._fa4_tmem_fits(256, 128, kernel_256="any_v")
    assert not checks._fa4_tmem_fits(256, 128, kernel_256=True)


# ---------------------------------------------------------------- MoE
@pytest.mark.parametrize(
    ("variant", "line"),
    [("fp8_tensor/fp8_config.dynamic", "fp8.py:373-378"), ("nvfp4/modelopt", "nvfp4.py:274-278")],
)
def test_force_fp8_marlin_forces_moe_marlin(variant: str, line: str) -> None:
    # vllm/model_executor/layers/fused_moe/oracle/<line>: VLLM_TEST_FORCE_FP8_MARLIN
    # returns MARLIN (or raises) before the priority loop; 0.29.0 has no such branch
    old, new = MoeRelease(VERSION), MoeRelease(NEXT)
    at = old.where("b200", "image", FORCE_MARLIN)
    forced = old.pick(variant, "qwen3_moe", "TP1", at)
    assert (forced.status, forced.backend) == ("selected", "MARLIN"), line
    assert forced.kernel is not None
    assert "Marlin" in forced.kernel
    assert old.pick(variant, "qwen3_moe", "TP1", old.where("b200", "image")).backend != "MARLIN"
    assert new.pick(
        variant, "qwen3_moe", "TP1", new.where("b200", "image", FORCE_MARLIN)
    ).backend != ("MARLIN")
