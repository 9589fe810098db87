"""A download's progress on stderr, never on stdout (machine output stays clean): on a
terminal, a rich bar with the time taken and the deadline, gone once the file is in;
elsewhere (a pipe, a log, ``CI`` set), one plain line per file as it starts, naming the
deadline, so a slow or unreachable Hub is never a silent wait."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from kernelcfg.base.bounded import one_line
from kernelcfg.base.progress import LISTENER, Fetching

__all__ = ["line_of", "listen", "silence"]


def line_of(event: Fetching) -> str:
    """The plain line said as a file starts."""
    return one_line(
        f"fetching {event.name} of {event.model!r} from {event.source} (gives up after "
        f"{event.connect_seconds:g} s without an answer, {event.deadline_seconds:g} s in all)"
    )


def _on_terminal() -> bool:
    """Whether stderr is a person's terminal (not a pipe, a file, CI or a dumb one)."""
    stream = sys.stderr
    isatty = getattr(stream, "isatty", None)
    return bool(
        isatty is not None
        and isatty()
        and not os.environ.get("CI")
        and os.environ.get("TERM") != "dumb"
    )


class _Listener:
    """Shows each file fetched, as :mod:`kernelcfg.base.progress` reports it."""

    def __init__(self) -> None:
        self.bar: Any = None

    def __call__(self, event: Fetching) -> None:
        if event.state == "end":
            if self.bar is not None:
                self.bar.stop()
                self.bar = None
            return
        if not _on_terminal():
            sys.stderr.write(line_of(event) + "\n")
            sys.stderr.flush()
            return
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(
            TextColumn(f"fetching {event.name} of {event.model}"),
            BarColumn(),
            TimeElapsedColumn(),
            TextColumn(f"(gives up after {event.deadline_seconds:g} s)"),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self.bar.add_task("fetch", total=None)
        self.bar.start()


def listen() -> Callable[[], None]:
    """Show downloads for the rest of this run (the CLI's entry calls it); returns what
    puts things back as they were, for the end of the run."""
    token = LISTENER.set(_Listener())
    return lambda: LISTENER.reset(token)


def silence() -> None:
    """Show no downloads (``--quiet``)."""
    LISTENER.set(None)
