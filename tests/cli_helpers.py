"""Running the CLI in tests: in-process through Typer's runner, stdout and stderr apart."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from typer.testing import CliRunner

from kernelcfg.cli import app


@dataclass
class Run:
    """One CLI run."""

    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Run:
    """Invoke ``kernelcfg ARGS`` in-process; a Python traceback fails the test."""
    runner = CliRunner()
    result = runner.invoke(app, list(args), input=stdin, env=env, terminal_width=120)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(result.exit_code, result.stdout, result.stderr)
