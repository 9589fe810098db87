"""Launches in Markdown: fenced code blocks by their language, and inline code that
holds a whole command.

A block marked ``bash``, ``sh``, ``shell``, ``zsh`` or unmarked is read as shell;
``console``/``shell-session`` blocks read only the commands after a ``$`` or ``%``
prompt (and the lines they continue), or as shell when no line has a prompt; ``yaml``,
``dockerfile`` and ``python`` blocks go
to those readers; other languages are skipped. Outside blocks, an inline span
(`` `vllm serve MODEL --flag` ``) counts only when the whole span is the command; prose
never does.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from collections.abc import Iterator

from kernelcfg.base.errors import KernelcfgError
from kernelcfg.flags.launches import images
from kernelcfg.flags.launches.words import Found, Notice, from_shell

__all__ = ["launches"]

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+#.-]*)")
"""A fence, at any indentation (documentation sites nest them in lists and notes)."""
_SHELL = frozenset({"", "bash", "sh", "shell", "zsh", "ksh", "shellscript", "bash-session"})
_SESSION = frozenset({"console", "shell-session", "terminal", "sh-session"})
_OTHER = {"yaml": "yaml", "yml": "yaml", "dockerfile": "dockerfile", "docker": "dockerfile"}
_INLINE_CANDIDATE = re.compile(r"vllm\s+serve\s+[^\s`]|vllm\.entrypoints\.")
"""A prose line that may hold an inline launch (one with an argument)."""
_PROMPT = re.compile(r"^\s*(?:\(\S+\)\s*)?[$%]\s+")
"""A session's prompt (``$ ``, ``% ``, after a ``(venv)``); ``#`` lines are comments."""
_INLINE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_COMMAND = re.compile(
    r"\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*"
    r"(?:vllm\s+serve\s+\S|python3?\s+-m\s+vllm\.entrypoints\.\S+\s+\S)"
)
"""An inline span that is a whole command: a launch with at least one argument
(`` `vllm serve` `` alone names the command in prose, and `` `vllm serve ...` `` is a
placeholder)."""


def launches(text: str, path: str) -> Iterator[Found | Notice]:
    """Every launch in a Markdown file's code."""
    lines = text.split("\n")
    at = 0
    while at < len(lines):
        fence = _FENCE.match(lines[at])
        if fence is None:
            if _INLINE_CANDIDATE.search(lines[at]):
                yield from _inline(lines[at], at + 1, path)
            at += 1
            continue
        closing = fence.group(1)
        start = at + 1
        at = start
        while at < len(lines) and not lines[at].lstrip().startswith(closing):
            at += 1
        body = "\n".join(lines[start:at])
        at += 1
        if images.marker().search(body):
            yield from _block(body, fence.group(2).lower(), start + 1, path)


def _block(body: str, language: str, first_line: int, path: str) -> Iterator[Found | Notice]:
    """A fenced block's launches, read as its language."""
    from kernelcfg.flags.launches import scripts

    if language in _SHELL:
        yield from scripts.launches(body, path, first_line)
    elif language in _SESSION:
        prompted = any(_PROMPT.match(line) for line in body.split("\n"))
        yield from scripts.launches(_commands_only(body) if prompted else body, path, first_line)
    elif language in _OTHER or language == "python":
        from kernelcfg.flags.launches import dockerfile, python_files, yaml_files

        reader = {"yaml": yaml_files, "dockerfile": dockerfile}.get(
            _OTHER.get(language, ""), python_files
        )
        try:
            for found in reader.launches(textwrap.dedent(body), path):
                if isinstance(found, Notice) and found.severity != "warning":
                    continue  # a docs snippet that is not whole Python, naming no launch
                yield dataclasses.replace(found, line=found.line + first_line - 1)
        except KernelcfgError:  # an example that is not whole YAML: not a launch
            return


def _commands_only(body: str) -> str:
    """A console session with only the prompted commands (and the lines they continue)
    kept; output lines become blank, so line numbers stay."""
    kept: list[str] = []
    going = False
    for line in body.split("\n"):
        prompt = _PROMPT.match(line)
        if prompt:
            kept.append(" " * prompt.end() + line[prompt.end() :])
            going = line.rstrip().endswith("\\")
        elif going:
            kept.append(line)
            going = line.rstrip().endswith("\\")
        else:
            kept.append("")
    return "\n".join(kept)


def _inline(line: str, number: int, path: str) -> Iterator[Found]:
    """The launches of a prose line's inline code spans that are whole commands."""
    for span in _INLINE.finditer(line):
        code = span.group(2)
        if _COMMAND.match(code) and "..." not in code and "…" not in code:
            column = span.start(2) + 1 + (len(code) - len(code.lstrip()))
            for found in from_shell(code.strip(), path, number):
                yield dataclasses.replace(found, column=column)
