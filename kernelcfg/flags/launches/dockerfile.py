"""The launch a Dockerfile's image starts with: its ``ENTRYPOINT`` and ``CMD``.

Instructions are read as Docker reads them: a line ending in the escape character
(``\\``, or the one an ``# escape=`` directive names) continues on the next, comment
lines inside are dropped; an instruction whose arguments are a JSON array of strings is
in exec form (no shell), any other in shell form (``/bin/sh -c``). Each build stage
(``FROM``) has its own: the last ``ENTRYPOINT`` and the last ``CMD`` after it; exec
forms join (``ENTRYPOINT ["vllm", "serve"]`` + ``CMD ["model", "--flag"]``), a shell-form
``ENTRYPOINT`` ignores ``CMD``. A stage built ``FROM vllm/vllm-openai`` without an
``ENTRYPOINT`` of its own keeps that image's (the server): its ``CMD`` holds the server's
arguments. ``ENV`` variables are the launch's environment; ``ENV`` and ``ARG`` values fill
in ``$VAR`` words of a shell form where they are known.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from kernelcfg.flags.launches.words import Found, exec_words, from_shell, from_words

__all__ = ["launches"]

_DIRECTIVE = re.compile(r"#\s*escape\s*=\s*(\S)", re.IGNORECASE)
_INSTRUCTION = re.compile(r"\s*([A-Za-z]+)(?:\s+|$)")
_IMAGE = re.compile(r"(?:[\w.-]+(?::\d+)?/)*vllm/vllm-openai(?:[:@]\S+)?", re.IGNORECASE)
_ENV_PAIR = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|'[^']*'|\S*)")


@dataclass(frozen=True)
class _Instruction:
    """One instruction: its keyword (upper case), its arguments, where it starts."""

    keyword: str
    """``CMD``, ``ENTRYPOINT``, ``FROM``, …"""
    text: str
    """Its arguments, each continuation written ``\\`` and a newline (a comment line in
    between left blank), so that the shell reader keeps the file's lines."""
    line: int
    """The 1-based line of the keyword."""
    column: int
    """The 1-based column where the arguments start."""


@dataclass
class _Stage:
    """What a build stage has set so far."""

    from_server: bool = False
    """Whether it is built ``FROM`` vLLM's image (whose entry point is the server)."""
    entrypoint: _Instruction | None = None
    """Its last ``ENTRYPOINT``."""
    cmd: _Instruction | None = None
    """Its last ``CMD`` (dropped by a later ``ENTRYPOINT``, as Docker does)."""
    env: dict[str, str] = field(default_factory=dict)
    """Its ``ENV`` variables."""
    args: dict[str, str] = field(default_factory=dict)
    """Its ``ARG`` defaults."""


def launches(text: str, path: str) -> Iterator[Found]:
    """The launch each build stage of a Dockerfile starts with, if it starts one."""
    stage: _Stage | None = None
    for instruction in _instructions(text):
        if instruction.keyword == "FROM":
            if stage is not None:
                yield from _launch(stage, path)
            image = [w for w in instruction.text.split() if not w.startswith("--")]
            stage = _Stage(from_server=bool(image and _IMAGE.fullmatch(image[0])))
        elif stage is None:
            continue
        elif instruction.keyword == "ENTRYPOINT":
            stage.entrypoint, stage.cmd = instruction, None
        elif instruction.keyword == "CMD":
            stage.cmd = instruction
        elif instruction.keyword in ("ENV", "ARG"):
            _assign(instruction.text, stage.env if instruction.keyword == "ENV" else stage.args)
    if stage is not None:
        yield from _launch(stage, path)


def _instructions(text: str) -> Iterator[_Instruction]:
    """Each instruction with its continuation lines joined (comment lines dropped)."""
    lines = text.split("\n")
    escape = "\\"
    directive = _DIRECTIVE.match(lines[0]) if lines else None
    if directive:
        escape = directive.group(1)
    at = 0
    while at < len(lines):
        first = lines[at]
        at += 1
        match = _INSTRUCTION.match(first)
        if first.lstrip().startswith("#") or not first.strip() or not match:
            continue
        parts = [first[match.end() :]]
        start = at
        while parts[-1].rstrip().endswith(escape) and at < len(lines):
            parts[-1] = parts[-1].rstrip()[: -len(escape)] + "\\"
            following = lines[at]
            at += 1
            parts.append("" if following.lstrip().startswith("#") else following)
        yield _Instruction(match.group(1).upper(), "\n".join(parts), start, match.end() + 1)


def _assign(text: str, into: dict[str, str]) -> None:
    """``ENV A=1 B="x y"`` or the old ``ENV A 1``; ``ARG A=1`` (an ``ARG`` without a
    default sets nothing)."""
    pairs = _ENV_PAIR.findall(text)
    if pairs:
        for name, value in pairs:
            into[name] = value[1:-1] if value[:1] in "\"'" and len(value) > 1 else value
        return
    name, _, value = text.strip().partition(" ")
    if value and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        into[name] = value.strip()


def _exec_form(instruction: _Instruction) -> list[str] | None:
    """The words of an exec-form instruction; ``None`` for the shell form."""
    text = instruction.text.replace("\\\n", "").strip()
    if not text.startswith("["):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def _launch(stage: _Stage, path: str) -> Iterator[Found]:
    """The launch of a finished stage, if its entry point and command make one."""
    entry, cmd = stage.entrypoint, stage.cmd
    known = {**stage.args, **stage.env}
    if entry is None and cmd is None:
        return
    first = entry or cmd
    assert first is not None
    entry_words = _exec_form(entry) if entry is not None else None
    cmd_words = _exec_form(cmd) if cmd is not None else None
    if entry is not None and entry_words is None:  # shell form: CMD is ignored
        yield from _shell_form(entry, path, stage.env, known)
        return
    if entry is None and stage.from_server:
        entry_words, first = ["vllm", "serve"], cmd or first
    if cmd is not None and cmd_words is None:
        if entry_words:  # a shell-form CMD is `/bin/sh -c TEXT` after the entry point
            cmd_words = ["/bin/sh", "-c", cmd.text]
        else:
            yield from _shell_form(cmd, path, stage.env, known)
            return
    words = exec_words([*(entry_words or []), *(cmd_words or [])], first.line, first.column)
    yield from from_words(words, path, stage.env)


def _shell_form(
    instruction: _Instruction, path: str, env: dict[str, str], known: dict[str, str]
) -> Iterator[Found]:
    """A shell-form instruction's launch, with ``$VAR`` words of known ``ENV``/``ARG``
    values filled in."""
    text = " " * (instruction.column - 1) + instruction.text  # columns as in the file
    for found in from_shell(text, path, instruction.line, env):
        if not found.unresolved:
            yield found
            continue
        argv = [_fill(word, known) for word in found.argv]
        left = [word for word in argv if word in found.unresolved]
        yield Found(found.path, found.line, found.column, argv, found.env, left, found.problem)


def _fill(word: str, known: dict[str, str]) -> str:
    """``$NAME`` or ``${NAME}`` as the value Docker sets for it, when it sets one."""
    match = re.fullmatch(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))", word)
    if match:
        name = match.group(1) or match.group(2)
        return known.get(name, word)
    return word
