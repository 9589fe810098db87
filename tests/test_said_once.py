"""Issue 34: outside CI, with no target named and none found, kernelcfg judges for the
CPU and says so once: one note on stderr, whatever the number of refusals, batch lines
or table rows; no problem or reason repeats the fallback's clause."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelcfg.targets import detection, presets

from .cli_helpers import Run, run

ROOT = Path(__file__).resolve().parent.parent
R1 = str(ROOT / "docs" / "examples" / "deepseek-r1")
REFUSED = [  # several explicit backends refused on the CPU: each problem names the target
    "--moe-backend",
    "flashinfer_trtllm",
    "--linear-backend",
    "flashinfer_cutlass",
    "--sparse-indexer-topk-backend",
    "aiter",
    "--kernel-config",
    '{"linear_backend_per_quant": {"fp8": "cutlass", "nvfp4": "flashinfer_cutlass"}}',
]
NOTE = "note: no --device given"


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Outside CI (conftest drops CI), no target in the environment, none detected."""
    for name in ("KERNELCFG_DEVICE", "KERNELCFG_PLATFORM", "CI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(detection, "find", lambda: "NVML sees no NVIDIA GPU")
    presets.detect.cache_clear()
    yield
    presets.detect.cache_clear()


def _clauses(text: str) -> list[str]:
    """The clauses of every line: split at "; ", ": " and parentheses."""
    return [c.strip() for line in text.splitlines() for c in re.split(r"; |: |\(|\)", line)]


def _said_once(done: Run) -> None:
    both = done.stdout + done.stderr
    assert done.stderr.count(NOTE) == 1, done.stderr
    for clause in ("no GPU detected", "no --device given"):
        assert both.count(clause) == 1, (clause, both)


def test_a_resolve_with_several_refusals_says_the_fallback_once() -> None:
    done = run("resolve", *REFUSED, "--hf-config-path", R1)
    assert done.exit_code == 1
    problems = [line for line in done.stderr.splitlines() if "the target is" in line]
    assert len(problems) >= 2
    _said_once(done)
    targets = [c for c in _clauses(done.stderr) if c.startswith("the target is")]
    assert set(targets) == {"the target is cpu"}


def test_json_problems_do_not_repeat_the_fallback() -> None:
    done = run("resolve", *REFUSED, "--format", "json")
    data = done.json()
    assert data["platform"]["source"] == "fallback"  # the JSON says it once, here
    assert not [p for p in data["problems"] if "no GPU detected" in p["message"]]
    _said_once(done)


def test_a_batch_says_the_fallback_once() -> None:
    lines = "\n".join(json.dumps(REFUSED[: 2 * (i % 3 + 1)]) for i in range(8)) + "\n"
    done = run("resolve", "--batch", "-", stdin=lines)
    assert len(done.stdout.splitlines()) == 8
    _said_once(done)


@pytest.mark.parametrize(
    "command",
    [
        ["backends"],
        ["why", "moe", "--hf-config-path", R1],
        ["upgrade", "0.33", "0.34", "--moe-backend", "flashinfer_trtllm"],
    ],
    ids=["backends", "why", "upgrade"],
)
def test_other_commands_say_the_fallback_once(command: list[str]) -> None:
    """Each says it (a fallback is never silent), once, however many rows name cpu."""
    _said_once(run(*command))
