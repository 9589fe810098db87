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


def _summary(command: CommandInfo) -> str | None:
    """A command's line in ``kernelcfg --help``: its help's first paragraph as one line
    (the docstring's own line breaks would break the list mid-sentence)."""
    text = command.help or (command.callback.__doc__ if command.callback else None) or ""
    first = " ".join(text.strip().split("\n\n")[0].split())
    return first or None


for _command in app.registered_commands:
    _command.short_help = _command.short_help or _summary(_command)
for _group in app.registered_groups:
    _text = _group.typer_instance.info.help if _group.typer_instance else None
    if isinstance(_text, str) and not _group.short_help:
        _group.short_help = " ".join(_text.strip().split("\n\n")[0].split())
