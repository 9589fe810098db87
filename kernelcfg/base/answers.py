"""Answers already worked out, kept for the questions a batch asks line after line.

One small, bounded cache type for the selection walks (which take their keys from
everything they read): it keeps the first ``limit`` answers and then stops keeping, so a
process never grows past it and no answer is ever stale.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

__all__ = ["SMALL", "Answers", "small"]

SMALL = 1024
"""The most characters of a user's text a kept question may hold. The batch memos key
answers by a line's words (and a check's by environment values), and a line may hold a
mebibyte: without this, 4,096 such lines kept would be gigabytes."""


def small(texts: Iterable[str]) -> bool:
    """Whether ``texts`` are short enough (:data:`SMALL` in all) to key a kept answer."""
    return sum(map(len, texts)) <= SMALL


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Answers(Generic[K, V]):
    """A bounded map from a question to its answer."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._kept: dict[K, V] = {}

    def find(self, key: K) -> V | None:
        """The answer kept for ``key``, if any."""
        return self._kept.get(key)

    def keep(self, key: K, value: V) -> None:
        """Keep ``value`` as the answer for ``key``, while there is room."""
        if len(self._kept) < self._limit:
            self._kept[key] = value

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The answer kept for ``key``, else ``make()`` (kept while there is room)."""
        found = self._kept.get(key)
        if found is None:
            found = make()
            if len(self._kept) < self._limit:
                self._kept[key] = found
        return found
