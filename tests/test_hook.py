"""The pre-commit hook: pre-commit itself runs it on a repository holding a file named
``--env``, and every file reaches kernelcfg after ``--``.

pre-commit would build the hook's own environment from PyPI (``language: python``),
so the run here keeps the manifest's hook as it is but for ``language: system`` and a
stand-in ``kernelcfg-hook`` on PATH that records its argv; the entry itself is tested
apart, in-process."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kernelcfg.cli import hook

ROOT = Path(__file__).resolve().parent.parent

STAND_IN = f"""#!{sys.executable}
import json, os, sys
with open(os.environ["ARGV_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
"""

SERVE = "vllm serve m --moe-backend triton\n"


def _manifest_hook() -> dict[str, Any]:
    """The kernelcfg-scan hook as .pre-commit-hooks.yaml defines it."""
    hooks: list[dict[str, Any]] = yaml.safe_load(
        (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    )
    return next(h for h in hooks if h["id"] == "kernelcfg-scan")


def _repository(tmp_path: Path) -> Path:
    """A git repository with deployment files, one named ``--env``, and one other file."""
    repo = tmp_path / "repo"
    (repo / "k8s").mkdir(parents=True)
    (repo / "--env").write_text(f"#!/bin/sh\n{SERVE}", encoding="utf-8")
    (repo / "--env").chmod(0o755)  # a shell script by its shebang, as pre-commit sees it
    (repo / "serve.sh").write_text(SERVE, encoding="utf-8")
    (repo / "k8s" / "vllm.yaml").write_text(f"command: {SERVE}", encoding="utf-8")
    (repo / "notes.txt").write_text(SERVE, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def _pre_commit(tmp_path: Path, repo: Path, args: list[str] | None) -> list[list[str]]:
    """``pre-commit run --all-files`` with the hook (and the user's ``args``, if any);
    the argv of each run of its entry."""
    local = {**_manifest_hook(), "language": "system"}
    if args is not None:
        local["args"] = args
    config = {"repos": [{"repo": "local", "hooks": [local]}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    entry = bin_dir / shlex.split(local["entry"])[0]
    entry.write_text(STAND_IN, encoding="utf-8")
    entry.chmod(0o755)
    log = tmp_path / "argv.jsonl"
    log.unlink(missing_ok=True)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "ARGV_LOG": str(log),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


FILES = sorted(["--env", ".pre-commit-config.yaml", "k8s/vllm.yaml", "serve.sh"])
"""What the hook's ``types_or`` select (not ``notes.txt``), in some order."""


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["--device", "h100", "--"], ["--device", "h100", "--"]), (None, ["--"])],
    ids=["user-args", "default-args"],  # default: the hook's own args
)
def test_pre_commit_passes_every_file_after_the_separator(
    tmp_path: Path, args: list[str] | None, expected: list[str]
) -> None:
    calls = _pre_commit(tmp_path, _repository(tmp_path), args)
    assert len(calls) == 1
    assert calls[0][: len(expected)] == expected
    assert sorted(calls[0][len(expected) :]) == FILES


def test_the_hook_entry_is_scan_after_its_args(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _manifest_hook()["entry"] == "kernelcfg-hook"
    assert _manifest_hook()["args"] == ["--"]
    seen: list[list[str]] = []
    monkeypatch.setattr(hook, "kernelcfg", lambda: seen.append(sys.argv[1:]))
    monkeypatch.setattr(sys, "argv", ["kernelcfg-hook", "--device", "h100", "--", "--env"])
    hook.main()
    assert seen == [["scan", "--device", "h100", "--", "--env"]]


def test_the_hook_refuses_args_without_the_separator(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(hook, "kernelcfg", lambda: pytest.fail("scan ran"))
    monkeypatch.setattr(sys, "argv", ["kernelcfg-hook", "--device", "h100", "--env", "a.sh"])
    with pytest.raises(SystemExit) as stopped:
        hook.main()
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the kernelcfg-scan hook's args must end with '--'")
    assert err.count("\n") == 1


def test_the_hook_scans_a_file_named_like_an_option(tmp_path: Path) -> None:
    (tmp_path / "--env").write_text("vllm serve m --no-such-flag\n", encoding="utf-8")
    (tmp_path / "serve.sh").write_text(SERVE, encoding="utf-8")
    entry = [sys.executable, "-c", "from kernelcfg.cli.hook import main; main()"]
    done = subprocess.run(
        [*entry, "--device", "h100", "--", "--env", "serve.sh"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--env" in done.stdout
    assert "serve.sh" in done.stdout
