"""Whole shell scripts (a shell file, a docs block of shell): their launches, those
assembled in variables before they run (:mod:`.assembled`), and those written in their
heredocs — a manifest piped to ``kubectl apply`` is read as YAML, a script written to a
file as shell."""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Iterator, Mapping

from kernelcfg.base.errors import KernelcfgError
from kernelcfg.flags.launches import assembled, images, yaml_files
from kernelcfg.flags.launches.words import Found, data_spans, from_shell

__all__ = ["launches", "shell_launches"]


def launches(text: str, path: str, first_line: int = 1) -> Iterator[Found]:
    """The launches of a shell script, its heredocs' included (in the script's order
    for each; the heredocs' first)."""
    for start, end in data_spans(text).heredocs if "<<" in text else ():
        yield from _heredoc(text[start:end], path, first_line + text.count("\n", 0, start))
    yield from shell_launches(text, path, first_line)


def shell_launches(
    text: str, path: str, first_line: int = 1, env: Mapping[str, str] | None = None
) -> Iterator[Found]:
    """The launches written in shell ``text``, then those it assembles in variables."""
    yield from from_shell(text, path, first_line, env)
    if "=" in text:
        yield from assembled.launches(text, path, first_line, env)


def _heredoc(body: str, path: str, line: int) -> Iterator[Found]:
    """A heredoc body's launches, as a manifest if it is one, else as shell."""
    if not images.marker().search(body):
        return
    try:  # a manifest indented as a whole (inside a docs block) is dedented first
        found = list(yaml_files.launches(textwrap.dedent(body), path))
    except KernelcfgError:
        found = []
    if not found:
        yield from shell_launches(body, path, line)
        return
    for launch in found:
        yield dataclasses.replace(launch, line=launch.line + line - 1)
