"""Answers already worked out, kept for the questions a batch asks line after line.

One small, bounded cache type for the memos whose keys need building by hand: it keeps
the first ``limit`` answers and then stops keeping, and it keeps none whose question
holds more than ``text`` characters of text (a batch line may hold a mebibyte), so a
process never grows past it and no answer is ever stale.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["LARGE", "SMALL", "Answers", "forget_all", "small"]

SMALL = 1024
"""The most characters of text a kept question holds, unless its memo says otherwise.
The batch memos key answers by a line's words (and the checks by environment values);
without a bound, 4,096 lines of a mebibyte kept would be gigabytes."""

LARGE = 16 * 1024
"""The bound of the memos whose questions hold what a walk reads of a whole platform
(the engine's environment, the installed libraries, a model's path): a few hundred to a
few thousand questions, never more than a few tens of mebibytes in all."""


def small(key: object, limit: int = SMALL) -> bool:
    """Whether ``key`` holds at most ``limit`` characters of text (its strings, also
    inside tuples)."""
    return _text(key) <= limit


def _text(value: object) -> int:
    if type(value) is not tuple:
        return len(value) if isinstance(value, str) else 0
    total = 0
    stack = [value]  # nested tuples without recursion: a fifth less work per question
    while stack:
        for item in stack.pop():
            if isinstance(item, str):
                total += len(item)
            elif type(item) is tuple:
                stack.append(item)
    return total


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Answers(Generic[K, V]):
    """A bounded map from a question to its answer."""

    def __init__(self, limit: int, *, text: int = SMALL) -> None:
        self._limit = limit
        self._text = text
        self._kept: dict[K, V] = {}
        _EVERY.add(self)

    def forget(self) -> None:
        """Drop every answer kept."""
        self._kept.clear()

    def find(self, key: K) -> V | None:
        """The answer kept for ``key``, if any."""
        return self._kept.get(key)

    def keep(self, key: K, value: V) -> None:
        """Keep ``value`` as the answer for ``key``, while there is room and the key
        holds at most ``text`` characters of text."""
        if len(self._kept) < self._limit and _text(key) <= self._text:
            self._kept[key] = value

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The answer kept for ``key``, else ``make()`` (kept as :meth:`keep` keeps)."""
        found = self._kept.get(key)
        if found is None:
            found = make()
            self.keep(key, found)
        return found


_EVERY: weakref.WeakSet[Answers[Any, Any]] = weakref.WeakSet()
"""Every memo of the process, for :func:`forget_all`."""


def forget_all() -> None:
    """Drop the answers every memo keeps: what a fresh process knows. A test compares a
    warm process's answers with a fresh one's, so a memo whose key misses an input shows."""
    for memo in list(_EVERY):
        memo.forget()
