"""Issue 34: a verdict a user can act on. One install story (a default judged as that
install, per platform), backends honouring --install, CI refusing without a target,
refusals naming what runs instead, a --moe-backend on a dense model a note, and
transformers 5.x config keys read through their attribute maps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernelcfg.commands import pipeline
from kernelcfg.commands.pipeline import Request, resolve_args
from kernelcfg.engine.resolution import Resolution
from kernelcfg.output import render
from kernelcfg.vllm.inputs import DEFAULT_INSTALLS

from .cli_helpers import run
from .test_attention_old import LLAMA

QWEN3_MOE_T5 = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_local_experts": 128,
    "num_experts_per_tok": 8,
    "norm_topk_prob": True,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "num_hidden_layers": 48,
    "vocab_size": 151936,
    "dtype": "bfloat16",
    "max_position_embeddings": 40960,
}
DENSE = {**LLAMA, "max_position_embeddings": 8192}


def _folder(tmp_path: Path, name: str, config: dict[str, Any]) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder)


def _resolve(*args: str, environ: dict[str, str] | None = None) -> Resolution:
    result = resolve_args(list(args), Request(environ=environ or {}))
    assert isinstance(result, Resolution)
    return result


def _errors(result: Resolution) -> list[str]:
    return [p.message for p in result.problems if p.severity == "error"]


# 1. One install story


def test_default_install_is_judged_as_named() -> None:
    value = ["--device", "h100", "--moe-backend", "flashinfer_cutlass", "--quant-scheme", "nvfp4"]
    default = _resolve(*value)
    named = _resolve(*value, "--install", DEFAULT_INSTALLS["cuda"])
    assert render.exit_code_of(default) == render.exit_code_of(named) == 1
    assert any("(the default)" in m for m in _errors(default))


def test_default_install_per_platform() -> None:
    for device, kind in (("h100", "cuda"), ("mi300x", "rocm"), ("cpu", "cpu")):
        _, target, inputs = pipeline.prepare(["--device", device], Request(environ={}))
        assert target.kind == kind
        assert inputs.install == DEFAULT_INSTALLS[kind]
        assert inputs.install_source == "default"
    assert DEFAULT_INSTALLS["rocm"] == "image"  # the ROCm image ships AITER; no ROCm wheel
    _, _, named = pipeline.prepare(["--device", "mi300x", "--install", "pip"], Request(environ={}))
    assert named.install == "pip"
    assert named.install_source == "flag"


def test_selection_says_where_the_install_came_from() -> None:
    data = render.as_data(_resolve("--device", "h100", "--architecture", "LlamaForCausalLM"))
    picked = data["selection"]["attention"]
    assert (picked["install"], picked["install_source"]) == ("pip", "default")


def test_backends_honours_install() -> None:
    def verdict(*extra: str) -> set[str]:
        done = run("backends", "--device", "h100", "--format", "json", *extra)
        data = json.loads(done.stdout)
        return {
            b["verdict"]
            for b in data["backends"]
            if (b["field"], b["value"]) == ("moe_backend", "flashinfer_cutlass")
        }

    assert verdict("--install", "pip") == {"cannot-run"}
    assert "cannot-run" not in verdict("--install", "image")


def test_ci_without_a_target_refuses_every_command() -> None:
    env = {"CI": "true", "KERNELCFG_DEVICE": "", "KERNELCFG_PLATFORM": ""}
    for command in ("resolve", "backends"):
        done = run(command, "--moe-backend", "triton", env=env)
        assert done.exit_code == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1
        assert "needs a target" in lines[0]
        assert "KERNELCFG_DEVICE" in lines[0]
    assert run("resolve", "--device", "h100", env=env).exit_code == 0


# 3. What runs instead


def test_refusal_names_values_that_run() -> None:
    result = _resolve("--device", "h100", "--moe-backend", "flashinfer_trtllm", "--install", "pip")
    (message,) = _errors(result)
    offered = message.split("runs here instead: ")[1].split(";")[0].split(", ")
    assert offered
    assert "flashinfer_trtllm" not in offered
    for value in offered:  # none of them is itself refused
        again = _resolve("--device", "h100", "--moe-backend", value, "--install", "pip")
        assert render.exit_code_of(again) == 0, value


# 4. A field no layer reads


def test_moe_backend_on_dense_model_is_a_note(tmp_path: Path) -> None:
    dense = _folder(tmp_path, "dense", DENSE)
    for flags in (
        ["--moe-backend", "flashinfer_trtllm"],
        ["--kernel-config", '{"moe_backend":"triton"}'],
    ):
        result = _resolve(
            "--device", "h100", *flags, "--", "vllm", "serve", dense, "--device", "cpu"
        )
        assert render.exit_code_of(result) == 0
        assert any(p.code == "backend-no-effect" for p in result.problems)
    unknown = _resolve("--device", "h100", "--moe-backend", "flashinfer_trtllm")
    assert render.exit_code_of(unknown) == 1  # no model: judged as before


def test_mega_moe_without_model_on_033_is_judged_as_its_source_says() -> None:
    """vLLM 0.33.0 warns nowhere for deep_gemm_mega_moe: with no model known, the models
    that implement it decide (Muse-Spark's path checks neither GPU nor expert parallelism:
    no certain refusal); kernelcfg states no warning vLLM does not print."""
    for device in ("h100", "b200", "rtx-pro-6000"):
        result = _resolve(
            "--device", device, "--vllm-version", "0.33.0", "--moe-backend", "deep_gemm_mega_moe"
        )
        assert render.exit_code_of(result) == 0
        said = [p for p in result.problems if p.field == "moe_backend"]
        assert said
        assert all("only warns" not in p.message for p in said)


# 5. transformers 5.x config keys


def test_qwen3_moe_saved_by_transformers5_has_moe_layers(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "qwen3", QWEN3_MOE_T5)
    result = _resolve("--device", "h100", "--", "vllm", "serve", folder)
    picked = render.as_data(result)["selection"]["moe_backend"]
    assert picked["status"] == "selected"


def test_a_flashinfer_pick_under_pip_says_what_it_needs_at_run_time() -> None:
    """vLLM's selector picks FLASHINFER_MLA on B200 under a pip install (its kernels are
    not checked there): the pick stands, and its note says what the install must add,
    so it does not read as a contradiction of the FlashInfer MoE refusal."""
    serve = ["--", "vllm", "serve", "docs/examples/deepseek-r1"]
    pip = run("resolve", "--device", "b200", "--format", "json", *serve).json()
    attention = pip["selection"]["attention"]
    assert attention["backend"] == "FLASHINFER_MLA"
    assert "flashinfer-cubin" in attention["run_time"]
    image = run("resolve", "--device", "b200", "--install", "image", "--format", "json", *serve)
    assert "run_time" not in image.json()["selection"]["attention"]
    table = run("resolve", "--device", "b200", *serve)
    assert "at run time: FlashInfer's kernels need" in table.stdout
