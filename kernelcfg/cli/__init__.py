"""The ``kernelcfg`` command: parse, call the library, render, exit. Nothing more.

Only this package prints and exits. stdout carries only the requested format;
problems go to stderr, one line each. One module per command; ``common`` holds what
they share; ``app`` the Typer app and the entry point.
"""

from typer.models import CommandInfo

from kernelcfg.cli import (  # noqa: F401  (each module registers its command)
    backends,
    cache,
    diff,
    explain,
    fetch,
    lint_env,
    resolve,
    scan,
    schema,
    upgrade,
    versions,
    why,
)
from kernelcfg.cli.app import app, main

__all__ = ["COMMANDS", "app", "main"]

COMMANDS = (
    "resolve",
    "why",
    "versions",
    "upgrade",
    "diff",
    "scan",
    "lint-env",
    "backends",
    "explain",
    "schema",
    "fetch",
)
"""The commands, in the order ``kernelcfg --help`` lists them."""


def _listed_at(command: CommandInfo) -> int:
    """Where ``--help`` lists a command (its name, or its function's)."""
    return COMMANDS.index(command.name or getattr(command.callback, "__name__", ""))


app.registered_commands.sort(key=_listed_at)
