"""``kernelcfg scan``: every vLLM launch written in files, resolved for the run's target.

A launch is resolved as vLLM reads it: every word after ``vllm serve`` is vLLM's, so a
kernelcfg option written there (``--device b200``) is refused as vLLM refuses an option it
lacks, never a change of the target the run names. Words only the run can fill in
(``$MODEL``, ``{{ .Values.x }}``, ``${{ matrix.model }}``) take the values given
(``--set``, ``--env-file``); the rest are left out with their option, and named in a
warning (words that forward a script's own arguments, ``"$@"``, in a note). A
``--config FILE`` written in a launch names a file of vLLM's container: it is read only
when it resolves inside the scanned file's repository (:mod:`..flags.launches.repository`),
else left out with a note. A file that cannot be read, or whose reader fails, is its own
finding; the other files are still checked.
"""

from __future__ import annotations

import dataclasses
import os
import re
import traceback as traceback_mod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kernelcfg.base.answers import Answers
from kernelcfg.base.bounded import shown
from kernelcfg.base.errors import KernelcfgError
from kernelcfg.base.problems import EXIT_BUG, Problem, Severity
from kernelcfg.commands import pipeline
from kernelcfg.commands.scan_files import Source
from kernelcfg.engine.resolution import Resolution
from kernelcfg.flags.launches import Found, Images, Notice, images, read, read_text, repository

__all__ = ["MAX_PER_FILE", "Checked", "check_files", "fill"]

MAX_PER_FILE = 1000
"""The most launches of one file that are read and resolved; more is a warning."""


@dataclass
class Checked:
    """One launch resolved, or one file (or part of one) that could not be read."""

    path: str
    """The file."""
    found: Found | None
    """The launch (``None`` for a file, or a part of one, that could not be read)."""
    result: Resolution | pipeline.Failure
    """What it resolved to (a file's failure, for a file that could not be read)."""
    argv: list[str] = field(default_factory=list)
    """The words resolved: the launch's, values filled in, unresolved words left out."""
    traceback: str | None = None
    """A kernelcfg bug's traceback (the file's reader failed)."""
    line: int | None = None
    """The line of a part of a file that could not be read (the launch's own, else)."""
    column: int | None = None
    """Its column."""
    notes: list[Problem] = field(default_factory=list)
    """What the report says about how the launch was read, when it resolved to a failure
    (a resolution carries them among its problems)."""


def check_files(
    sources: Sequence[Source],
    context: Sequence[str],
    values: Mapping[str, str],
    named_images: Images | None = None,
) -> Iterator[Checked]:
    """Each launch of each file, resolved under ``context`` (the run's target options)
    with ``values`` for the words the run fills in; ``named_images`` are taken as vLLM's
    beside vLLM's own."""
    run = _Run(tuple(context), values)
    with images.using(named_images or Images()):
        for source in sources:
            yield from _check_file(source, run)


@dataclass(frozen=True)
class _Run:
    """What every launch of one scan is resolved with."""

    context: tuple[str, ...]
    """The run's target options."""
    values: Mapping[str, str]
    """Values of the words the run fills in."""
    request: pipeline.Request = field(default_factory=lambda: pipeline.Request(serve_is_vllms=True))
    """Every word after ``vllm serve`` is vLLM's."""
    memo: _Memo = field(default_factory=lambda: Answers(1024))
    """What launches resolved to, by their words: a repository repeats the same launch
    in many places (a docs page of 1,000 examples: 5.2 s -> 1.2 s)."""
    by_root: Answers[str, pipeline.Request] = field(default_factory=lambda: Answers(64))
    """:attr:`request` for each repository a launch's model paths must lie in, made
    once: a request keeps what it read of the environment."""


def _items(source: Source) -> Iterator[Found | Notice]:
    """What a source's reader finds in it."""
    if source.text is not None:
        from kernelcfg.flags.launches import kind_of_text

        yield from read_text(source.text, source.path, source.kind or kind_of_text(source.text))
    else:
        yield from read(source.path, source.kind)


def _check_file(source: Source, run: _Run) -> Iterator[Checked]:
    """One file's launches (at most :data:`MAX_PER_FILE`), or why it cannot be read."""
    path = source.path
    count = 0
    try:
        for item in _items(source):
            if isinstance(item, Notice):
                yield _notice(item)
                continue
            count += 1
            if count > MAX_PER_FILE:
                break
            yield _check(item, run, source)
    except KernelcfgError as exc:
        problem = Problem.from_error(exc)
        if source.walked:  # found by walking a folder: said, not refused
            problem = dataclasses.replace(problem, severity="warning", exit_code=0)
        yield Checked(path, None, pipeline.Failure(problem))
    except (RecursionError, MemoryError, UnicodeError, ValueError) as exc:
        yield Checked(path, None, pipeline.Failure(_unreadable(path, exc)))
    except Exception as exc:  # a reader's bug: this file reports it, the others go on
        problem = Problem("error", "internal-error", None, f"kernelcfg bug: {exc!r}", EXIT_BUG)
        trace = "".join(traceback_mod.format_exception(exc))
        yield Checked(path, None, pipeline.Failure(problem, traceback=trace), traceback=trace)
    if count > MAX_PER_FILE:
        note = Problem(
            "warning",
            "launches-not-checked",
            None,
            f"{shown(path)} holds more than {MAX_PER_FILE:,} launches: the first "
            f"{MAX_PER_FILE:,} were checked, the rest of the file was not read",
        )
        yield Checked(path, None, pipeline.Failure(note))


def _notice(notice: Notice) -> Checked:
    """A part of a file its reader could not read."""
    severity: Severity = "warning" if notice.severity == "warning" else "info"
    problem = Problem(severity, notice.code, None, notice.message, 0)
    return Checked(
        notice.path, None, pipeline.Failure(problem), line=notice.line, column=notice.column
    )


def _unreadable(path: str, exc: BaseException) -> Problem:
    """The problem of a file its reader cannot take."""
    from kernelcfg.base.bounded import reason

    return Problem("error", "unreadable-file", None, f"{shown(path)}: {reason(exc)}", 2)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FORWARDED = re.compile(r"\$(?:[@*]|\{(?:[@*]|[A-Za-z_]\w*\[[@*]\])\})")
"""Words that forward a script's own arguments or an array's words (``"$@"``)."""


def _check(found: Found, run: _Run, source: Source) -> Checked:
    """One launch resolved; its notes, unreadable quoting and unfilled words as
    problems."""
    # the shell (or Kubernetes) fills in what the file itself sets; the run's values win
    argv, left = fill(found.argv, found.unresolved, {**found.env, **run.values})
    argv, config_note = _contained_config(argv, source)
    env = [f"--env={k}={v}" for k, v in found.env.items() if _NAME.fullmatch(k)]
    result = _resolved((*run.context, *env, "--", *argv), run, _root(source))
    notes = _notes(found, left, config_note)
    if notes and isinstance(result, Resolution):
        result = dataclasses.replace(result, problems=[*notes, *result.problems])
        notes = []
    elif found.problem:
        result, notes = pipeline.Failure(notes[0]), notes[1:]
    return Checked(found.path, found, result, argv, notes=notes)


def _notes(found: Found, left: list[str], config_note: Problem | None) -> list[Problem]:
    """What the report says about how a launch was read."""
    notes: list[Problem] = []
    if found.problem:
        notes.append(Problem("error", "unreadable-launch", None, found.problem, 2))
    notes += [Problem("info", note.code, None, note.message, 0) for note in found.notes]
    forwarded = [w for w in left if _FORWARDED.search(w)]
    unknown = [w for w in left if w not in forwarded]
    if forwarded:
        notes.append(
            Problem(
                "info",
                "forwarded-words",
                None,
                f"{', '.join(shown(w, 60) for w in forwarded[:10])} forwards words known "
                "only when it runs (the script's own arguments): judged on the words written",
                0,
            )
        )
    if unknown:
        notes.append(
            Problem(
                "warning",
                "unresolved-words",
                None,
                f"judged without {', '.join(shown(w, 60) for w in unknown[:10])}"
                + (f" and {len(unknown) - 10:,} more" if len(unknown) > 10 else "")
                + ": the run fills them in (give their values with --set NAME=VALUE or "
                "--env-file)",
            )
        )
    if config_note is not None:
        notes.append(config_note)
    return notes


def _contained_config(argv: list[str], source: Source) -> tuple[list[str], Problem | None]:
    """``argv`` with its ``--config FILE`` read only from inside the scanned file's
    repository: the file's real path when it lies there, else the option left out (with
    a note). A name that is no YAML file stays, for vLLM's refusal."""
    if "--config" not in argv:
        return argv, None
    at = argv.index("--config")
    if at + 1 >= len(argv) or not argv[at + 1].endswith((".yaml", ".yml")):
        return argv, None
    written = argv[at + 1]
    if source.text is not None:
        root = os.getcwd()
        folders = [root]
    else:
        root = repository.root_of(source.path)
        folders = [root, os.path.dirname(os.path.abspath(source.path))]
    for folder in folders:
        found = repository.resolve(written, folder, root)
        if found is not None:
            return [*argv[: at + 1], found, *argv[at + 2 :]], None
    outside = not all(repository.inside(os.path.join(f, written), root) for f in folders)
    why = "outside the repository" if outside else "no such file in the repository"
    note = Problem(
        "info",
        "config-not-read",
        "config",
        f"--config {shown(written)}: not read: {why} ({shown(root)}); it names a file of "
        "vLLM's container, so the launch is judged without its options",
        0,
    )
    return [*argv[:at], *argv[at + 2 :]], note


_Memo = Answers[tuple[str, ...], Resolution | pipeline.Failure]


def _root(source: Source) -> str:
    """The folder a scanned launch's model paths must lie in: the file's repository
    (standard input: the current folder)."""
    return os.getcwd() if source.text is not None else repository.root_of(source.path)


def _resolved(words: tuple[str, ...], run: _Run, root: str) -> Resolution | pipeline.Failure:
    """``words`` resolved, reading model files only inside ``root``, or what the same
    words resolved to earlier in this run (the files it reads do not change while it
    runs)."""
    key = (root, *words)
    found = run.memo.find(key)
    if found is not None:
        return found
    request = run.by_root.get(root, lambda: dataclasses.replace(run.request, read_root=root))
    result = pipeline.resolve_words(words, request)
    run.memo.keep(key, result)
    return result


_REFERENCE = re.compile(
    r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)|\$\(([A-Za-z_]\w*)\)"
    r"|\$\{\{\s*([\w.-]+)\s*\}\}|\{\{-?\s*\.Values\.([\w.]+)(?:\s*\|\s*quote)?\s*-?\}\}"
)
"""``$NAME``, ``${NAME}``, ``$(NAME)`` (Kubernetes), ``${{ matrix.model }}`` (Actions),
``{{ .Values.model }}`` (Helm, ``| quote`` too): what ``--set NAME=VALUE`` fills in."""


def fill(
    argv: Sequence[str], unresolved: Sequence[str], values: Mapping[str, str]
) -> tuple[list[str], list[str]]:
    """``argv`` with the unresolved words whose variables ``values`` holds filled in;
    the words still unresolved left out (with the option they are the value of), and
    listed."""
    pending = set(unresolved)
    out: list[str] = []
    left: list[str] = []
    for word in argv:
        if word not in pending:
            out.append(word)
            continue
        filled = _substitute(word, values)
        if filled is not None:
            out.append(filled)
            continue
        left.append(word)
        if out and out[-1].startswith("-") and "=" not in out[-1] and len(out) > 2:
            out.pop()  # the option this word is the value of
    return out, left


def _substitute(word: str, values: Mapping[str, str]) -> str | None:
    """``word`` with every reference :data:`_REFERENCE` knows replaced from ``values``;
    ``None`` when one is not there or another expansion remains."""
    missing = False
    if not _REFERENCE.search(word):  # nothing --set can fill in (a Python expression)
        return None

    def value(match: re.Match[str]) -> str:
        nonlocal missing
        name = next(group for group in match.groups() if group is not None)
        if name not in values:
            missing = True
            return ""
        return values[name]

    filled = _REFERENCE.sub(value, word)
    if missing or "$" in filled or "{{" in filled or "`" in filled:
        return None
    return filled
