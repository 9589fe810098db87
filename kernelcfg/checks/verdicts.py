"""What a constraint check answers and what it looks at: a :class:`Verdict` on one
backend value, and the :class:`Context` it is given in (the target, the release, the
model's quantisation and architectures, the environment, expert parallelism), with the
verdicts already given in an equal context.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any, Literal

from kernelcfg.base.answers import Answers
from kernelcfg.base.problems import Problem
from kernelcfg.targets.presets import Target
from kernelcfg.vllm.releases import catalogue

__all__ = ["SEVERITY", "Context", "Status", "Verdict"]

Status = Literal["runs", "cannot-run", "falls-back", "depends", "no-effect"]


SEVERITY: dict[str, Literal["error", "warning", "info"]] = {
    "cannot-run": "error",
    "falls-back": "warning",
    "depends": "warning",
    "no-effect": "info",
}
"""How each verdict is reported as a problem (``runs`` is not one)."""


@dataclass(frozen=True)
class Verdict:
    """Whether one value can run on one target, and why."""

    field: str
    """The field (``moe_backend``, ...)."""
    value: str
    """The value judged."""
    status: Status
    """``runs``, ``cannot-run`` (vLLM refuses), ``falls-back`` (vLLM ignores it with a
    warning), ``depends`` (on something unknown), ``no-effect`` (nothing reads it)."""
    reason: str
    """One line that names the requirement and what the target has."""
    unknowns: tuple[str, ...] = ()
    """What could not be checked offline."""
    source: str = ""
    """Where in vLLM the rule comes from."""
    quantisation_only: bool = False
    """``depends`` only on the model's quantisation, which was not given: a note."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "field": self.field,
            "value": self.value,
            "verdict": self.status,
            "reason": self.reason,
            "unknowns": list(self.unknowns),
            "source": self.source,
            "quantisation_only": self.quantisation_only,
        }

    def problem(self, message: str | None = None) -> Problem | None:
        """The problem this verdict stands for (``message`` default: the reason);
        ``None`` for ``runs``."""
        severity = SEVERITY.get(self.status)
        if severity is None:
            return None
        if self.quantisation_only:
            severity = "info"
        return Problem(severity, f"backend-{self.status}", self.field, message or self.reason)

    @cached_property
    def named_problem(self) -> Problem | None:
        """:meth:`problem` with a message that names the field and value first
        (``moe_backend='x': reason``), as ``resolve`` reports it; made once per verdict."""
        return self.problem(f"{self.field}={self.value!r}: {self.reason}")


@dataclass(frozen=True)
class Context:
    """What a verdict looks at besides the value."""

    target: Target
    """The platform."""
    version: str
    """The vLLM release."""
    scheme: str | None = None
    """The quantisation scheme, when known."""
    possible: tuple[str, ...] | None = None
    """The schemes the model may have, when the method narrows them (``fp8``)."""
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """The engine's environment."""
    architectures: tuple[str, ...] | None = None
    """The model's architectures, when known."""
    expert_parallel: bool = False
    """Whether ``--enable-expert-parallel`` is on."""
    all2all_backend: str | None = None
    """The all2all backend, when it matters."""
    layers: tuple[str, ...] | None = None
    """The kinds of layer the known model has that a backend field is read in (``moe``);
    ``None`` when the model is not known."""

    @property
    def key(self) -> tuple[object, ...]:
        """Everything a verdict reads here (of the environment, only the variables a
        rule looks at): equal keys, equal verdicts."""
        return (
            self.target,
            self.version,
            self.scheme,
            self.possible,
            tuple(map(self.env.get, _env_names())),
            self.architectures,
            self.expert_parallel,
            self.all2all_backend,
            self.layers,
        )

    @property
    def verdicts(self) -> dict[tuple[object, ...], Verdict]:
        """The verdicts already given in an equal context (found by one lookup of the
        key per context, however many values are checked in it). Kept on the instance
        by hand: ``functools.cached_property`` takes a lock on Python 3.11, and a
        context lives for one line."""
        found: dict[tuple[object, ...], Verdict] | None = self.__dict__.get("_verdicts")
        if found is None:
            key = self.key
            found = _VERDICTS.find(key)
            if found is None:
                found = {}
                _VERDICTS.keep(key, found)
            object.__setattr__(self, "_verdicts", found)
        return found


@cache
def _env_names() -> tuple[str, ...]:
    """Every environment variable a rule looks at."""
    names: set[str] = set()
    for table in catalogue()["fields"].values():
        for rule in table["values"].values():
            for part in [rule, *rule.get("per_scheme", {}).values()]:
                names.update(part.get("env", {}))
                names.update(part.get("env_off", {}))
    return tuple(sorted(names))


_VERDICTS: Answers[tuple[object, ...], dict[tuple[object, ...], Verdict]] = Answers(4096)
"""The verdicts given in each context (by its key), by field, value and schemes."""
