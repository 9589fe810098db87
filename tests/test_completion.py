"""Shell completion of kernelcfg's own target options and vLLM's backend options."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelcfg.cli.common import complete_flags
from kernelcfg.targets.presets import PRESETS

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("previous", "incomplete", "expected", "absent"),
    [
        ("--device", "h1", {"h100"}, {"b200"}),
        ("--platform", "", {"cuda", "rocm", "cpu", "xpu", "tpu"}, set()),
        ("--install", "", {"pip", "image", "minimal", "all"}, set()),
        ("--vllm-version", "0.", {"0.34.0", "0.29.0"}, set()),
        ("--moe-backend", "flashinfer_t", {"flashinfer_trtllm"}, {"triton"}),
        ("--attention-backend", "FLASH", {"FLASH_ATTN"}, set()),
        ("--quant-scheme", "fp8", {"fp8_block"}, set()),
        ("--cpu-features", "", {"x86_64", "amx", "avx512"}, {"--device"}),
        ("--cpu-features", "x86_64,av", {"x86_64,avx512", "x86_64,avx512_bf16"}, {"x86_64"}),
    ],
)
def test_values_complete_after_their_option(
    previous: str, incomplete: str, expected: set[str], absent: set[str]
) -> None:
    found = set(complete_flags(None, ["resolve", previous], incomplete))  # type: ignore[arg-type]
    assert expected <= found, found
    assert not absent & found
    assert all(v.startswith(incomplete) for v in found)


def test_option_names_complete_kernelcfgs_own_too() -> None:
    found = complete_flags(None, ["resolve"], "--d")  # type: ignore[arg-type]
    assert {"--device", "--download", "--data-parallel-size"} <= set(found)


def test_the_shell_asks_and_gets_the_presets() -> None:
    """Through Typer's completion protocol, as its bash script asks."""
    env = {
        **os.environ,
        "_KERNELCFG_COMPLETE": "complete_bash",
        "COMP_WORDS": "kernelcfg resolve --device ",
        "COMP_CWORD": "3",
    }
    done = subprocess.run(
        [sys.executable, "-c", "from kernelcfg.cli import app; app(prog_name='kernelcfg')"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    said = set(done.stdout.split())
    assert set(PRESETS) <= said, done.stdout[:500]
