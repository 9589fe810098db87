"""``kernelcfg scan``: every vLLM launch written in files, resolved for the run's target.

A launch is resolved as vLLM reads it: every word after ``vllm serve`` is vLLM's, so a
kernelcfg option written there (``--device b200``) is refused as vLLM refuses an option it
lacks, never a change of the target the run names. Words only the run can fill in
(``$MODEL``, ``{{ .Values.x }}``) take the values given (``--set``, ``--env-file``); the
rest are left out with their option, and named in a warning. A file that cannot be read,
or whose reader fails, is its own finding; the other files are still checked.
"""

from __future__ import annotations

import dataclasses
import re
import traceback as traceback_mod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kernelcfg.base.answers import Answers
from kernelcfg.base.bounded import shown
from kernelcfg.base.errors import KernelcfgError
from kernelcfg.base.problems import EXIT_BUG, Problem
from kernelcfg.commands import pipeline
from kernelcfg.engine.resolution import Resolution
from kernelcfg.flags.launches import Found, launches_in

__all__ = ["MAX_PER_FILE", "Checked", "check_files", "fill"]

MAX_PER_FILE = 1000
"""The most launches of one file that are read and resolved; more is a warning."""


@dataclass
class Checked:
    """One launch resolved, or one file that could not be read."""

    path: str
    """The file."""
    found: Found | None
    """The launch (``None`` for a file that could not be read)."""
    result: Resolution | pipeline.Failure
    """What it resolved to (a file's failure, for a file that could not be read)."""
    argv: list[str] = field(default_factory=list)
    """The words resolved: the launch's, values filled in, unresolved words left out."""
    traceback: str | None = None
    """A kernelcfg bug's traceback (the file's reader failed)."""


def check_files(
    paths: Sequence[str],
    context: Sequence[str],
    values: Mapping[str, str],
) -> Iterator[Checked]:
    """Each launch of each file, resolved under ``context`` (the run's target options)
    with ``values`` for the words the run fills in."""
    run = _Run(tuple(context), values)
    for path in paths:
        yield from _check_file(path, run)


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


def _check_file(path: str, run: _Run) -> Iterator[Checked]:
    """One file's launches (at most :data:`MAX_PER_FILE`), or why it cannot be read."""
    count = 0
    try:
        for found in launches_in(path):
            count += 1
            if count > MAX_PER_FILE:
                break
            yield _check(found, run)
    except KernelcfgError as exc:
        yield Checked(path, None, pipeline.Failure(Problem.from_error(exc)))
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


def _unreadable(path: str, exc: BaseException) -> Problem:
    """The problem of a file its reader cannot take."""
    from kernelcfg.base.bounded import reason

    return Problem("error", "unreadable-file", None, f"{shown(path)}: {reason(exc)}", 2)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check(found: Found, run: _Run) -> Checked:
    """One launch resolved; its unreadable quoting or unfilled words as problems."""
    # the shell (or Kubernetes) fills in what the file itself sets; the run's values win
    argv, left = fill(found.argv, found.unresolved, {**found.env, **run.values})
    env = [f"--env={k}={v}" for k, v in found.env.items() if _NAME.fullmatch(k)]
    result = _resolved((*run.context, *env, "--", *argv), run)
    notes: list[Problem] = []
    if found.problem:
        notes.append(Problem("error", "unreadable-launch", None, found.problem, 2))
    if left:
        notes.append(
            Problem(
                "warning",
                "unresolved-words",
                None,
                f"judged without {', '.join(shown(w, 60) for w in left[:10])}"
                + (f" and {len(left) - 10:,} more" if len(left) > 10 else "")
                + ": the run fills them in (give their values with --set NAME=VALUE or "
                "--env-file)",
            )
        )
    if notes and isinstance(result, Resolution):
        result = dataclasses.replace(result, problems=[*notes, *result.problems])
    elif notes:
        result = pipeline.Failure(notes[0]) if found.problem else result
    return Checked(found.path, found, result, argv)


_Memo = Answers[tuple[str, ...], Resolution | pipeline.Failure]


def _resolved(words: tuple[str, ...], run: _Run) -> Resolution | pipeline.Failure:
    """``words`` resolved, or what the same words resolved to earlier in this run (the
    files it reads do not change while it runs)."""
    found = run.memo.find(words)
    if found is not None:
        return found
    result = pipeline.resolve_words(words, run.request)
    run.memo.keep(words, result)
    return result


_REFERENCE = re.compile(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)|\$\(([A-Za-z_]\w*)\)")


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
    """``word`` with every ``$NAME``, ``${NAME}`` and ``$(NAME)`` replaced from
    ``values``; ``None`` when one is not there or another expansion remains."""
    missing = False

    def value(match: re.Match[str]) -> str:
        nonlocal missing
        name = match.group(1) or match.group(2) or match.group(3)
        if name not in values:
            missing = True
            return ""
        return values[name]

    filled = _REFERENCE.sub(value, word)
    if missing or "$" in filled or "{{" in filled or "`" in filled:
        return None
    return filled
