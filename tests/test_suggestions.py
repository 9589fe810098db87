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
