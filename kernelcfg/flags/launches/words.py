"""A launch found in a command's words: what every reader of :mod:`kernelcfg.flags.launches`
hands back, and the rule that tells a launch from any other command."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kernelcfg.base.bounded import MAX_WORDS
from kernelcfg.flags.launches.shell import Command, Word, commands

__all__ = [
    "MARKER",
    "MARKER_IN_SHELL",
    "Found",
    "Spans",
    "data_spans",
    "exec_words",
    "from_shell",
    "from_words",
]

MARKER = re.compile(r"vllm")
"""Text that may hold a launch (a file without it is not read further)."""
MARKER_IN_SHELL = re.compile(
    r"\bvllm[ \t]+serve\b|\bvllm\.entrypoints\.openai\.api_server\b|\bvllm/vllm-openai\b"
)
"""Where a launch may start in shell text."""
_STARTERS = frozenset({"dumb-init", "tini", "catatonit"})
"""Init programs that start the words after their options (and a ``--``)."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=", re.ASCII)
_WRAPPERS = frozenset({"exec", "nohup", "time", "command", "sudo", "nice", "stdbuf"})
"""Commands that run the words after them (their own options are not followed)."""
_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "rye", "hatch"})
"""Tools whose ``run`` runs the words after it."""
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})
_ENTRY_POINTS = (["vllm.entrypoints.openai.api_server"],)
"""Modules that ``python -m`` starts vLLM's OpenAI server with (the old entry point)."""
_IMAGE = re.compile(r"(?:[\w.-]+(?::\d+)?/)*vllm/vllm-openai(?::[\w.-]+)?(?:@sha256:[0-9a-f]+)?")
"""vLLM's official image, whose entry point is the server (``docker run IMAGE ARGS``)."""
_EXPANSION = re.compile(r"\$[({A-Za-z_@*0-9#?!-]|\{\{|`")
"""Parts of an exec-form word that something other than vLLM fills in: a shell or
compose variable, Kubernetes' ``$(VAR)``, a Helm or Actions template."""


@dataclass(frozen=True)
class Found:
    """One launch of vLLM's OpenAI server written in a file."""

    path: str
    """The file."""
    line: int
    """The 1-based line where the launching command begins (``\\n`` counted only)."""
    column: int
    """Its 1-based column."""
    argv: list[str]
    """``vllm serve …`` as the program receives it (the old entry point's words after
    ``python -m vllm.entrypoints.openai.api_server`` follow ``vllm serve``)."""
    env: dict[str, str] = field(default_factory=dict)
    """Variables the file sets for it (``VAR=1 vllm serve``, a Dockerfile's ``ENV``, a
    container's ``env:``)."""
    unresolved: list[str] = field(default_factory=list)
    """Its words that the shell, compose, Kubernetes or a template fill in at run time."""
    problem: str | None = None
    """Why the launch cannot be read as written (an unclosed quote), if it cannot."""


def exec_words(values: Sequence[str], line: int, column: int) -> list[Word]:
    """Words given one by one (a JSON or YAML list: no shell splits or expands them)."""
    return [Word(v, bool(_EXPANSION.search(v)), line, column) for v in values]


def from_shell(
    text: str, path: str, first_line: int = 1, env: Mapping[str, str] | None = None
) -> Iterator[Found]:
    """The launches in shell ``text`` (starting on ``first_line``): only the commands
    around a launch's words are read, so a file's size costs little beyond a search."""
    end = 0
    counted_to, line = 0, first_line
    data = data_spans(text)
    for match in MARKER_IN_SHELL.finditer(text):
        if match.start() < end:
            continue
        start = _logical_start(text, match.start())
        if data.holds(start, match.start()):
            continue
        line += text.count("\n", counted_to, start)
        counted_to = start
        for command in commands(text, line, start):
            if command.end <= match.start():
                continue
            end = command.end
            yield from from_words(command.words, path, env, problem=_problem(command))
            break
        else:
            end = len(text)


@dataclass(frozen=True)
class Spans:
    """Parts of shell text that are data, not commands: quoted strings (by start and
    end) and heredoc bodies."""

    starts: list[int]
    """Where each quoted string or heredoc body starts, in order."""
    ends: list[int]
    """Where each ends."""
    heredocs: list[tuple[int, int]] = field(default_factory=list)
    """Each heredoc body's start and end."""

    def holds(self, line_start: int, at: int) -> bool:
        """Whether ``at`` lies in data that began before ``line_start`` (a string
        assigned across lines, ``CMD="vllm serve ..."``, or a heredoc's text)."""
        place = bisect.bisect_right(self.starts, at) - 1
        return place >= 0 and self.starts[place] < line_start and at < self.ends[place]


_DATA = re.compile(
    r"""'[^']*'?|"(?:[^"\\]|\\.)*"?|(?:(?<=\s)|^)\#[^\n]*|<<-?[ \t]*(['"]?)([A-Za-z_]\w*)\1|\\.""",
    re.MULTILINE | re.DOTALL,
)


def data_spans(text: str) -> Spans:
    """The quoted strings and heredoc bodies of shell text, in one pass (each string
    costs one step; plain text between them none)."""
    if "'" not in text and '"' not in text and "<<" not in text:
        return Spans([], [])
    starts: list[int] = []
    ends: list[int] = []
    heredocs: list[tuple[int, int]] = []
    at = 0
    while (match := _DATA.search(text, at)) is not None:
        at = max(match.end(), match.start() + 1)
        token = match.group()
        if token[0] in "'\"":
            starts.append(match.start())
            ends.append(match.end())
        elif token.startswith("<<"):
            body = text.find("\n", match.end()) + 1
            if body == 0:
                continue
            close = re.compile(rf"^[ \t]*{re.escape(match.group(2))}[ \t]*$", re.MULTILINE)
            found = close.search(text, body)
            stop = found.start() if found else len(text)
            starts.append(body)
            ends.append(stop)
            heredocs.append((body, stop))
            at = found.end() if found else len(text)
    return Spans(starts, ends, heredocs)


def _problem(command: Command) -> str | None:
    """Why a command cannot be read as written, if it cannot."""
    if command.unbalanced:
        return "a quote is never closed; a shell refuses this line"
    if command.cut:
        return f"more than {MAX_WORDS:,} words; kernelcfg reads at most {MAX_WORDS:,}"
    return None


def _logical_start(text: str, at: int) -> int:
    """The start of the line holding ``at``, and of the lines it continues (``\\``)."""
    start = text.rfind("\n", 0, at) + 1
    while start >= 2 and text[start - 2] == "\\":
        start = text.rfind("\n", 0, start - 1) + 1
    return start


def from_words(
    words: Sequence[Word],
    path: str,
    env: Mapping[str, str] | None = None,
    *,
    problem: str | None = None,
) -> Iterator[Found]:
    """The launch one command's words make, if they make one: after variables set for
    it and wrappers (``exec``, ``nohup``, ``env``, ``uv run`` …), ``vllm serve``,
    ``python -m vllm.entrypoints.openai.api_server``, ``docker run … vllm/vllm-openai``
    or a shell's ``-c`` script holding one."""
    given = dict(env or {})
    at = _past_prefixes(words, given)
    rest = words[at:]
    if not rest:
        return
    program = rest[0].text.rsplit("/", 1)[-1]
    argv = _launch_argv(program, rest)
    if argv is not None:
        unresolved = list(dict.fromkeys(w.text for w in rest if w.unresolved))
        yield Found(path, rest[0].line, rest[0].column, argv, given, unresolved, problem)
        return
    if program in _SHELLS:
        script = _script(rest)
        if script is not None:
            yield from from_shell(script.text, path, script.line, given)


def _past_prefixes(words: Sequence[Word], env: dict[str, str]) -> int:
    """Where the command proper starts, past ``VAR=value`` words (added to ``env``) and
    wrappers."""
    at = 0
    while at < len(words):
        text = words[at].text
        assigned = _ASSIGNMENT.match(text)
        if assigned:
            env[text[: assigned.end() - 1]] = text[assigned.end() :]
        elif text in _WRAPPERS:
            pass
        elif text.rsplit("/", 1)[-1] in _STARTERS:
            while at + 1 < len(words) and words[at + 1].text.startswith("-"):
                at += 1
        elif text == "env":
            while at + 1 < len(words) and words[at + 1].text.startswith("-"):
                at += 2 if words[at + 1].text in ("-u", "--unset") else 1
        elif text in _RUNNERS and at + 1 < len(words) and words[at + 1].text == "run":
            at += 1
        else:
            break
        at += 1
    return at


def _launch_argv(program: str, rest: Sequence[Word]) -> list[str] | None:
    """``vllm serve …`` for a command that launches vLLM's server; ``None`` otherwise."""
    texts = [w.text for w in rest]
    if program == "vllm" and texts[1:2] == ["serve"]:
        return ["vllm", *texts[1:]]
    if program.startswith("python") and texts[1:2] == ["-m"] and texts[2:3] in _ENTRY_POINTS:
        return ["vllm", "serve", *texts[3:]]
    if program in ("docker", "podman") and texts[1:2] == ["run"]:
        for place, text in enumerate(texts[2:], 2):
            if _IMAGE.fullmatch(text):
                return ["vllm", "serve", *texts[place + 1 :]]
    return None


def _script(rest: Sequence[Word]) -> Word | None:
    """The script of ``sh -c SCRIPT`` (options such as ``-e`` or ``-x`` may come first)."""
    for place, word in enumerate(rest[1:], 1):
        if not word.text.startswith("-"):
            return None
        if "c" in word.text[1:] and not word.text.startswith("--"):
            return rest[place + 1] if place + 1 < len(rest) else None
    return None
