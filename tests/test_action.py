"""The GitHub Action's step, run as the runner runs it: ``bash scripts/action.sh`` in the
workspace, with the environment action.yml sets. A stand-in ``KERNELCFG`` records the
argv the script passes, so each test checks exactly what kernelcfg would be given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "action.sh"

STAND_IN = """\
import json, os, sys
with open(os.environ["ARGV_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
sys.exit(int(os.environ.get("STAND_IN_EXIT", "0")))
"""


def _action(
    tmp_path: Path, inputs: dict[str, str], kernelcfg: str | None = None, code: int = 0
) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """Run action.sh in ``tmp_path / "ws"`` with ``inputs`` (the env names action.yml
    sets); the result and the argv of each kernelcfg call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    python = bin_dir / "python"  # the runner's setup-python puts `python` on PATH
    if not python.exists():
        python.symlink_to(sys.executable)
    stand_in = tmp_path / "stand_in.py"
    stand_in.write_text(STAND_IN, encoding="utf-8")
    log = tmp_path / "argv.jsonl"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("KERNELCFG")},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "ARGV_LOG": str(log),
        "STAND_IN_EXIT": str(code),
        "KERNELCFG": kernelcfg or f"{sys.executable} {stand_in}",
        **inputs,
    }
    done = subprocess.run(
        ["bash", str(SCRIPT)],
        cwd=tmp_path / "ws",
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done, calls


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A checkout with a few deployment files, one of them named ``--env``."""
    ws = tmp_path / "ws"
    for name in ("--env", "serve.sh", "k8s/a.yaml", "k8s/deep/b.yaml", "docs/my notes.md"):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("vllm serve m\n", encoding="utf-8")
    return ws


ARGS = "--device h100\n--vllm-version 0.34\n--fail-on warning\n"


def test_every_line_of_files_and_args_is_read(tmp_path: Path, workspace: Path) -> None:
    files = "serve.sh\nk8s/**/*.yaml 'docs/my notes.md'\n--env\n"
    done, calls = _action(tmp_path, {"KERNELCFG_FILES": files, "KERNELCFG_ARGS": ARGS})
    assert done.returncode == 0, done.stdout + done.stderr
    assert calls == [
        [
            *("scan", "--device", "h100", "--vllm-version", "0.34", "--fail-on", "warning"),
            *("--format", "github", "--"),
            *("serve.sh", "k8s/a.yaml", "k8s/deep/b.yaml", "docs/my notes.md", "--env"),
        ]
    ]


def test_a_pattern_that_matches_nothing_is_an_error(tmp_path: Path, workspace: Path) -> None:
    inputs = {"KERNELCFG_FILES": "serve.sh\nhelm/*.yaml\nnot-there.sh serve.sh"}
    done, calls = _action(tmp_path, inputs)
    assert done.returncode == 2
    assert done.stdout.splitlines()[:2] == [
        "::error title=kernelcfg::files: 'helm/*.yaml' matches no file",
        "::error title=kernelcfg::files: 'not-there.sh' matches no file",
    ]
    assert calls == [["scan", "--format", "github", "--", "serve.sh"]]  # the rest, once


def test_batch_and_files_exit_with_the_worst_code(tmp_path: Path, workspace: Path) -> None:
    inputs = {"KERNELCFG_BATCH": "lines.jsonl", "KERNELCFG_FILES": "--env", "KERNELCFG_ARGS": ARGS}
    done, calls = _action(tmp_path, inputs, code=1)
    assert done.returncode == 1
    extra = ["--device", "h100", "--vllm-version", "0.34", "--fail-on", "warning"]
    assert calls == [
        ["resolve", "--batch", "lines.jsonl", *extra, "--format", "github"],
        ["scan", *extra, "--format", "github", "--", "--env"],
    ]


@pytest.mark.parametrize("args", ["--device 'h100", "--device h100 \\"])
def test_args_that_cannot_be_split_run_nothing(tmp_path: Path, workspace: Path, args: str) -> None:
    done, calls = _action(tmp_path, {"KERNELCFG_FILES": "serve.sh", "KERNELCFG_ARGS": args})
    assert done.returncode == 2
    assert done.stdout.startswith("::error title=kernelcfg::args: an unclosed quote")
    assert calls == []


def test_no_input_is_an_error(tmp_path: Path, workspace: Path) -> None:
    done, calls = _action(tmp_path, {})
    assert done.returncode == 2
    assert "give the action a batch file or files" in done.stdout
    assert calls == []


def test_action_yml_runs_the_script_with_these_inputs() -> None:
    action: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    step = action["runs"]["steps"][-1]
    assert step["run"] == 'bash "${{ github.action_path }}/scripts/action.sh"'
    assert step["env"] == {
        "KERNELCFG_BATCH": "${{ inputs.batch }}",
        "KERNELCFG_FILES": "${{ inputs.files }}",
        "KERNELCFG_ARGS": "${{ inputs.args }}",
    }


def test_the_action_with_kernelcfg_scans_a_file_named_like_an_option(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "--env").write_text("vllm serve m --no-such-flag\n", encoding="utf-8")
    kernelcfg = f"{sys.executable} -m kernelcfg"
    inputs = {"KERNELCFG_FILES": "serve.sh\n--env", "KERNELCFG_ARGS": "--device h100"}
    done, _ = _action(tmp_path, {**inputs, "PYTHONPATH": str(ROOT)}, kernelcfg=kernelcfg)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "::error file=--env,line=1," in done.stdout
