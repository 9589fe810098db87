"""One verdict rule for installs: with ``--install`` (or ``KERNELCFG_INSTALL``) the verdict
is certain for that install, an error naming the installs under which it would run;
without it, an error only when every install refuses, else a warning naming those that
refuse. The JSON says which (``install``, ``install_given``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelcfg.commands import pipeline
from kernelcfg.engine.resolution import Resolution
from kernelcfg.vllm.inputs import Inputs

from .cli_helpers import run

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parent.parent
GPT_OSS = str(ROOT / "docs" / "examples" / "gpt-oss-20b")
V100_GPT_OSS = ["--vllm-version", "0.34.0", "--device", "v100", "--hf-config-path", GPT_OSS]
QWEN3_MOE = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "num_hidden_layers": 48,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "norm_topk_prob": True,
    "max_position_embeddings": 40960,
    "vocab_size": 151936,
    "torch_dtype": "bfloat16",
}
"""Qwen3-30B-A3B's shape (its config.json, trimmed)."""


@pytest.fixture
def mi300x_online_mxfp4(tmp_path: Path) -> list[str]:
    """Qwen3-MoE quantised online to MXFP4 on an MI300X: only ``--install all`` has an MoE
    kernel. (gpt-oss on a V100, the first such case, vLLM now refuses before any kernel:
    no BF16 there, and its MXFP4 method takes BF16 only.)"""
    (tmp_path / "config.json").write_text(json.dumps(QWEN3_MOE), encoding="utf-8")
    return [
        "--vllm-version", "0.34.0", "--device", "mi300x", "--hf-config-path", str(tmp_path),
        "--quantization", "mxfp4",
    ]  # fmt: skip


B200_TRTLLM = ["--vllm-version", "0.34.0", "--device", "b200", "--moe-backend", "flashinfer_trtllm"]


def _problems(result: Resolution | pipeline.Failure, code: str) -> list[tuple[str, str]]:
    assert not isinstance(result, pipeline.Failure)
    return [(p.severity, p.message) for p in result.problems if p.code == code]


def test_a_layer_no_kernel_serves_under_the_install_named_is_an_error() -> None:
    """gpt-oss on a V100: only ``--install all`` has an MoE kernel (emulation)."""
    out = run("resolve", *V100_GPT_OSS, "--install", "image")
    assert out.exit_code == 1
    assert "error: MoE layers on Tesla V100-SXM2-32GB: with --install image" in out.stderr
    (found,) = _problems(
        pipeline.resolve_args([*V100_GPT_OSS, "--install", "image"]), "moe-no-kernel"
    )
    assert found[0] == "error"
    assert "vLLM raises while loading the model (with --install all it picks a kernel)" in found[1]
    assert run("why", "moe", *V100_GPT_OSS, "--install", "image").exit_code == 1
    data = run("resolve", *V100_GPT_OSS, "--install", "image", "--format", "json").json()
    selection = data["selection"]["moe_backend"]
    assert (selection["install"], selection["install_given"]) == ("image", True)


def test_the_environment_variable_names_the_install(mi300x_online_mxfp4: list[str]) -> None:
    flags = mi300x_online_mxfp4
    out = run("resolve", *flags, "--format", "json", env={"KERNELCFG_INSTALL": "image"})
    assert out.exit_code == 1
    selection = out.json()["selection"]["moe_backend"]
    assert (selection["install"], selection["install_given"]) == ("image", True)
    flag_wins = run("resolve", *flags, "--install", "all", env={"KERNELCFG_INSTALL": "image"})
    assert flag_wins.exit_code == 0


def test_a_bad_environment_install_is_refused_as_the_flag_is() -> None:
    out = run("resolve", "--device", "h100", env={"KERNELCFG_INSTALL": "imag"})
    assert out.exit_code == 2
    assert "KERNELCFG_INSTALL: unknown install 'imag'" in out.stderr
    assert "(did you mean 'image'?)" in out.stderr


def test_without_an_install_the_platforms_default_is_judged(
    mi300x_online_mxfp4: list[str],
) -> None:
    """Issue 34: a default is judged as that install (ROCm: the image), not hedged."""
    result = pipeline.resolve_args(mi300x_online_mxfp4)
    (found,) = _problems(result, "moe-no-kernel")
    assert found[0] == "error"
    assert "with --install image (the default) vLLM raises" in found[1]
    assert not isinstance(result, pipeline.Failure)
    assert result.selection["moe_backend"]["install_given"] is False
    assert result.selection["moe_backend"]["install_source"] == "default"
    assert run("resolve", *mi300x_online_mxfp4).exit_code == 1
    assert run("resolve", *mi300x_online_mxfp4, "--install", "all").exit_code == 0


def test_gpt_oss_on_a_v100_is_refused_before_any_kernel() -> None:
    out = run("resolve", *V100_GPT_OSS, "--install", "all")
    assert out.exit_code == 1
    assert (
        "error: vLLM refuses this launch while building its config: ValidationError: "
        "1 validation error for VllmConfig"
    ) in out.stderr
    assert "torch.float16 is not supported for quantization method gpt_oss_mxfp4" in out.stderr


def test_refused_under_every_install_is_an_error_named_or_not() -> None:
    named = Inputs(install="image", sources={"install": "environment"})
    assert named.refused_under(["all"]) == ("error", "with --install image")
    assert Inputs().refused_under([]) == ("error", "under every install")
    assert named.refused_under([]) == ("error", "under every install")
    default = Inputs().refused_under(["image", "all"])
    assert default == ("error", "with --install pip (the default)")


def test_a_named_moe_backend_the_install_cannot_run_is_an_error() -> None:
    out = run("resolve", *B200_TRTLLM, "--install", "minimal")
    assert out.exit_code == 1
    assert (
        "error: --moe-backend flashinfer_trtllm on NVIDIA B200: none of its kernels runs with "
        "--install minimal" in out.stderr
    )
    assert "with --install image or all it may run" in out.stderr
    assert run("resolve", *B200_TRTLLM, "--install", "image").exit_code == 0


def test_without_an_install_a_named_moe_backend_is_judged_under_the_default() -> None:
    (found,) = _problems(pipeline.resolve_args(B200_TRTLLM), "moe-backend-needs-install")
    assert found[0] == "error"
    assert "--install pip (the default)" in found[1]
    assert run("resolve", *B200_TRTLLM).exit_code == 1


def test_a_backend_every_install_has_makes_no_install_problem() -> None:
    flags = [*B200_TRTLLM[:-1], "triton", "--install", "minimal"]
    assert _problems(pipeline.resolve_args(flags), "moe-backend-needs-install") == []


def test_an_attention_backend_the_install_named_refuses_is_an_error() -> None:
    """FlashInfer serves gpt-oss's sinks on an RTX PRO 6000 only through TensorRT-LLM
    kernels, which ``pip install vllm`` cannot use (README)."""
    flags = [
        "--device",
        "rtx-pro-6000",
        "--hf-config-path",
        GPT_OSS,
        "--attention-backend",
        "FLASHINFER",
    ]
    (unnamed,) = _problems(pipeline.resolve_args(flags), "attention-needs-install")
    assert unnamed[0] == "error"  # the default (pip) judged as if named
    (named,) = _problems(
        pipeline.resolve_args([*flags, "--install", "pip"]), "attention-needs-install"
    )
    assert named[0] == "error"
    assert "with --install image or all it may run" in named[1]


B200_CUTLASS = [
    "--vllm-version",
    "0.34.0",
    "--device",
    "b200",
    "--linear-backend",
    "flashinfer_cutlass",
]


def test_a_named_linear_backend_the_install_cannot_run_is_an_error() -> None:
    """FlashInfer is in the official image, not in ``pip install vllm`` (linear-0.34.0.json)."""
    out = run("resolve", *B200_CUTLASS, "--install", "minimal")
    assert out.exit_code == 1
    assert (
        "error: --linear-backend flashinfer_cutlass on NVIDIA B200: none of its kernels runs "
        "with --install minimal" in out.stderr
    )
    assert "with --install image or all it may run" in out.stderr
    assert run("resolve", *B200_CUTLASS, "--install", "image").exit_code == 0


def test_without_an_install_a_named_linear_backend_is_judged_under_the_default() -> None:
    (found,) = _problems(pipeline.resolve_args(B200_CUTLASS), "linear-backend-needs-install")
    assert found[0] == "error"
    assert "runs with --install pip (the default)" in found[1]
    assert run("resolve", *B200_CUTLASS).exit_code == 1


def test_a_named_linear_backend_is_judged_for_the_checkpoint_scheme() -> None:
    """DeepGEMM needs nvcc 12.9, which ``pip install vllm`` lacks; a scheme the value has
    no kernel for falls back to vLLM's own walk (it warns), so no install refuses it."""
    flags = ["--vllm-version", "0.34.0", "--device", "h100", "--linear-backend", "deep_gemm"]
    block = [*flags, "--quant-scheme", "fp8_block", "--install", "pip"]
    (found,) = _problems(pipeline.resolve_args(block), "linear-backend-needs-install")
    assert found[0] == "error"
    assert "with --install image or all it may run" in found[1]
    int8 = [*flags, "--quant-scheme", "int8_w8a8", "--install", "pip"]
    assert _problems(pipeline.resolve_args(int8), "linear-backend-needs-install") == []


def test_why_follows_the_rule_without_an_install() -> None:
    """Only ``--install all`` serves gpt-oss's MoE on a V100: without ``--install`` the
    default (pip) is judged, an error naming the installs that refuse and the one that
    runs."""
    out = run("why", "moe", *V100_GPT_OSS)
    assert out.exit_code == 1
    assert (
        "error: vLLM raises with --install pip or image or minimal; with --install all it runs"
        in out.stdout
    )
    named = run("why", "moe", *V100_GPT_OSS, "--install", "image")
    assert named.exit_code == 1
    assert "error: vLLM raises with --install pip or image or minimal" in named.stdout


def test_nothing_works_without_an_install_says_every_install() -> None:
    """No linear kernel takes w4a8_fp8 on a V100 under any install."""
    flags = ["--vllm-version", "0.34.0", "--device", "v100", "--quant-scheme", "w4a8_fp8"]
    out = run("resolve", *flags)
    assert out.exit_code == 1
    assert "vLLM finds no kernel under every install" in out.stderr
    assert "--install pip" not in out.stderr
    why = run("why", "linear", *flags)
    assert why.exit_code == 1
    assert "error: vLLM raises under every install" in why.stdout
