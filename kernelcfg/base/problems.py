"""Problems found while reading or resolving flags, and how they map to exit codes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from kernelcfg.base.bounded import cut, one_line
from kernelcfg.base.errors import KernelcfgError
from kernelcfg.base.json_text import compact

__all__ = [
    "EXIT_BUG",
    "EXIT_INVALID",
    "EXIT_IOERR",
    "EXIT_OK",
    "EXIT_USAGE",
    "RUNS_INSTEAD",
    "Problem",
    "exit_code",
]

RUNS_INSTEAD = "runs-instead"
"""The code of the note naming what runs instead, after a refusal worded as vLLM words
it (a note shown on stderr right after its refusal, not among the table's notes)."""

EXIT_OK = 0
"""Valid (warnings allowed unless strict)."""
EXIT_INVALID = 1
"""vLLM would refuse it while building or starting the engine, or the target cannot run it."""
EXIT_USAGE = 2
"""vLLM would refuse (or crash on) it while reading its arguments."""
EXIT_BUG = 70
"""A bug in kernelcfg (``EX_SOFTWARE``): never a verdict about the input."""
EXIT_IOERR = 74
"""Standard output could not be written (``EX_IOERR``: a full disk, a device error)."""

_LONGEST = 2000
"""Messages are cut there: a user's 10 MB value is not echoed whole."""

_FIELD = 200
"""Fields are cut there: an unknown option of 1 MiB is not kept whole as its field."""

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Problem:
    """One finding, as it appears in the ``problems`` list of the JSON output."""

    severity: Severity
    """``error``, ``warning`` or ``info``."""
    code: str
    """A stable, kebab-case identifier of the kind of problem."""
    field: str | None
    """The field or flag it concerns, when there is one."""
    message: str
    """One line, in plain words, that names the value and what is allowed."""
    exit_code: int = EXIT_INVALID
    """For errors: the exit code it implies (1 or 2)."""

    def __post_init__(self) -> None:
        message = self.message
        if len(message) > _LONGEST or not message.isprintable():
            if len(message) > _LONGEST:
                message = message[:_LONGEST] + f"… (message cut: {len(message):,} characters)"
            object.__setattr__(self, "message", one_line(message))
        field = self.field
        if field is not None and (len(field) > _FIELD or not field.isprintable()):
            object.__setattr__(self, "field", one_line(cut(field, _FIELD)))

    @classmethod
    def from_error(cls, error: KernelcfgError) -> Problem:
        """The problem an exception stands for."""
        return cls("error", error.code, error.field, error.message, error.exit_code)

    def as_dict(self) -> dict[str, str | None]:
        """The JSON form."""
        return {
            "severity": self.severity,
            "code": self.code,
            "field": self.field,
            "message": self.message,
        }

    @property
    def json(self) -> str:
        """:meth:`as_dict` as compact JSON, encoded once: the problems the verdict and
        walk caches hand out recur on many batch lines. Kept on the instance by hand
        (``functools.cached_property`` takes a lock on Python 3.11)."""
        found: str | None = self.__dict__.get("_json")
        if found is None:
            found = compact(self.as_dict())
            object.__setattr__(self, "_json", found)
        return found


def exit_code(problems: Iterable[Problem], *, strict: bool = False) -> int:
    """0, 1 or 2 for a list of problems; with ``strict``, a warning counts as 1."""
    code = EXIT_OK
    for problem in problems:
        if problem.severity == "error":
            code = max(code, problem.exit_code)
        elif problem.severity == "warning" and strict:
            code = max(code, EXIT_INVALID)
    return code
