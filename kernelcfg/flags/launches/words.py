"""A launch found in a command's words: what every reader of :mod:`kernelcfg.flags.launches`
hands back, and the rule that tells a launch from any other command."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kernelcfg.base.bounded import MAX_WORDS
from kernelcfg.flags.launches import images
from kernelcfg.flags.launches.shell import Command, Word
from kernelcfg.flags.launches.spans import Cursor, Spans, data_spans

__all__ = [
    "Found",
    "Note",
    "Notice",
    "Spans",
    "data_spans",
    "exec_words",
    "from_shell",
    "from_words",
    "image_note",
    "runs_program",
    "starts_launch",
]

_STARTERS = frozenset({"dumb-init", "tini", "catatonit"})
"""Init programs that start the words after their options (and a ``--``)."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=", re.ASCII)
_WRAPPERS = frozenset({"exec", "nohup", "time", "command", "sudo", "nice", "stdbuf", "builtin"})
"""Commands that run the words after them (their own options are not followed)."""
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{"})
"""Shell words before a command that are no program (``until vllm serve …; do``)."""
_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "rye", "hatch", "conda", "mamba", "pixi"})
"""Tools whose ``run`` runs the words after it (after its own options)."""
_LAUNCHERS = frozenset(
    {
        "srun", "salloc", "mpirun", "mpiexec", "timeout", "taskset", "numactl", "ionice",
        "chrt", "setsid", "flock", "gosu", "su-exec", "runuser", "xvfb-run", "ray",
        "micromamba", "apptainer", "singularity", "kubectl", "systemd-run", "caffeinate",
        "accelerate", "torchrun", "with-contenv", "s6-setuidgid", "ssh",
    }
)  # fmt: skip
"""Programs that run a command written after their own options (``srun --gres=gpu:8 vllm
serve …``): the first launch among their words is the launch."""
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})
_ENTRY_POINTS = frozenset({"vllm.entrypoints.openai.api_server"})
"""Modules that ``python -m`` starts vLLM's OpenAI server with (the old entry point)."""
_CONTAINER_TOOLS = frozenset({"docker", "podman", "nerdctl"})
_VALUED = frozenset(
    {
        "-v", "--volume", "-p", "--publish", "-e", "--env", "--env-file", "--name", "--network",
        "--net", "-w", "--workdir", "-u", "--user", "--gpus", "--runtime", "--ipc",
        "--shm-size", "--ulimit", "--mount", "--entrypoint", "-l", "--label", "--device",
        "--cap-add", "--cap-drop", "--security-opt", "--restart", "-m", "--memory", "--cpus",
        "--cpuset-cpus", "--pid", "-h", "--hostname", "--add-host", "--log-driver",
        "--log-opt", "--tmpfs", "--platform", "--pull", "--stop-signal", "--group-add",
        "--dns", "--expose", "--health-cmd", "--cidfile", "--userns", "--uts", "--cgroupns",
        "--memory-swap", "--cpu-shares", "-c", "--volumes-from", "--link", "--device-cgroup-rule",
    }
)  # fmt: skip
"""``docker run`` options that take the next word as their value."""
_EXPANSION = re.compile(r"\$[({A-Za-z_@*0-9#?!-]|\{\{|`|^<[A-Za-z_][\w./:-]*>$")
"""Parts of an exec-form word that something other than vLLM fills in: a shell or
compose variable, Kubernetes' ``$(VAR)``, a Helm or Actions template, a placeholder."""


class Note(NamedTuple):
    """How a launch was read, for the reports (a note: it never fails a run)."""

    code: str
    """A short code (``image-entry-point``, ``build-time-launch``, …)."""
    message: str
    """What to say, on one line."""


@dataclass(frozen=True)
class Notice:
    """A part of a file its reader could not read (a Python file the running interpreter
    cannot parse): the launches written there are not known."""

    path: str
    """The file."""
    line: int
    """The 1-based line of the part."""
    column: int
    """Its 1-based column."""
    code: str
    """A short code (``unparsed-file``)."""
    message: str
    """What was not read, and why."""
    severity: str = "warning"
    """``warning`` when what was not read may hold a launch, else ``info``."""


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
    notes: tuple[Note, ...] = ()
    """How it was read, where that matters to a reader of the report (the arguments of
    an image's entry point, a build-time ``RUN``, a command assembled in a variable)."""


def exec_words(values: Sequence[str], line: int, column: int) -> list[Word]:
    """Words given one by one (a JSON or YAML list: no shell splits or expands them)."""
    return [Word(v, bool(_EXPANSION.search(v)), line, column) for v in values]


def image_note(image: str) -> Note:
    """The note of a launch that is an image's arguments."""
    return Note(
        "image-entry-point",
        f"the arguments of image {image}, whose entry point is vLLM's server (vllm serve); "
        "the line holds only its arguments",
    )


def from_shell(
    text: str,
    path: str,
    first_line: int = 1,
    env: Mapping[str, str] | None = None,
    notes: tuple[Note, ...] = (),
) -> Iterator[Found]:
    """The launches in shell ``text`` (starting on ``first_line``): only the commands
    around a launch's words are read, so a file's size costs little beyond a search;
    launches that follow one another on one logical line are read in one pass."""
    cursor = Cursor(text, first_line)
    for match in images.marker_in_shell().finditer(text):
        command = cursor.command_at(match.start())
        if command is not None:
            yield from from_words(command.words, path, env, problem=_problem(command), notes=notes)


def _problem(command: Command) -> str | None:
    """Why a command cannot be read as written, if it cannot."""
    if command.unbalanced:
        return "a quote is never closed; a shell refuses this line"
    if command.cut:
        return f"more than {MAX_WORDS:,} words; kernelcfg reads at most {MAX_WORDS:,}"
    return None


def from_words(
    words: Sequence[Word],
    path: str,
    env: Mapping[str, str] | None = None,
    *,
    problem: str | None = None,
    notes: tuple[Note, ...] = (),
) -> Iterator[Found]:
    """The launch one command's words make, if they make one: after variables set for
    it, wrappers (``exec``, ``nohup``, ``env``, ``uv run`` …) and shell keywords
    (``until``, ``do``), ``vllm serve``, ``python -m
    vllm.entrypoints.openai.api_server``, ``docker run … IMAGE ARGS`` for an image whose
    entry point is vLLM's (:mod:`.images`), the command of a launcher (``srun``,
    ``timeout``, ``docker run IMAGE CMD``), or a shell's ``-c`` script holding one."""
    given = dict(env or {})
    at = _past_prefixes(words, given)
    rest = words[at:]
    if not rest:
        return
    program = rest[0].text.rsplit("/", 1)[-1]
    launch = _launch(program, rest)
    if launch is not None:
        argv, made_of, place, note = launch
        unresolved = list(dict.fromkeys(w.text for w in made_of if w.unresolved))
        found_notes = (*notes, note) if note else notes
        yield Found(path, place.line, place.column, argv, given, unresolved, problem, found_notes)
        return
    if program in _SHELLS:
        script = _script(rest)
        if script is not None:
            yield from from_shell(script.text, path, script.line, given, notes)
        return
    inner = _command_of(program, rest)
    if inner:
        yield from from_words(inner, path, given, problem=problem, notes=notes)


_PROGRAM_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/")


def runs_program(words: Sequence[Word]) -> bool:
    """Whether a container's arguments are a command of their own, not the server's
    arguments: a launch, a shell, Python, a script (``start.sh``) or a system program
    (``/bin/bash``) — an image's entry point is then overridden or the image is used as a
    base (``rocm/vllm-dev`` with ``command: /bin/bash``)."""
    if not words:
        return False
    text = words[0].text
    program = text.rsplit("/", 1)[-1]
    if starts_launch(words, 0) or program.startswith("python"):
        return True
    return text.endswith((".sh", ".py")) or text.startswith(_PROGRAM_DIRS)


def starts_launch(words: Sequence[Word], at: int) -> bool:
    """Whether a launch (or a shell that may run one) begins at ``words[at]``."""
    program = words[at].text.rsplit("/", 1)[-1]
    following = [w.text for w in words[at + 1 : at + 3]]
    if program == "vllm":
        return following[:1] == ["serve"]
    if program.startswith("python"):
        return following[:1] == ["-m"] and following[1:2] != [] and following[1] in _ENTRY_POINTS
    return program in _SHELLS


def _past_prefixes(words: Sequence[Word], env: dict[str, str]) -> int:
    """Where the command proper starts, past ``VAR=value`` words (added to ``env``),
    wrappers and shell keywords."""
    at = 0
    while at < len(words):
        text = words[at].text
        assigned = _ASSIGNMENT.match(text)
        if assigned:
            env[text[: assigned.end() - 1]] = text[assigned.end() :]
        elif text in _WRAPPERS or text in _KEYWORDS:
            pass
        elif text.rsplit("/", 1)[-1] in _STARTERS:
            while at + 1 < len(words) and words[at + 1].text.startswith("-"):
                at += 1
        elif text == "env":
            while at + 1 < len(words) and words[at + 1].text.startswith("-"):
                at += 2 if words[at + 1].text in ("-u", "--unset") else 1
        else:
            break
        at += 1
    return at


class _Launch(NamedTuple):
    argv: list[str]
    made_of: Sequence[Word]
    place: Word
    note: Note | None


def _launch(program: str, rest: Sequence[Word]) -> _Launch | None:
    """``vllm serve …`` for a command that launches vLLM's server; ``None`` otherwise."""
    texts = [w.text for w in rest[:3]]
    if program == "vllm" and texts[1:2] == ["serve"]:
        return _Launch(["vllm", *(w.text for w in rest[1:])], rest, rest[0], None)
    if (
        program.startswith("python")
        and texts[1:2] == ["-m"]
        and texts[2:3]
        and (texts[2] in _ENTRY_POINTS)
    ):
        return _Launch(["vllm", "serve", *(w.text for w in rest[3:])], rest, rest[0], None)
    if program in _CONTAINER_TOOLS:
        run = _container_run(rest)
        args = rest[run.image + 1 :] if run is not None else []
        if run is not None and run.entrypoint is None and images.is_server(rest[run.image].text):
            if runs_program(args):
                return None  # a command of its own: read by _command_of
            place = args[0] if args else rest[run.image]
            argv = ["vllm", "serve", *(w.text for w in args)]
            return _Launch(argv, args, place, image_note(rest[run.image].text))
    return None


class _Run(NamedTuple):
    image: int
    """Where the image's name is among the words."""
    entrypoint: Word | None
    """The ``--entrypoint`` given, if one is."""


def _container_run(rest: Sequence[Word]) -> _Run | None:
    """Where ``docker run [OPTIONS] IMAGE`` names its image (``docker container run``,
    ``podman run`` too), and the ``--entrypoint`` it gives."""
    at = 1
    if at < len(rest) and rest[at].text == "container":
        at += 1
    if at >= len(rest) or rest[at].text != "run":
        return None
    at += 1
    entrypoint: Word | None = None
    while at < len(rest):
        text = rest[at].text
        if text == "--":
            at += 1
            break
        if not text.startswith("-") or text == "-":
            break
        option, eq, value = text.partition("=")
        if option == "--entrypoint":
            given = rest[at + 1] if not eq and at + 1 < len(rest) else None
            entrypoint = given or Word(value, rest[at].unresolved, rest[at].line, rest[at].column)
        at += 2 if not eq and option in _VALUED else 1
    if at >= len(rest):
        return None
    if not images.is_server(rest[at].text):  # an option kernelcfg does not know took a value?
        later = next((i for i in range(at + 1, len(rest)) if images.is_server(rest[i].text)), None)
        at = later if later is not None else at
    return _Run(at, entrypoint)


def _command_of(program: str, rest: Sequence[Word]) -> list[Word]:
    """The command a launcher runs (``srun … CMD``, ``docker run IMAGE CMD``, ``docker
    run --entrypoint X IMAGE ARGS``, ``uv run CMD``); empty when it runs none we read."""
    if program in _CONTAINER_TOOLS:
        run = _container_run(rest)
        if run is None:
            return []
        args = list(rest[run.image + 1 :])
        return [run.entrypoint, *args] if run.entrypoint else args
    runs = program in _RUNNERS and len(rest) > 1 and rest[1].text == "run"
    if program in _LAUNCHERS or runs:
        for at in range(1, len(rest)):
            if starts_launch(rest, at):
                return list(rest[at:])
    return []


def _script(rest: Sequence[Word]) -> Word | None:
    """The script of ``sh -c SCRIPT`` (options such as ``-e`` or ``-x`` may come first)."""
    for place, word in enumerate(rest[1:], 1):
        if not word.text.startswith("-"):
            return None
        if "c" in word.text[1:] and not word.text.startswith("--"):
            return rest[place + 1] if place + 1 < len(rest) else None
    return None
