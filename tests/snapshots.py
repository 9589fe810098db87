"""A fixed list of 30 command lines across every command and format, and what they
print: kept so that a refactor can show its outputs stay byte-identical.

``python -m tests.snapshots`` (from the repository root) rewrites
``tests/data/snapshots.json``; ``tests/test_snapshots.py`` compares.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kernelcfg.cli import app

INPUTS = Path(__file__).parent / "data" / "snapshot-inputs"
STORE = Path(__file__).parent / "data" / "snapshots.json"
ENV = {"COLUMNS": "80", "HF_HUB_CACHE": "/nonexistent", "KERNELCFG_DETECT_TORCH": "0"}

COMMANDS: list[list[str]] = [
    ["resolve", "--device", "h100", "--format", "json"],
    ["resolve", "--device", "b200", "--moe-backend", "FlashInfer-TRTLLM", "-O3"],
    ["resolve", "--device", "b200", "--moe-backend", "flashinfer_trtllm", "--format", "env"],
    [
        "resolve",
        "--device",
        "b200",
        "--moe-backend",
        "flashinfer_trtllm",
        "-O3",
        "--format",
        "args",
    ],
    ["resolve", "--device", "mi300x", "--env", "VLLM_ROCM_USE_AITER=1", "-O0", "--format", "yaml"],
    ["resolve", "--device", "h100", "--ir-op-priority.rms_norm=cuda,native", "--format", "github"],
    ["resolve", "--device", "h100", "--moe-backend", "aiter", "--format", "junit"],
    ["resolve", "--device", "h100", "--moe-backend", "aiter", "--format", "sarif"],
    [
        "resolve",
        "--device",
        "h100",
        "--vllm-version",
        "0.33",
        "--explain-sources",
        "--format",
        "json",
        "--",
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
        "--trust-remote-code",
        "-tp",
        "2",
    ],
    ["resolve", "--device", "h100", "--", "vllm", "serve", "m", "--no-such-flag"],
    ["resolve", "--device", "rtx-pro-6000", "--vllm-version", "0.29", "--linear-backend", "marlin"],
    ["resolve", "--device", "mi355x", "--all2all-backend", "mori", "--format", "json"],
    ["resolve", "--batch", "lines.jsonl", "--device", "h100"],
    ["resolve", "--batch", "lines.jsonl", "--device", "h100", "--format", "table"],
    ["resolve", "--batch", "lines.jsonl", "--matrix", "device=h100,mi300x", "--format", "github"],
    ["versions"],
    ["versions", "--format", "json"],
    ["versions", "0.33", "0.34"],
    ["schema", "--vllm-version", "0.34"],
    ["schema", "--of", "config-file", "--vllm-version", "0.32"],
    ["explain", "moe_backend"],
    ["explain", "linear_backend=machete", "--format", "json"],
    ["explain", "monokernel"],
    ["backends", "--device", "b200", "--quantization", "fp8"],
    ["backends", "--device", "mi300x", "--format", "json"],
    ["diff", "--a", "--moe-backend triton", "--b", "--moe-backend cutlass", "--device", "h100"],
    [
        "diff",
        "--a",
        "--vllm-version 0.33",
        "--b",
        "--vllm-version 0.34",
        "--device",
        "b200",
        "--format",
        "json",
    ],
    ["lint-env", "--env-file", "deploy.env"],
    ["lint-env", "--env-file", "deploy.env", "--format", "json", "--vllm-version", "0.33"],
    ["scan", "serve.sh", "--device", "h100", "--format", "json"],
]


def capture(command: list[str]) -> dict[str, Any]:
    """What one command prints (stdout, stderr) and its exit code, run in INPUTS."""
    here = Path.cwd()
    os.chdir(INPUTS)
    unset: dict[str, str | None] = {
        k: None for k in os.environ if k.startswith(("VLLM_", "KERNELCFG_", "HF_"))
    }
    try:
        result = CliRunner().invoke(app, command, env={**unset, **ENV}, terminal_width=80)
    finally:
        os.chdir(here)
    return {
        "command": command,
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
    }


if __name__ == "__main__":
    outputs = [capture(c) for c in COMMANDS]
    STORE.write_text(json.dumps(outputs, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(outputs)} outputs to {STORE}")
