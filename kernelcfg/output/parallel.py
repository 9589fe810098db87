"""``resolve --batch --jobs N``: a batch's JSON lines made in worker processes and
handed back in input order.

The parent reads the input and writes the output; each worker resolves and renders a
chunk of lines at a time. At most two chunks per worker are in flight, so memory stays
bounded whatever the input's length. Workers are forked (they start with the releases
already loaded); where fork is not available the lines are made in this process.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernelcfg.base.errors import ArgumentError, KernelcfgError

if TYPE_CHECKING:
    from kernelcfg.commands.pipeline import Request

__all__ = ["CHUNK", "Rendered", "available_jobs", "json_lines"]

CHUNK = 256
"""Lines per task: large enough that passing them between processes costs little."""


@dataclass(frozen=True)
class Rendered:
    """The JSON lines of consecutive batch lines, made by a worker: one object (and
    one string) per chunk, so that handing them back costs the parent little."""

    data: bytes
    """The lines, each ending in a newline, as UTF-8 (encoded by the worker, so the
    parent only writes them)."""
    lines: int
    """How many lines ``text`` holds."""
    codes: dict[int, int]
    """How many lines had each exit code under the run's policy."""
    tracebacks: tuple[str, ...] = ()
    """kernelcfg bugs' tracebacks, for stderr."""
    fallback_note: str | None = None
    """The note of the first line resolved for the CPU fallback (no target given or
    found); ``None`` when none was."""


def available_jobs() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class _Policy:
    request: Request
    common: tuple[str, ...]
    matrix: tuple[Mapping[str, str], ...]
    strict: bool
    never: bool


_Item = tuple[int, str | tuple[str, str | None]]


def _render(items: list[_Item], policy: _Policy) -> Rendered:
    """A worker's task: resolve and render a chunk of numbered lines."""
    from kernelcfg.commands import pipeline
    from kernelcfg.output import render

    texts: list[str] = []
    codes: dict[int, int] = {}
    tracebacks: list[str] = []
    fallback: str | None = None
    raws: list[str | KernelcfgError] = [
        item if isinstance(item, str) else ArgumentError(item[0], field=item[1])
        for _, item in items
    ]
    start = items[0][0] if items else 1  # a chunk's lines are numbered consecutively
    for line in pipeline.batch(raws, policy.common, policy.request, policy.matrix, start):
        result = line.result
        code = render.exit_code_under(result, strict=policy.strict, never=policy.never)
        codes[code] = codes.get(code, 0) + 1
        extra: dict[str, Any] = {"id": line.id, "exit_code": code}
        if policy.matrix != ({},):
            extra["matrix"] = line.cell
        texts.append(render.json_line(result, extra, strict=policy.strict))
        trace = getattr(result, "traceback", None)
        if trace:
            tracebacks.append(trace)
        target = getattr(result, "target", None)
        if fallback is None and target is not None and target.source == "fallback":
            fallback = target.note or ""
    data = ("\n".join(texts) + "\n").encode("utf-8", "backslashreplace") if texts else b""
    return Rendered(data, len(texts), codes, tuple(tracebacks), fallback)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _chunks(lines: Iterable[str | KernelcfgError], size: int) -> Iterator[list[_Item]]:
    """Numbered lines in lists of ``size``; an unreadable line as its message and field
    (an error does not survive pickling with its field)."""
    chunk: list[_Item] = []
    for number, raw in enumerate(lines, start=1):
        chunk.append((number, raw if isinstance(raw, str) else (raw.message, raw.field)))
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def json_lines(
    lines: Iterable[str | KernelcfgError],
    common: Sequence[str],
    matrix: Sequence[Mapping[str, str]],
    *,
    jobs: int,
    strict: bool,
    never: bool,
) -> Iterator[Rendered]:
    """Every batch line rendered, in input order, by ``jobs`` worker processes (a
    :class:`Rendered` per chunk of lines)."""
    from kernelcfg.commands.pipeline import Request

    cells = tuple(dict(c) for c in matrix) or ({},)
    policy = _Policy(Request(), tuple(common), cells, strict, never)
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        for chunk in _chunks(lines, 1):  # each line as soon as it is read (a pipe)
            yield _render(chunk, policy)
        return
    chunks = _chunks(lines, CHUNK)
    first = next(chunks, [])
    if len(first) < CHUNK:  # one chunk: workers would cost more than they save
        yield _render(first, policy)
        return
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_ignore_sigint) as pool:
        waiting: deque[Future[Rendered]] = deque()
        try:
            for chunk in itertools.chain([first], chunks):
                waiting.append(pool.submit(_render, chunk, policy))
                if len(waiting) >= 2 * jobs:
                    yield waiting.popleft().result()
            while waiting:
                yield waiting.popleft().result()
        finally:
            for future in waiting:
                future.cancel()
