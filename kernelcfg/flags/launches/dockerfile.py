"""The launch a Dockerfile's image starts with: its ``ENTRYPOINT`` and ``CMD``.

Instructions are read as Docker reads them: a line ending in the escape character
(``\\``, or the one an ``# escape=`` directive names) continues on the next, comment
lines inside are dropped; an instruction whose arguments are a JSON array of strings is
in exec form (no shell), any other in shell form (``/bin/sh -c``). Each build stage
(``FROM``) has its own: the last ``ENTRYPOINT`` and the last ``CMD`` after it; exec
forms join (``ENTRYPOINT ["vllm", "serve"]`` + ``CMD ["model", "--flag"]``), a shell-form
``ENTRYPOINT`` ignores ``CMD``. A stage built ``FROM vllm/vllm-openai`` without an
``ENTRYPOINT`` of its own keeps that image's (the server): its ``CMD`` holds the server's
arguments (a note says so); so does a stage built ``FROM`` an earlier stage that is. ``ENV``
variables are the launch's environment; ``ENV`` and ``ARG`` values fill in ``$VAR`` words
of a shell form where they are known. A ``RUN`` that launches the server (a warm-up while
the image is built) is a launch too, with a note that it runs at build time.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from kernelcfg.flags.launches import images
from kernelcfg.flags.launches.shell import Word
from kernelcfg.flags.launches.words import (
    Found,
    Note,
    exec_words,
    from_shell,
    from_words,
    image_note,
    runs_program,
)

__all__ = ["entry_point", "launches"]

_DIRECTIVE = re.compile(r"#\s*escape\s*=\s*(\S)", re.IGNORECASE)
_INSTRUCTION = re.compile(r"\s*([A-Za-z]+)(?:\s+|$)")
_BUILD_TIME = Note(
    "build-time-launch",
    "a RUN instruction: the server runs while the image is built, not when it starts",
)
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

    from_server: str | None = None
    """The image it is built ``FROM`` when that image's entry point is the server
    (vLLM's, or an earlier stage built on one)."""
    entrypoint: _Instruction | None = None
    """Its last ``ENTRYPOINT``."""
    cmd: _Instruction | None = None
    """Its last ``CMD`` (dropped by a later ``ENTRYPOINT``, as Docker does)."""
    env: dict[str, str] = field(default_factory=dict)
    """Its ``ENV`` variables."""
    args: dict[str, str] = field(default_factory=dict)
    """Its ``ARG`` defaults."""


def launches(text: str, path: str) -> Iterator[Found]:
    """The launch each build stage of a Dockerfile starts with, if it starts one, and
    the launches its ``RUN`` instructions make."""
    for stage, runs in _stages(text):
        for run in runs:
            yield from _run(run, path, stage)
        yield from _launch(stage, path)


def entry_point(text: str) -> list[str] | None:
    """The words of ``vllm serve`` the last stage of a Dockerfile starts with, when its
    entry point is vLLM's server (its own exec-form ``ENTRYPOINT``, or the one of the
    image it is built on); ``None`` otherwise."""
    last = None
    for stage, _ in _stages(text):
        last = stage
    if last is None:
        return None
    if last.entrypoint is None:
        return ["vllm", "serve"] if last.from_server else None
    form = _exec_form(last.entrypoint)
    if form is None:
        return None
    found = list(from_words(form.words, "", last.env))
    return found[0].argv if found else None


def _stages(text: str) -> Iterator[tuple[_Stage, list[_Instruction]]]:
    """Each build stage as it stands at its end, with its ``RUN`` instructions that
    may launch the server."""
    stage: _Stage | None = None
    runs: list[_Instruction] = []
    named: dict[str, _Stage] = {}
    marker = images.marker_in_shell()
    for instruction in _instructions(text):
        keyword = instruction.keyword
        if keyword == "FROM":
            if stage is not None:
                yield stage, runs
            stage, runs = _from(instruction.text, named), []
        elif stage is None:
            continue
        elif keyword == "ENTRYPOINT":
            stage.entrypoint, stage.cmd = instruction, None
        elif keyword == "CMD":
            stage.cmd = instruction
        elif keyword in ("ENV", "ARG"):
            _assign(instruction.text, stage.env if keyword == "ENV" else stage.args)
        elif keyword == "RUN" and marker.search(instruction.text):
            runs.append(instruction)
    if stage is not None:
        yield stage, runs


def _from(text: str, named: dict[str, _Stage]) -> _Stage:
    """A new stage (``FROM IMAGE [AS NAME]``), remembered by its name."""
    words = [w for w in text.split() if not w.startswith("--")]
    image = words[0] if words else ""
    earlier = named.get(image.lower())
    if earlier is not None:
        server = earlier.from_server if earlier.entrypoint is None else None
        stage = _Stage(from_server=server, entrypoint=earlier.entrypoint, env=dict(earlier.env))
    else:
        stage = _Stage(from_server=image if image and images.is_server(image) else None)
    if len(words) >= 3 and words[1].lower() == "as":
        named[words[2].lower()] = stage
    return stage


def _run(instruction: _Instruction, path: str, stage: _Stage) -> Iterator[Found]:
    """The launches of a ``RUN`` instruction, each with the build-time note."""
    form = _exec_form(instruction)
    known = {**stage.args, **stage.env}
    if form is None:
        found: Iterator[Found] = _shell_form(instruction, path, stage.env, known)
    else:
        found = from_words(form.words, path, stage.env)
    for launch in found:
        yield dataclasses.replace(launch, notes=(*launch.notes, _BUILD_TIME))


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
        going = parts[-1].rstrip().endswith(escape)
        while going and at < len(lines):
            if parts[-1].rstrip().endswith(escape):
                parts[-1] = parts[-1].rstrip()[: -len(escape)] + "\\"
            following = lines[at]
            at += 1
            skipped = following.lstrip().startswith("#") or not following.strip()
            parts.append("\\" if skipped else following)
            going = skipped or following.rstrip().endswith(escape)
        if len(parts) > 1 and parts[-1] == "\\":  # blank or comment lines to the end
            parts[-1] = ""
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
    notes: tuple[Note, ...] = ()
    if entry is None and stage.from_server and cmd is not None and not _own(cmd, cmd_form):
        head = exec_words(["vllm", "serve"], cmd.line, cmd.column)
        notes = (image_note(stage.from_server),)
    if cmd is not None and cmd_form is None:
        if not head:
            yield from _shell_form(cmd, path, stage.env, known)
            return
        # a shell-form CMD after an exec-form entry point is `/bin/sh -c TEXT`
        cmd_form = _Exec(exec_words(["/bin/sh", "-c", cmd.text], cmd.line, cmd.column), {})
    tail = cmd_form.words if cmd_form else []
    written = {**(entry_form.raw if entry_form else {}), **(cmd_form.raw if cmd_form else {})}
    for found in from_words([*head, *tail], path, stage.env, notes=notes):
        yield _placed(found, written)


def _own(cmd: _Instruction, form: _Exec | None) -> bool:
    """Whether a ``CMD`` is a command of its own (a launch, a shell), not arguments: it
    is read as written, whatever entry point the image has."""
    if form is None:
        return bool(images.marker_in_shell().search(cmd.text))
    return runs_program(form.words)


def _placed(found: Found, written: dict[int, str]) -> Found:
    """A launch found inside a ``sh -c`` string that spans lines, placed on the line
    where its command is written (the string's own line is where the string starts)."""
    raw = written.get(found.line)
    marker = images.marker_in_shell().search(raw) if raw else None
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
