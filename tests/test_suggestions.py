"""What kernelcfg says is true and usable: every preset with every model example and
every field on ``auto`` resolves without a crash, and every flag value it suggests
(``selection.*.value``, ``why``'s "To ask for it by name") is one the parser accepts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.commands import pipeline
from kernelcfg.engine.resolution import Resolution
from kernelcfg.output import render
from kernelcfg.targets.presets import PRESETS

from .cli_helpers import run
from .test_moe_selection import CONFIGS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p for p in (ROOT / "docs" / "examples").iterdir() if p.is_dir())
RELEASES = ("0.33.0", "0.34.0")
ARCHITECTURES = ("LlamaForCausalLM", "MixtralForCausalLM", "DeepseekV3ForCausalLM")
FLAGS = {
    "moe_backend": "--moe-backend",
    "linear_backend": "--linear-backend",
    "sparse_indexer_topk_backend": "--sparse-indexer-topk-backend",
    "attention": "--attention-backend",
}


def _dense() -> dict[str, Any]:
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16"}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> list[list[str]]:
    """The model part of each line: the shipped examples, the MoE fixtures, a dense
    unquantised model, and a few architectures without a config.json."""
    out = [["--hf-config-path", str(p)] for p in EXAMPLES]
    configs = [*CONFIGS.values(), _dense()]
    for number, config in enumerate(configs):
        folder = tmp_path_factory.mktemp(f"model{number}")
        (folder / "config.json").write_text(json.dumps(config))
        out.append(["--hf-config-path", str(folder)])
    return out + [["--architecture", arch] for arch in ARCHITECTURES]


def _resolve(argv: list[str]) -> tuple[Resolution | pipeline.Failure, int]:
    """One resolve through the pipeline and the JSON writer, as ``resolve`` does."""
    result = pipeline.resolve_args(argv)
    render.json_body(result)
    return result, render.exit_code_of(result)


@pytest.mark.slow
def test_no_preset_crashes_on_any_model(models: list[list[str]]) -> None:
    """Every preset x model example x release, every field on ``auto``: never exit 70
    (``--device tpu-v6e`` with an unquantised model raised ``KeyError: 'tpu'``)."""
    crashed = []
    for version in RELEASES:
        for device in PRESETS:
            for model in models:
                argv = ["--vllm-version", version, "--device", device, *model]
                result, code = _resolve(argv)
                if code == 70:
                    problem = result.problem.message if isinstance(result, pipeline.Failure) else ""
                    crashed.append((version, device, model[-1], problem))
    assert crashed == []


@pytest.mark.slow
def test_every_suggested_value_is_accepted(models: list[list[str]]) -> None:
    """Each ``value`` a selection names goes back through ``resolve`` as its flag and the
    parser takes it (``why moe --device cpu`` suggested ``--moe-backend cpu``, exit 2)."""
    refused = []
    tried = set()
    for version in RELEASES:
        for device in PRESETS:
            for model in models:
                base = ["--vllm-version", version, "--device", device, *model]
                result, _ = _resolve(base)
                if isinstance(result, pipeline.Failure):
                    continue
                for key, picked in result.selection.items():
                    if not picked.get("value") or key not in FLAGS:
                        continue
                    words = (version, FLAGS[key], picked["value"])
                    if words in tried:
                        continue
                    tried.add(words)
                    again, code = _resolve([*base, FLAGS[key], picked["value"]])
                    if isinstance(again, pipeline.Failure) and code == 2:
                        refused.append((*words, device, again.problem.message))
    assert tried, "no suggestion was made"
    assert refused == []


def test_why_on_cpu_suggests_no_refused_value() -> None:
    gpt_oss = str(ROOT / "docs" / "examples" / "gpt-oss-20b")
    flags = ["--vllm-version", "0.33.0", "--device", "cpu", "--hf-config-path", gpt_oss]
    out = run("why", "moe", *flags)
    assert out.exit_code == 0, out.stderr
    assert "CPU" in out.stdout.splitlines()[0]
    assert "--moe-backend cpu" not in out.stdout
    assert "No --moe-backend value forces it: vLLM takes it only on auto" in out.stdout
    for line in out.stdout.splitlines():
        if line.startswith("To ask for it by name: "):
            flag, value = line.removeprefix("To ask for it by name: ").split()
            back = run("resolve", *flags, flag, value)
            assert back.exit_code != 2, back.stderr


def _why(*flags: str) -> str:
    out = run("why", *flags)
    return out.stdout


def test_deep_gemm_on_hopper_says_what_is_missing() -> None:
    """vLLM says "only Hopper and Blackwell GPUs are supported" whatever stops DeepGEMM."""
    r1 = str(ROOT / "docs" / "examples" / "deepseek-r1")
    said = _why("linear", "--vllm-version", "0.34.0", "--device", "h100", "--hf-config-path", r1)
    line = next(x for x in said.splitlines() if "DeepGemmFp8BlockScaledMMKernel —" in x)
    assert ": DeepGEMM: nvcc 12.9 or newer is not installed (CUDA_HOME) (vLLM: " in line
    off = _why(
        *("linear", "--vllm-version", "0.33.0", "--device", "h100", "--hf-config-path", r1),
        *("--linear-backend", "auto", "--env", "VLLM_USE_DEEP_GEMM=0"),
    )
    assert "DeepGEMM: VLLM_USE_DEEP_GEMM is off (vLLM: " in off


def test_aiter_hint_on_nvidia_is_preceded_and_said_once() -> None:
    r1 = str(ROOT / "docs" / "examples" / "deepseek-r1")
    flags = ["--device", "b200", "--hf-config-path", r1, "--env", "VLLM_ROCM_USE_AITER=1"]
    said = _why("moe", *flags)
    hinted = [x for x in said.splitlines() if "set VLLM_ROCM_USE_AITER=1" in x]
    assert len(hinted) == 2, said  # the one trial line, and vLLM's error
    assert all("AITER runs only on AMD ROCm GPUs (vLLM: " in x for x in hinted)
    assert "AiterFp8BlockExperts/AiterFp8TensorExperts/AiterFp8ChannelExperts" in said
    assert sum("before trying: forced AITER" in x for x in said.splitlines()) == 1
    resolved = run("resolve", *flags, "--format", "json").json()
    assert "AITER runs only on AMD ROCm GPUs" in resolved["problems"][0]["message"]


def test_flashinfer_on_rocm_says_more_than_import_error() -> None:
    out = run("resolve", "--device", "mi300x", "--attention-backend", "FLASHINFER")
    assert out.exit_code == 1
    assert "FLASHINFER imports flashinfer_python, which no ROCm install of vLLM has" in out.stderr


def test_a_value_typed_as_the_start_of_allowed_ones_is_offered_one_of_them() -> None:
    """``--quant-scheme fp8`` is the start of fp8_tensor, fp8_channel and fp8_block: the
    suggestion is one of them, not mxfp8, a near spelling of another scheme."""
    from kernelcfg.vllm.kernels.quantization import SCHEMES

    done = run("resolve", "--device", "h100", "--quant-scheme", "fp8")
    assert done.exit_code == 2
    (line,) = done.stderr.splitlines()
    suggested = line.rsplit("did you mean '", 1)[1].split("'")[0]
    assert suggested in SCHEMES
    assert suggested.startswith("fp8")
