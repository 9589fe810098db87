"""``kernelcfg scan``'s report: a report entry and a JSON row per launch (or per file, or
part of one, that could not be read), credentials masked, the exit code under the run's
policy, and the notices that say nothing of a launch's correctness gathered once.

Masks (:mod:`..base.secrets`): the words of a launch (``--api-key sk-…``, ``HF_TOKEN=…``)
and its environment's values, in every format. Under ``--fail-on never`` the exit code
is 0 whatever was found (70, a kernelcfg bug, stands), and the report says what it would
have been. In GitHub annotations, the notices of :data:`SUMMARISED` codes (a model not in
the local cache, how a launch was read) are one annotation each, naming the places, not
one per launch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelcfg.base.bounded import cut
from kernelcfg.base.problems import EXIT_BUG, Problem
from kernelcfg.base.secrets import masked_env, masked_words
from kernelcfg.commands.scan import Checked
from kernelcfg.output import render
from kernelcfg.output.reports import Entry

__all__ = ["SUMMARISED", "Report", "report"]

SUMMARISED = frozenset(
    {
        "model-not-local",
        "hub-cache-unknown",
        "image-entry-point",
        "assembled-launch",
        "helm-template",
        "config-not-read",
    }
)
"""Notices about what a run could read, not about a launch's correctness: one GitHub
annotation each, not one per launch."""
_PLACES = 8


@dataclass
class Report:
    """A scan, ready to write."""

    entries: list[Entry] = field(default_factory=list)
    """One per launch, file or part of a file."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    """The JSON rows."""
    worst: int = 0
    """The worst exit code found."""
    exit_code: int = 0
    """The exit code under the run's policy."""
    never: bool = False
    """Whether the run said ``--fail-on never``."""
    files: int = 0
    """How many files (and standard inputs) were read."""

    def summarised(self) -> list[Entry]:
        """The entries for GitHub: the notices of :data:`SUMMARISED` codes taken out,
        then one entry per code naming where it was said, and the policy's word."""
        gathered: dict[str, list[tuple[Entry, dict[str, Any]]]] = {}
        out: list[Entry] = []
        for entry in self.entries:
            kept = []
            for problem in entry.problems:
                if problem["severity"] == "info" and problem["code"] in SUMMARISED:
                    gathered.setdefault(problem["code"], []).append((entry, problem))
                else:
                    kept.append(problem)
            if kept:
                out.append(Entry(entry.name, entry.exit_code, kept, entry.detail,
                                 entry.file, entry.line, entry.column))  # fmt: skip
        for code, said in gathered.items():
            out.append(Entry("summary", 0, [_gathered(code, said)]))
        if self.never and self.worst:
            out.append(Entry("summary", 0, [self.policy_note()]))
        return out

    def policy_note(self) -> dict[str, Any]:
        """What ``--fail-on never`` did to the exit code."""
        return Problem(
            "info",
            "fail-on-never",
            None,
            f"--fail-on never: exit 0; the worst launch would exit {self.worst}",
            0,
        ).as_dict()


def _gathered(code: str, said: list[tuple[Entry, dict[str, Any]]]) -> dict[str, Any]:
    """One notice for every launch that had it."""
    places = [entry.name for entry, _ in said]
    shown = ", ".join(places[:_PLACES]) + (
        f" and {len(places) - _PLACES:,} more" if len(places) > _PLACES else ""
    )
    first = said[0][1]["message"]
    count = f"{len(said):,} launch{'es' if len(said) > 1 else ''}"
    return Problem("info", code, None, f"{count} ({shown}): {first}", 0).as_dict()


def report(checked: Sequence[Checked], skipped: Sequence[Problem], *, strict: bool,
           never: bool, files: int) -> Report:  # fmt: skip
    """The report of a scan: ``checked`` launches, ``skipped`` files' warnings."""
    out = Report(never=never, files=files)
    for item in checked:
        entry, row = _entry(item, strict=strict)
        out.worst = max(out.worst, entry.exit_code)
        out.entries.append(entry)
        out.rows.append(row)
    for problem in skipped:
        code = 1 if strict else 0
        out.worst = max(out.worst, code)
        out.entries.append(Entry("scan", code, [problem.as_dict()]))
        out.rows.append(_row(None, None, code, [problem.as_dict()], "", "scan"))
    out.exit_code = out.worst if not never or out.worst == EXIT_BUG else 0
    return out


def _entry(checked: Checked, *, strict: bool) -> tuple[Entry, dict[str, Any]]:
    """A report entry and a JSON row for one launch (or one unreadable file)."""
    result = checked.result
    code = render.exit_code_under(result, strict=strict, never=False)
    problems = render.as_data(result, strict=strict)["problems"]
    problems += [note.as_dict() for note in checked.notes]
    if checked.found is None and problems and problems[0]["severity"] != "error":
        code = 1 if strict and problems[0]["severity"] == "warning" else 0
    found = checked.found
    line = found.line if found else checked.line
    column = found.column if found else checked.column
    name = f"{checked.path}:{line}" if line else checked.path
    argv = masked_words([cut(word, 1000) for word in found.argv]) if found else None
    entry = Entry(name, code, problems, cut(" ".join(argv or []), 4000), checked.path, line,
                  column)  # fmt: skip
    return entry, _row(checked, argv, code, problems, entry.detail, name)


def _row(
    checked: Checked | None,
    argv: list[str] | None,
    code: int,
    problems: list[dict[str, Any]],
    command: str,
    name: str,
) -> dict[str, Any]:
    """One JSON row."""
    found = checked.found if checked else None
    return {
        "where": name,
        "file": checked.path if checked else "",
        "line": found.line if found else (checked.line if checked else None),
        "column": found.column if found else (checked.column if checked else None),
        "argv": argv,
        "env": masked_env(found.env) if found else None,
        "unresolved": masked_words(found.unresolved) if found else None,
        "exit_code": code,
        "problems": problems,
        "command": command,
    }
