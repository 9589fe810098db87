"""Word of a download under way, for whoever shows it: the library says when it starts
and ends fetching a file (:func:`report`); the CLI, when it runs, listens
(:data:`LISTENER`) and writes it to stderr, never to stdout. Without a listener (the
Python API, a test) nothing is said.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

__all__ = ["LISTENER", "Fetching", "report"]


@dataclass(frozen=True)
class Fetching:
    """One file of a model being fetched."""

    model: str
    """The hub id."""
    name: str
    """The file (``config.json`` …)."""
    source: str
    """Where from, as a message names it (``the Hub``, ``HF_ENDPOINT …``)."""
    connect_seconds: float
    """The longest wait to connect (and between two reads)."""
    deadline_seconds: float
    """The longest the whole answer may take."""
    state: Literal["start", "end"]
    """``start`` before asking, ``end`` once answered or given up."""


LISTENER: ContextVar[Callable[[Fetching], None] | None] = ContextVar(
    "kernelcfg_fetch_listener", default=None
)
"""Who is told of each file fetched (the CLI sets it for its run)."""


def report(event: Fetching) -> None:
    """Tell the listener, if there is one."""
    listener = LISTENER.get()
    if listener is not None:
        listener(event)
