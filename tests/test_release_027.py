"""vLLM 0.27.0, added by ``make release VERSION=0.27.0``: what its hand-read
files changed from 0.28.0's, each case citing the 0.27.0
lines (paths inside the wheel) it rests on. Its MoE picks are checked against the
selection 0.27.0 itself executed in ``test_moe_executed.py``."""

from __future__ import annotations

import pytest

from kernelcfg.checks.constraints import Context, check
from kernelcfg.targets.presets import PRESETS
from kernelcfg.vllm import releases

from .moe_release import MoeRelease
from .test_attention_old import MODELS, R1, TYPICAL, _outcome, _pick
from .test_linear_old import changed, kernel, pick

VERSION = "0.27.0"
NEXT = "0.28.0"


def test_serve_options_match_the_kernel_config_choices() -> None:
    # both generated from the one wheel; no b12x linear backend yet
    # (vllm/config/kernel.py LinearBackend)
    release = releases.load(VERSION)
    serve = releases.release_data("serve", VERSION)
    assert serve is not None
    option = next(o for o in serve["options"] if "--linear-backend" in o["strings"])
    assert sorted(option["choices"]) == sorted(release.choices("linear_backend"))
    assert "b12x" not in release.choices("linear_backend")
    assert "b12x" in releases.load(NEXT).choices("linear_backend")


def test_rocm_rms_norm_aiter_default_has_no_rdna4_exception() -> None:
    # vllm/platforms/rocm.py:1049-1075 get_default_ir_op_priority: no on_rdna4() test
    rules = releases.load(VERSION).rules["ir_defaults"]["rocm"]["rms_norm"]
    newer = releases.load(NEXT).rules["ir_defaults"]["rocm"]["rms_norm"]
    assert "rdna4" not in rules[0][1]
    assert rules[0][1] + " and not arch.rdna4" == newer[0][1]


# ---------------------------------------------------------------- linear
def test_linear_picks_that_differ_from_028() -> None:
    # kernels/linear/scaled_mm/humming.py:27 is_supported does not ask whether humming
    # is installed (0.28.0 does), so W8A16 FP8 takes Humming first (wfp8a16 list) where
    # 0.28.0 fell to Marlin or nothing; mxfp4/emulation.py:62 no amd-quark check, so ROCm
    # MXFP4 layers take the emulation kernel without quark
    found = changed(NEXT, VERSION, "minimal")
    assert found
    for (_device, layer), (_old, new) in found.items():
        if layer.startswith("w8a16_fp8/"):
            assert new == "HummingFP8ScaledMMLinearKernel"
        else:
            assert layer.startswith("mxfp4/")
            assert new == "EmulationMxfp4LinearKernel"
    assert changed(NEXT, VERSION, "all") == {}


def test_linear_facts_held_to_the_executed_vectors() -> None:
    # kernels/linear/mxfp8/flashinfer.py:22-28: FlashInfer CUTLASS MXFP8 asks for
    # cc >= 100 only, not for FlashInfer; __init__.py:988-1023: VLLM_BATCH_INVARIANT
    # forces CUTLASS or emulation for every NVFP4 layer, then a W4A16 layer raises
    assert kernel(VERSION, "mxfp8/1x32", "b200", "minimal") == "FlashInferCutlassMxfp8LinearKernel"
    invariant = {"VLLM_BATCH_INVARIANT": "1"}
    assert kernel(VERSION, "nvfp4/w4a4", "rtx-pro-6000", "image", invariant) == (
        "CutlassNvFp4LinearKernel"
    )
    assert pick(VERSION, "nvfp4/w4a16", "b200", "image", invariant).status == "error"


def test_a_named_backend_without_a_w4a16_kernel_raises() -> None:
    # kernels/linear/__init__.py:244 _LINEAR_BACKEND_KERNEL_MAP['flashinfer_cutedsl']
    # has no W4A16 kernel; init_nvfp4_linear_kernel (:1039-1045) raises where the
    # filtered list is empty (0.28.0 warns and selects as on auto)
    for version, severity in ((VERSION, "error"), (NEXT, "warning")):
        ctx = Context(PRESETS["b200"], version, "nvfp4_w4a16")
        problem = check("linear_backend", "flashinfer_cutedsl", ctx).problem()
        assert problem is not None, version
        assert problem.severity == severity, version


def test_no_b12x_linear_kernels() -> None:
    # kernels/linear/__init__.py _POSSIBLE_*_KERNELS: no B12x kernel in any list
    data = releases.release_data("linear", VERSION)
    assert data is not None
    listed = {
        k
        for by_platform in data["candidate_lists"].values()
        for ks in by_platform.values()
        for k in ks
    }
    assert not any("B12x" in k for k in listed)
    assert kernel(VERSION, "fp8_block/128x128", "rtx-pro-6000", "all") is not None


# ---------------------------------------------------------------- attention
@pytest.mark.parametrize(
    ("model", "device", "install", "expected"),
    [case for case in TYPICAL if case[:2] != ("r1", "cpu")],  # MLA on CPU: below
)
def test_typical_models_as_028(model: str, device: str, install: str, expected: str) -> None:
    # the CUDA and ROCm priority lists of the typical targets are 0.28.0's
    assert _outcome(_pick(VERSION, MODELS[model], f"{device}/{install}")) == expected


def test_mla_refused_on_cpu() -> None:
    # vllm/platforms/cpu.py:83-84: NotImplementedError before the sparse check
    found = _pick(VERSION, R1, "cpu")
    assert found.status == "error"
    assert found.message == "NotImplementedError: MLA is not supported on CPU."
    assert _outcome(_pick(NEXT, R1, "cpu")) == "CPU_MLA"


def test_flashinfer_sinks_on_sm100_only() -> None:
    # vllm/v1/attention/backends/flashinfer.py:473-490 supports_sink: SM100 trtllm-gen
    gpt_oss = MODELS["gpt-oss"]
    old = _pick(VERSION, gpt_oss, "rtx-pro-6000/image", "FLASHINFER")
    new = _pick(NEXT, gpt_oss, "rtx-pro-6000/image", "FLASHINFER")
    assert old.status != new.status
    assert _outcome(_pick(VERSION, gpt_oss, "b200/image", "FLASHINFER")) == "FLASHINFER"


def test_selector_data_differences() -> None:
    # flashinfer.py:345 no nvfp4_4over6 KV cache; hpc_attn.py:308 SM90 and newer;
    # fa_utils.py:242-263 FA4 takes head size 256 whatever the V head size
    data = releases.release_data("selector", VERSION)
    assert data is not None
    assert "nvfp4_4over6" not in data["backends"]["FLASHINFER"]["kv_cache_dtypes"]
    assert data["backends"]["HPC_ATTN"]["capability"] == {"min": [9, 0]}
    assert data["flash_attn"]["fa4_hd256"] == "any_v"
    assert "CPU_MLA" not in data["backends"]


# ---------------------------------------------------------------- MoE
def test_cpu_unquantized_moe_has_no_experts_class() -> None:
    # vllm/model_executor/layers/fused_moe/oracle/unquantized.py:202-204
    old, new = MoeRelease(VERSION), MoeRelease(NEXT)
    found = old.pick("unquantized/bf16", "qwen3_moe", "TP1", old.where("cpu", "pip"))
    assert (found.backend, found.kernel) == ("CPU", None)
    assert new.pick("unquantized/bf16", "qwen3_moe", "TP1", new.where("cpu", "pip")).kernel
