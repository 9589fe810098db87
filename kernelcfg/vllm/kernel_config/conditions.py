"""The tiny condition language of the release rules: ``a and not b or c``.

Atoms are names the caller provides (``inductor``, ``env.VLLM_USE_OINK_OPS``,
``arch.rdna4``); ``not`` binds tighter than ``and``, ``and`` tighter than ``or``.
There are no parentheses: the rules never need them.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

__all__ = ["evaluate"]

_Clause = tuple[tuple[str, bool], ...]


@cache
def _compile(expr: str) -> tuple[_Clause, ...]:
    """Disjunction of conjunctions of (atom, wanted) pairs."""
    clauses: list[_Clause] = []
    for part in expr.split(" or "):
        terms: list[tuple[str, bool]] = []
        for raw in part.split(" and "):
            words = raw.split()
            wanted = True
            while words and words[0] == "not":
                wanted = not wanted
                words = words[1:]
            if len(words) != 1:
                raise ValueError(f"bad condition {expr!r}")
            terms.append((words[0], wanted))
        clauses.append(tuple(terms))
    return tuple(clauses)


def evaluate(expr: str, atoms: Mapping[str, bool]) -> bool:
    """Whether ``expr`` holds; an atom missing from ``atoms`` is an error."""
    try:
        return any(
            all(atoms[name] == wanted for name, wanted in clause) for clause in _compile(expr)
        )
    except KeyError as exc:
        raise ValueError(f"condition {expr!r} names unknown atom {exc.args[0]!r}") from None
