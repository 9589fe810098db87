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

import dataclasses
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from kernelcfg.flags.launches.shell import Word
from kernelcfg.flags.launches.words import (
    MARKER_IN_SHELL,
    Found,
    exec_words,
    from_shell,
    from_words,
)

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


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


@dataclass(frozen=True)
class _Exec:
    """An exec-form instruction's words, each where its string is written."""

    words: list[Word]
    """The words, with their lines and columns in the file."""
    raw: dict[int, str]
    """The strings as written (continuations kept), by the line each starts on."""


def _exec_form(instruction: _Instruction | None) -> _Exec | None:
    """The words of an exec-form instruction; ``None`` for the shell form (or none)."""
    if instruction is None:
        return None
    raw = instruction.text
    text = raw.replace("\\\n", "").strip()
    if not text.startswith("["):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return None
    tokens = list(_JSON_STRING.finditer(raw))
    if len(tokens) != len(value):
        return _Exec(exec_words(value, instruction.line, instruction.column), {})
    words: list[Word] = []
    written: dict[int, str] = {}
    for item, token in zip(value, tokens, strict=True):
        line = instruction.line + raw.count("\n", 0, token.start())
        column = token.start() - raw.rfind("\n", 0, token.start())
        if line == instruction.line:
            column += instruction.column - 1
        words += exec_words([item], line, column)
        written[line] = f"{written.get(line, '')} {token.group()}"
    return _Exec(words, written)


def _launch(stage: _Stage, path: str) -> Iterator[Found]:
    """The launch of a finished stage, if its entry point and command make one."""
    entry, cmd = stage.entrypoint, stage.cmd
    if entry is None and cmd is None:
        return
    entry_form, cmd_form = _exec_form(entry), _exec_form(cmd)
    known = {**stage.args, **stage.env}
    if entry is not None and entry_form is None:  # shell form: CMD is ignored
        yield from _shell_form(entry, path, stage.env, known)
        return
    head = entry_form.words if entry_form else []
    if entry is None and stage.from_server and cmd is not None:
        head = exec_words(["vllm", "serve"], cmd.line, cmd.column)
    if cmd is not None and cmd_form is None:
        if not head:
            yield from _shell_form(cmd, path, stage.env, known)
            return
        # a shell-form CMD after an exec-form entry point is `/bin/sh -c TEXT`
        cmd_form = _Exec(exec_words(["/bin/sh", "-c", cmd.text], cmd.line, cmd.column), {})
    tail = cmd_form.words if cmd_form else []
    written = {**(entry_form.raw if entry_form else {}), **(cmd_form.raw if cmd_form else {})}
    for found in from_words([*head, *tail], path, stage.env):
        yield _placed(found, written)


def _placed(found: Found, written: dict[int, str]) -> Found:
    """A launch found inside a ``sh -c`` string that spans lines, placed on the line
    where its command is written (the string's own line is where the string starts)."""
    raw = written.get(found.line)
    marker = MARKER_IN_SHELL.search(raw) if raw else None
    if raw is None or marker is None:
        return found
    line = found.line + raw.count("\n", 0, marker.start())
    return dataclasses.replace(found, line=line)


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
        yield dataclasses.replace(found, argv=argv, unresolved=left)


def _fill(word: str, known: dict[str, str]) -> str:
    """``$NAME`` or ``${NAME}`` as the value Docker sets for it, when it sets one."""
    match = re.fullmatch(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))", word)
    if match:
        name = match.group(1) or match.group(2)
        return known.get(name, word)
    return word
