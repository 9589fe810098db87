"""The memos a batch leans on (``kernelcfg.base.answers``) never change an answer: each
launch below, resolved in one warm process after the others (in two orders), prints
what it prints in a fresh process. A memo whose key misses an input the walk reads (the
checkpoint's scheme, the install's source, how a format was read) fails here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.base.answers import forget_all

from .cli_helpers import run
from .test_attention_old import GPT_OSS, LLAMA, R1
from .test_moe_checkpoint import CT_FP8_STATIC, CT_W4A8_FP8, LLAMA3_DENSE, QWEN3_30B

pytestmark = pytest.mark.cli

MODELS: dict[str, dict[str, Any]] = {
    "llama": LLAMA,
    "gpt-oss": GPT_OSS,
    "r1": R1,
    "qwen3-moe": QWEN3_30B,
    "llama-fp8": {**LLAMA3_DENSE, "quantization_config": CT_FP8_STATIC},
    "llama-w4a8": {**LLAMA3_DENSE, "quantization_config": CT_W4A8_FP8},
}
"""Checkpoints whose layer kinds overlap (every one has BF16 or FP8 layers somewhere)."""

LAUNCHES: list[tuple[str, ...]] = [
    ("--device", "h100", "--vllm-version", "0.30.0", "@llama"),
    ("--device", "h100", "--vllm-version", "0.30.0", "@gpt-oss"),
    ("--device", "h100", "--vllm-version", "0.34.0", "@gpt-oss"),
    ("--device", "h100", "--vllm-version", "0.34.0", "@llama"),
    ("--device", "h100", "--vllm-version", "0.34.0", "@llama-fp8"),
    ("--device", "h100", "--vllm-version", "0.34.0", "@llama-w4a8"),
    ("--device", "h100", "--install", "pip", "@llama-fp8"),
    ("--device", "h100", "--install", "image", "@r1", "-tp", "8"),
    ("--device", "h100", "@r1", "-tp", "8"),
    ("--device", "b200", "--quant-scheme", "fp8", "--moe-backend", "auto"),
    ("--device", "b200", "@qwen3-moe"),
    ("--device", "b200", "@qwen3-moe", "--moe-backend", "triton"),
    ("--device", "mi300x", "@llama-fp8"),
    ("--device", "mi300x", "--install", "pip", "@llama-fp8"),
    ("--device", "mi300x", "@qwen3-moe", "--linear-backend", "aiter"),
    ("--device", "cpu", "@qwen3-moe"),
    ("--device", "epyc-genoa", "@qwen3-moe"),
    ("--device", "xeon-spr", "@r1"),
    ("--device", "epyc-genoa", "@r1"),
]
"""Launches that share targets, releases, installs or layer kinds with another."""


def _argv(folders: dict[str, str], launch: tuple[str, ...]) -> list[str]:
    """kernelcfg's options, then the ``vllm serve`` line (``@NAME`` is the model)."""
    own = [w for w in launch if not w.startswith("@")]
    model = [folders[w[1:]] for w in launch if w.startswith("@")]
    if not model:
        return ["resolve", "--format", "json", *own]
    split = own.index("-tp") if "-tp" in own else len(own)
    serve = own[split:]
    return ["resolve", "--format", "json", *own[:split], "--", "vllm", "serve", *model, *serve]


def _answer(argv: list[str]) -> tuple[int, Any, str]:
    done = run(*argv)
    return done.exit_code, json.loads(done.stdout), done.stderr


def test_a_warm_process_answers_as_a_fresh_one(tmp_path: Path) -> None:
    folders = {}
    for name, config in MODELS.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config), encoding="utf-8")
        folders[name] = str(tmp_path / name)
    argvs = [_argv(folders, launch) for launch in LAUNCHES]
    fresh = []
    for argv in argvs:
        forget_all()
        fresh.append(_answer(argv))
    for order in (argvs, argvs[::-1]):
        forget_all()
        warm = {tuple(argv): _answer(argv) for argv in order}
        for argv, expected in zip(argvs, fresh, strict=True):
            assert warm[tuple(argv)] == expected, " ".join(argv)
    assert len({json.dumps(f[1], sort_keys=True) for f in fresh}) == len(fresh)
