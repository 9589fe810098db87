"""Two-line adoption: the pre-commit hook (run through ``pre-commit try-repo`` on a
small fixture repository) and the GitHub Action's script (run as the action runs it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVE_SH = """#!/bin/sh
vllm serve deepseek-ai/DeepSeek-R1 \\
  --tensor-parallel-size 8 --trust-remote-code \\
  --moe-backend aiter && echo started
"""
DEPLOY_YAML = """spec:
  containers:
    - name: vllm
      command: ["vllm", "serve", "Qwen/Qwen3-8B", "--tensor-parallel-size", "2"]
"""


def _fixture(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "serve.sh").write_text(SERVE_SH)
    (repo / "deploy.yaml").write_text(DEPLOY_YAML)
    git = ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "fixture"], cwd=repo, check=True)
    return repo


@pytest.mark.slow
def test_pre_commit_hook_through_try_repo(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a checkout of kernelcfg")
    repo = _fixture(tmp_path)
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit"),
        "KERNELCFG_DEVICE": "h100",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "try-repo",
            str(ROOT),
            "kernelcfg-scan",
            "--all-files",
            "--verbose",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "serve.sh:2: exit 1" in out
    assert "'aiter' runs on rocm" in out
    assert "deploy.yaml:4: ok" in out


def test_action_script(tmp_path: Path) -> None:
    batch = tmp_path / "lines.jsonl"
    batch.write_text(
        json.dumps({"id": "ok", "argv": ["--moe-backend", "triton"]})
        + "\n"
        + json.dumps({"id": "bad", "argv": ["--moe-backend", "aiter"]})
        + "\n"
    )
    files = _fixture(tmp_path)
    env = {
        **os.environ,
        "KERNELCFG": f"{sys.executable} -m kernelcfg",
        "KERNELCFG_BATCH": str(batch),
        "KERNELCFG_FILES": f"{files / 'serve.sh'} {files / 'deploy.yaml'}",
        "KERNELCFG_ARGS": "--device h100",
    }
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "action.sh")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 2
    assert any("file=" in line and "line=2" in line for line in errors)
    empty = subprocess.run(
        ["bash", str(ROOT / "scripts" / "action.sh")],
        env={k: v for k, v in env.items() if not k.startswith("KERNELCFG_")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert empty.returncode == 2
