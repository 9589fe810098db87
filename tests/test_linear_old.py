"""``--linear-backend auto`` on vLLM 0.32.0, 0.31.0, 0.30.0 and 0.29.0, hand-derived from
each release's source (``/tmp/kc-src/src-X.Y.Z/vllm``; paths below are relative to its
``vllm/model_executor/kernels/linear/`` unless they start with ``vllm/``).

Each case names the line that decides it. The ``*_differs_from_*`` tests pin every pick
that changes from the next newer release on the common targets, so an unintended change
in either file shows up as an extra or missing entry.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kernelcfg.vllm.kernels.linear import LinearModel, Pick, model

AITER = {"VLLM_ROCM_USE_AITER": "1"}
TARGETS = {
    "h100": ("cuda", "9.0", None),
    "b200": ("cuda", "10.0", None),
    "a100": ("cuda", "8.0", None),
    "rtx-pro-6000": ("cuda", "12.0", None),
    "mi300x": ("rocm", None, "gfx942"),
    "cpu": ("cpu", None, None),
}


def release(version: str) -> LinearModel:
    found = model(version)
    assert found is not None
    return found


def pick(
    version: str,
    layer: str,
    device: str,
    install: str = "pip",
    env: Mapping[str, str] | None = None,
) -> Pick:
    found = release(version)
    kind, capability, gfx = TARGETS[device]
    return found.pick(layer, found.where(kind, capability, gfx, install, env or {}))


def kernel(
    version: str,
    layer: str,
    device: str,
    install: str = "pip",
    env: Mapping[str, str] | None = None,
) -> str | None:
    return pick(version, layer, device, install, env).kernel


Change = tuple[str | None, str | None]


def changed(
    old: str, new: str, install: str, env: Mapping[str, str] | None = None
) -> dict[tuple[str, str], Change]:
    """Every (device, layer) whose kernel differs between two releases."""
    out = {}
    for device in TARGETS:
        for layer in release(new).data["layers"]:
            a = kernel(old, layer, device, install, env)
            b = kernel(new, layer, device, install, env)
            if a != b:
                out[(device, layer)] = (a, b)
    return out


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.31.0", "0.32.0"])
def test_the_release_has_linear_facts_naming_it(version: str) -> None:
    found = release(version)
    assert found.data["vllm_version"] == version
    assert f"vLLM {version}'s" in found.data["about"]


# --------------------------------------------------------------------------- 0.32.0


def test_032_cpu_fp8_channel_falls_to_torch() -> None:
    """__init__.py:462-467: _POSSIBLE_FP8_KERNELS[CPU] has no
    CPUFp8ChannelWiseScaledMMLinearKernel (0.33.0 adds it); scaled_mm/cpu.py's per-tensor
    kernel wants a per-tensor weight scale, so ChannelWiseTorch takes per-channel."""
    got = pick("0.32.0", "fp8_channel/dynamic_token", "cpu")
    assert got.kernel == "ChannelWiseTorchFP8ScaledMMLinearKernel"
    assert "CPUFp8ChannelWiseScaledMMLinearKernel" not in got.candidates
    assert got.trials[1] == (
        "CPUFp8PerTensorScaledMMLinearKernel",
        "refused",
        "can_implement: requires a per-tensor weight scale.",
    )


def test_032_aiter_int8_takes_static_per_tensor() -> None:
    """scaled_mm/aiter.py:63-66: AiterInt8ScaledMMLinearKernel.can_implement checks only
    input_symmetric (the per-token x per-channel refusal is 0.33.0's)."""
    assert (
        kernel("0.32.0", "int8_w8a8/tensor_static", "mi300x", "image", AITER)
        == "AiterInt8ScaledMMLinearKernel"
    )
    assert (
        kernel("0.33.0", "int8_w8a8/tensor_static", "mi300x", "image", AITER)
        == "TritonInt8ScaledMMLinearKernel"
    )


def test_032_mxfp4_refusals_come_from_can_implement() -> None:
    """__init__.py:1010-1025 (init_mxfp4_linear_kernel): is_supported then can_implement,
    no _supports_quant_scheme; mxfp4/marlin.py:30 refuses an MXFP8 activation in its
    can_implement; mxfp4/humming.py's quant_key_to_input_schema takes it."""
    got = pick("0.32.0", "mxfp4/w4a8_mxfp8", "b200")
    assert got.kernel == "HummingMxFp4LinearKernel"
    assert got.trials[1] == (
        "MarlinMxFp4LinearKernel",
        "refused",
        "can_implement: only supports MXFP4 dynamic or unquantized activations",
    )


def test_032_h100_nvfp4_weight_only_walks_humming_first() -> None:
    """__init__.py:1184 `elif not prefers_humming(compute_capability)`: SM90 is not forced
    to Marlin; __init__.py:411 prioritize_humming puts Humming ahead of Marlin."""
    got = pick("0.32.0", "nvfp4/w4a16", "h100")
    assert got.kernel == "HummingNvFp4LinearKernel"
    assert got.candidates[:2] == (
        "FlashInferCuteDslNvFp4W4A16LinearKernel",
        "HummingNvFp4LinearKernel",
    )


def test_032_b200_nvfp4_weight_only_is_cutedsl_with_flashinfer() -> None:
    """__init__.py:1182-1183: SM100 with FlashInfer forces the CuTe-DSL W4A16 kernel;
    without FlashInfer (pip) nvfp4/flashinfer.py refuses it and Marlin is forced."""
    assert (
        kernel("0.32.0", "nvfp4/w4a16", "b200", "image")
        == "FlashInferCuteDslNvFp4W4A16LinearKernel"
    )
    assert kernel("0.32.0", "nvfp4/w4a16", "b200", "pip") == "MarlinNvFp4LinearKernel"


def test_032_common_fp8_and_int4_picks() -> None:
    """scaled_mm/cutlass.py: CUTLASS FP8 on SM89+; __init__.py _POSSIBLE_FP8_BLOCK_KERNELS
    [CUDA]: DeepGEMM (pip has no FlashInfer for the composite) on H100;
    mixed_precision/machete.py: Machete on SM90 for GPTQ int4."""
    assert kernel("0.32.0", "fp8_tensor/dynamic_act", "h100") == "CutlassFP8ScaledMMLinearKernel"
    assert kernel("0.32.0", "fp8_block/128x128", "h100") == "DeepGemmFp8BlockScaledMMKernel"
    assert (
        kernel("0.32.0", "fp8_block/128x128", "h100", "image")
        == "FlashInferFp8DeepGEMMDynamicBlockScaledKernel"
    )
    assert kernel("0.32.0", "int4_w4a16/gptq_sym", "h100") == "MacheteLinearKernel"
    assert kernel("0.32.0", "fp8_tensor/dynamic_act", "b200", "image") == (
        "FlashInferFP8ScaledMMLinearKernel"
    )


def test_032_rocm_and_unquantized() -> None:
    """scaled_mm/aiter.py AiterFp8BlockScaledMMKernel needs VLLM_ROCM_USE_AITER; without it
    Triton; vllm/model_executor/layers/utils.py dispatch_unquantized_gemm per platform."""
    assert (
        kernel("0.32.0", "fp8_block/128x128", "mi300x", "image") == "TritonFp8BlockScaledMMKernel"
    )
    assert (
        kernel("0.32.0", "fp8_block/128x128", "mi300x", "image", AITER)
        == "AiterFp8BlockScaledMMKernel"
    )
    assert kernel("0.32.0", "unquantized/bf16", "h100") == "default_unquantized_gemm"
    assert kernel("0.32.0", "unquantized/bf16", "cpu") == "cpu_unquantized_gemm"
    assert kernel("0.32.0", "unquantized/bf16", "mi300x") == "rocm_unquantized_gemm"


def test_032_xpu_mxfp_lists_lack_the_torch_kernels() -> None:
    """__init__.py:552-572 / 607-622: no TorchMxFp8LinearKernel, TorchMxFp4LinearKernel
    (mxfp8/pytorch.py, mxfp4/pytorch.py are 0.33.0's) and no Rdna3W4A8MxFp4LinearKernel."""
    data = release("0.32.0").data
    assert data["candidate_lists"]["mxfp4"]["xpu"] == ["XPUMxFp4LinearKernel"]
    assert data["candidate_lists"]["mxfp4"]["rocm"] == [
        "AiterMxfp4LinearKernel",
        "EmulationMxfp4LinearKernel",
    ]
    assert "TorchMxFp8LinearKernel" not in data["candidate_lists"]["mxfp8"]["cuda"]


def test_032_differs_from_033() -> None:
    assert changed("0.32.0", "0.33.0", "pip") == {
        ("cpu", "fp8_channel/dynamic_token"): (
            "ChannelWiseTorchFP8ScaledMMLinearKernel",
            "CPUFp8ChannelWiseScaledMMLinearKernel",
        )
    }
    assert changed("0.32.0", "0.33.0", "image", AITER) == {
        ("cpu", "fp8_channel/dynamic_token"): (
            "ChannelWiseTorchFP8ScaledMMLinearKernel",
            "CPUFp8ChannelWiseScaledMMLinearKernel",
        ),
        ("mi300x", "int8_w8a8/tensor_static"): (
            "AiterInt8ScaledMMLinearKernel",
            "TritonInt8ScaledMMLinearKernel",
        ),
    }


# --------------------------------------------------------------------------- 0.31.0


def test_031_h100_nvfp4_weight_only_is_forced_to_marlin() -> None:
    """__init__.py:1128-1131 `else: force_kernel = MarlinNvFp4LinearKernel`: no
    prefers_humming yet, SM90 is forced like every non-SM100 device."""
    got = pick("0.31.0", "nvfp4/w4a16", "h100")
    assert (got.kernel, got.candidates) == (
        "MarlinNvFp4LinearKernel",
        ("MarlinNvFp4LinearKernel",),
    )


def test_031_h100_lists_are_walked_as_written() -> None:
    """__init__.py:374-395 _resolve_backend_kernels: no prioritize_humming, so Marlin
    (listed before Humming in _POSSIBLE_MXFP4/_MXFP8/_NVFP4_KERNELS[CUDA]) wins on SM90."""
    assert kernel("0.31.0", "mxfp4/w4a16", "h100") == "MarlinMxFp4LinearKernel"
    assert kernel("0.31.0", "mxfp8/1x32", "h100") == "MarlinMxfp8LinearKernel"
    assert kernel("0.31.0", "nvfp4/w4a4", "h100") == "MarlinNvFp4LinearKernel"


def test_031_nvfp4_list_has_no_b12x_w4a16() -> None:
    """__init__.py:551-568 _POSSIBLE_NVFP4_KERNELS[CUDA] and :1079-1083 a16_kernels: no
    B12xNvFp4W4A16LinearKernel (0.32.0's)."""
    data = release("0.31.0").data
    assert "B12xNvFp4W4A16LinearKernel" not in data["candidate_lists"]["nvfp4"]["cuda"]
    assert data["nvfp4_w4a16_rule"]["a16_kernels"] == [
        "FlashInferCuteDslNvFp4W4A16LinearKernel",
        "MarlinNvFp4LinearKernel",
        "HummingNvFp4LinearKernel",
    ]
    assert kernel("0.31.0", "nvfp4/w4a16", "rtx-pro-6000") == "MarlinNvFp4LinearKernel"


def test_031_cpu_fp8_uses_the_amx_kernels() -> None:
    """__init__.py:439-444: CPUFP8W8A8 (AMX-FP8, absent) then CPUFp8PerTensor for
    per-tensor FP8; scaled_mm/cpu.py CPUFp8W8A8BlockScaledMMKernel falls to W8A16."""
    assert (
        kernel("0.31.0", "fp8_tensor/dynamic_act", "cpu") == "CPUFp8PerTensorScaledMMLinearKernel"
    )
    assert kernel("0.31.0", "fp8_block/128x128", "cpu") == "CPUFp8BlockScaledMMKernel"
    assert (
        kernel("0.31.0", "fp8_channel/dynamic_token", "cpu")
        == "ChannelWiseTorchFP8ScaledMMLinearKernel"
    )


def test_031_a100_fp8_is_marlin() -> None:
    """scaled_mm/cutlass.py:168-169: cutlass_fp8_supported() refuses SM80 with "CUTLASS FP8
    kernels not available"; Torch per-tensor needs SM89; Marlin FP8 takes it."""
    got = pick("0.31.0", "fp8_tensor/dynamic_act", "a100")
    assert got.kernel == "MarlinFP8ScaledMMLinearKernel"
    assert (
        "CutlassFP8ScaledMMLinearKernel",
        "refused",
        "is_supported: CUTLASS FP8 kernels not available",
    ) in got.trials


def test_031_common_picks() -> None:
    """Lists and checks shared with 0.32.0: CUTLASS FP8 on H100, DeepGEMM block FP8,
    Machete int4 on H100, Marlin int4 on A100, CuTe-DSL NVFP4 on B200 with FlashInfer."""
    assert kernel("0.31.0", "fp8_tensor/static_act", "h100") == "CutlassFP8ScaledMMLinearKernel"
    assert kernel("0.31.0", "fp8_block/128x128", "h100") == "DeepGemmFp8BlockScaledMMKernel"
    assert kernel("0.31.0", "int4_w4a16/gptq_sym", "h100") == "MacheteLinearKernel"
    assert kernel("0.31.0", "int4_w4a16/gptq_sym", "a100") == "MarlinLinearKernel"
    assert kernel("0.31.0", "nvfp4/w4a4", "b200", "image") == "FlashInferCuteDslNvFp4LinearKernel"
    assert kernel("0.31.0", "unquantized/bf16", "b200") == "default_unquantized_gemm"


def test_031_differs_from_032() -> None:
    humming = {
        ("h100", "mxfp8/1x32"): ("MarlinMxfp8LinearKernel", "HummingMxfp8LinearKernel"),
        ("h100", "mxfp4/w4a16"): ("MarlinMxFp4LinearKernel", "HummingMxFp4LinearKernel"),
        ("h100", "mxfp4/w4a4"): ("MarlinMxFp4LinearKernel", "HummingMxFp4LinearKernel"),
        ("h100", "nvfp4/w4a4"): ("MarlinNvFp4LinearKernel", "HummingNvFp4LinearKernel"),
        ("h100", "nvfp4/w4a16"): ("MarlinNvFp4LinearKernel", "HummingNvFp4LinearKernel"),
    }
    assert changed("0.31.0", "0.32.0", "pip") == humming
    assert changed("0.31.0", "0.32.0", "minimal") == {}  # no Humming installed: no reorder


# --------------------------------------------------------------------------- 0.30.0


def test_030_a100_fp8_is_cutlass() -> None:
    """scaled_mm/cutlass.py:164-173 (0.30.0): CutlassFP8ScaledMMLinearKernel.is_supported
    only asks for CUDA, and can_implement always passes."""
    got = pick("0.30.0", "fp8_tensor/dynamic_act", "a100")
    assert got.kernel == "CutlassFP8ScaledMMLinearKernel"
    assert kernel("0.30.0", "fp8_channel/dynamic_token", "a100") == "CutlassFP8ScaledMMLinearKernel"


def test_030_cpu_fp8_has_only_torch_and_w8a16_block() -> None:
    """__init__.py:440-443 _POSSIBLE_FP8_KERNELS[CPU] = [PerTensorTorch, ChannelWiseTorch];
    :472-474 _POSSIBLE_FP8_BLOCK_KERNELS[CPU] = [CPUFp8BlockScaledMMKernel]."""
    got = pick("0.30.0", "fp8_tensor/dynamic_act", "cpu")
    assert (got.kernel, got.candidates[0]) == (
        "PerTensorTorchFP8ScaledMMLinearKernel",
        "PerTensorTorchFP8ScaledMMLinearKernel",
    )
    got = pick("0.30.0", "fp8_block/128x128", "cpu")
    assert (got.kernel, got.candidates) == (
        "CPUFp8BlockScaledMMKernel",
        ("CPUFp8BlockScaledMMKernel",),
    )


def test_030_rocm_block_fp8_tries_the_preshuffled_kernel_first() -> None:
    """__init__.py:467-471: AiterPreshuffledFp8BlockScaledMMKernel heads
    _POSSIBLE_FP8_BLOCK_KERNELS[ROCM]; scaled_mm/aiter.py:519-524 wants a tuned
    bpreshuffle config for the layer's (N, K), taken here as absent."""
    got = pick("0.30.0", "fp8_block/128x128", "mi300x", "image", AITER)
    assert got.kernel == "AiterFp8BlockScaledMMKernel"
    assert got.trials[0][:2] == ("AiterPreshuffledFp8BlockScaledMMKernel", "refused")
    assert "tuned aiter blockscale bpreshuffle" in str(got.trials[0][2])
    assert got.values == ("aiter",)


def test_030_allspark_is_tried_on_ampere() -> None:
    """__init__.py:500-509: AllSparkLinearKernel after Machete; mixed_precision/allspark.py
    :21 min capability 80; allspark_utils.py:27-32 refuses group_size != -1 on Ampere."""
    got = pick("0.30.0", "int4_w4a16/gptq_sym", "a100")
    assert got.kernel == "MarlinLinearKernel"
    assert got.trials[2] == (
        "AllSparkLinearKernel",
        "refused",
        "can_implement: For Ampere GPU, AllSpark does not support group_size = 128. "
        "Only group_size = -1 are supported.",
    )


def test_030_mxfp4_with_mxfp8_activations_has_no_kernel() -> None:
    """mxfp4/humming.py:42-43 (0.30.0): Humming takes only MXFP4-dynamic or no activation
    quantisation, like Marlin; emulation has no MXFP8 either: vLLM raises."""
    got = pick("0.30.0", "mxfp4/w4a8_mxfp8", "h100")
    assert got.status == "error"
    assert (
        "HummingMxFp4LinearKernel",
        "refused",
        "can_implement: only supports MXFP4 dynamic or unquantized activations",
    ) in got.trials


def test_030_mxfp6_is_emulated_on_cuda() -> None:
    """__init__.py:573-578 _POSSIBLE_MXFP6_KERNELS[CUDA] = [EmulationMxfp6LinearKernel]
    (mxfp6/humming.py arrives in 0.31.0)."""
    assert kernel("0.30.0", "mxfp6/e3m2", "h100") == "EmulationMxfp6LinearKernel"


def test_030_common_picks() -> None:
    """H100: CUTLASS FP8, DeepGEMM block FP8, Machete int4; B200 NVFP4 weight-only on
    CuTe-DSL with FlashInfer (__init__.py:1122-1125); MI300X int4 on Triton W4A16."""
    assert kernel("0.30.0", "fp8_tensor/dynamic_act", "h100") == "CutlassFP8ScaledMMLinearKernel"
    assert kernel("0.30.0", "fp8_block/128x128", "h100") == "DeepGemmFp8BlockScaledMMKernel"
    assert kernel("0.30.0", "int4_w4a16/gptq_sym", "h100") == "MacheteLinearKernel"
    assert (
        kernel("0.30.0", "nvfp4/w4a16", "b200", "image")
        == "FlashInferCuteDslNvFp4W4A16LinearKernel"
    )
    assert kernel("0.30.0", "int4_w4a16/gptq_sym", "mi300x", "image") == "TritonW4A16LinearKernel"


def test_030_differs_from_031() -> None:
    a100 = {
        ("a100", layer): ("CutlassFP8ScaledMMLinearKernel", "MarlinFP8ScaledMMLinearKernel")
        for layer in (
            "fp8_tensor/static_act",
            "fp8_tensor/dynamic_act",
            "fp8_channel/dynamic_token",
        )
    }
    cpu = {
        ("cpu", layer): (
            "PerTensorTorchFP8ScaledMMLinearKernel",
            "CPUFp8PerTensorScaledMMLinearKernel",
        )
        for layer in ("fp8_tensor/static_act", "fp8_tensor/dynamic_act")
    }
    humming: dict[tuple[str, str], Change] = {}
    for device in ("h100", "b200", "a100", "rtx-pro-6000"):
        humming[(device, "mxfp4/w4a8_mxfp8")] = (None, "HummingMxFp4LinearKernel")
        humming[(device, "mxfp6/e3m2")] = ("EmulationMxfp6LinearKernel", "HummingMxFp6LinearKernel")
        humming[(device, "mxfp6/e2m3")] = ("EmulationMxfp6LinearKernel", "HummingMxFp6LinearKernel")
    assert changed("0.30.0", "0.31.0", "pip") == {**a100, **cpu, **humming}
    assert changed("0.30.0", "0.31.0", "minimal") == a100


# --------------------------------------------------------------------------- 0.29.0


def test_029_nvfp4_weight_only_is_always_marlin() -> None:
    """__init__.py:1053-1055: weight-only under auto forces MarlinNvFp4LinearKernel on
    every device (the CuTe-DSL W4A16 kernel is 0.30.0's)."""
    got = pick("0.29.0", "nvfp4/w4a16", "b200", "image")
    assert (got.kernel, got.candidates) == ("MarlinNvFp4LinearKernel", ("MarlinNvFp4LinearKernel",))
    assert kernel("0.29.0", "nvfp4/w4a16", "h100") == "MarlinNvFp4LinearKernel"


def test_029_forced_marlin_off_cuda_is_vllms_error() -> None:
    """__init__.py:1057-1064: the forced kernel's is_supported fails on ROCm
    (marlin_utils_fp4.is_fp4_marlin_supported): ValueError."""
    got = pick("0.29.0", "nvfp4/w4a16", "mi300x", "image")
    assert got.status == "error"
    assert got.message == (
        "ValueError: Forced NVFP4 kernel MarlinNvFp4LinearKernel is not supported: "
        "Marlin FP4 not available"
    )


def test_029_nvfp4_list_has_neither_torch_nor_w4a16_cutedsl() -> None:
    """__init__.py:531-545 _POSSIBLE_NVFP4_KERNELS[CUDA]: no TorchNvFp4LinearKernel, no
    FlashInferCuteDslNvFp4W4A16LinearKernel; :1017 a16_kernels = (Marlin, Humming)."""
    data = release("0.29.0").data
    listed = data["candidate_lists"]["nvfp4"]["cuda"]
    assert "TorchNvFp4LinearKernel" not in listed
    assert "FlashInferCuteDslNvFp4W4A16LinearKernel" not in listed
    assert data["nvfp4_w4a16_rule"]["a16_kernels"] == [
        "MarlinNvFp4LinearKernel",
        "HummingNvFp4LinearKernel",
    ]
    assert kernel("0.29.0", "nvfp4/w4a4", "b200", "image") == "FlashInferCuteDslNvFp4LinearKernel"


def test_029_rocm_block_fp8_is_aiter_then_triton() -> None:
    """__init__.py:448-451 _POSSIBLE_FP8_BLOCK_KERNELS[ROCM] = [Aiter, Triton] (no
    preshuffled kernel)."""
    got = pick("0.29.0", "fp8_block/128x128", "mi300x", "image", AITER)
    assert (got.kernel, got.candidates) == (
        "AiterFp8BlockScaledMMKernel",
        ("AiterFp8BlockScaledMMKernel", "TritonFp8BlockScaledMMKernel"),
    )
    assert (
        kernel("0.29.0", "fp8_block/128x128", "mi300x", "image") == "TritonFp8BlockScaledMMKernel"
    )


def test_029_act_order_refusals_exist_but_no_layer_kind_has_act_order() -> None:
    """mixed_precision/humming.py:24-25 (0.29.0): `if c.has_g_idx: return False, "Humming does
    not support act-order (g_idx)"`; a layer with has_g_idx would be refused."""
    found = release("0.29.0")
    layer = {**found.data["layers"]["int4_w4a16/gptq_sym"], "has_g_idx": True}
    where = found.where("cuda", "9.0", None, "pip", {})
    ok, stage, why = found._check("HummingLinearKernel", where, layer, "mp", ("can_implement",))
    assert (ok, stage, why) == (
        False,
        "can_implement",
        "Humming does not support act-order (g_idx)",
    )
    ok, _, _ = found._check(
        "HummingLinearKernel",
        where,
        found.data["layers"]["int4_w4a16/gptq_sym"],
        "mp",
        ("can_implement",),
    )
    assert ok


def test_029_common_picks() -> None:
    """Shared with 0.30.0: CUTLASS FP8 on A100 and H100, DeepGEMM block FP8 on H100,
    Machete int4 on H100, Triton W4A16 on MI300X, Torch per-tensor FP8 on CPU."""
    assert kernel("0.29.0", "fp8_tensor/dynamic_act", "a100") == "CutlassFP8ScaledMMLinearKernel"
    assert kernel("0.29.0", "fp8_tensor/dynamic_act", "h100") == "CutlassFP8ScaledMMLinearKernel"
    assert kernel("0.29.0", "fp8_block/128x128", "h100") == "DeepGemmFp8BlockScaledMMKernel"
    assert kernel("0.29.0", "int4_w4a16/gptq_sym", "h100") == "MacheteLinearKernel"
    assert kernel("0.29.0", "int4_w4a16/gptq_sym", "mi300x", "image") == "TritonW4A16LinearKernel"
    assert (
        kernel("0.29.0", "fp8_tensor/dynamic_act", "cpu") == "PerTensorTorchFP8ScaledMMLinearKernel"
    )


def test_029_differs_from_030() -> None:
    assert changed("0.29.0", "0.30.0", "pip") == {}
    assert changed("0.29.0", "0.30.0", "image") == {
        ("b200", "nvfp4/w4a16"): (
            "MarlinNvFp4LinearKernel",
            "FlashInferCuteDslNvFp4W4A16LinearKernel",
        )
    }
