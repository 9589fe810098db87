"""``resolve --batch --jobs N``: a batch's JSON lines made in worker processes and
handed back in input order.

The parent reads the input and writes the output; each worker resolves and renders a
chunk of lines at a time. At most two chunks per worker are in flight, so memory stays
bounded whatever the input's length. Workers are forked (they start with the releases
already loaded); where fork is not available the lines are made in this process.

A line whose words recur in a run is made once: the renderer keeps what it wrote for
lines that read no file (:func:`pipeline.repeatable`), a bounded number of them.
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from kernelcfg.base.answers import Answers
from kernelcfg.base.errors import ArgumentError, KernelcfgError
from kernelcfg.commands import pipeline
from kernelcfg.output import render

if TYPE_CHECKING:
    from kernelcfg.commands.pipeline import Failure, Request, Words
    from kernelcfg.engine.resolution import Resolution

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
    codes: dict[int, int]
    """How many lines had each exit code under the run's policy."""
    tracebacks: tuple[str, ...] = ()
    """kernelcfg bugs' tracebacks, for stderr."""
    fallback_note: str | None = None
    """The note of the first line resolved for the CPU fallback (no target given or
    found); ``None`` when none was."""

    @property
    def lines(self) -> int:
        """How many lines ``data`` holds (each has one exit code)."""
        return sum(self.codes.values())


def available_jobs() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class _Made(NamedTuple):
    """One line as made, less its id: kept for the lines whose words recur."""

    body: str
    """:func:`render.json_body`."""
    code: int
    """Its exit code under the run's policy."""
    fallback: str | None
    """The fallback target's note (``""`` without one) when it was resolved for the
    CPU fallback; ``None`` otherwise."""
    traceback: str | None
    """A kernelcfg bug's traceback."""


REPEATS = 4096
"""How many distinct repeatable lines a process keeps what it made for (~2.5 KB each)."""


@dataclass(frozen=True)
class _Policy:
    request: Request
    common: tuple[str, ...]
    matrix: tuple[Mapping[str, str], ...]
    strict: bool
    never: bool
    made: Answers[tuple[str, ...], _Made] = field(
        default_factory=lambda: Answers(REPEATS), compare=False
    )
    """What was made for the repeatable lines of this run (per process)."""


_Item = tuple[int, str | tuple[str, str | None]]


def _render(items: list[_Item], policy: _Policy) -> Rendered:
    """Resolve and render a chunk of numbered lines."""
    texts: list[str] = []
    codes: dict[int, int] = {}
    tracebacks: list[str] = []
    fallback: str | None = None
    raws: list[str | KernelcfgError] = [
        item if isinstance(item, str) else ArgumentError(item[0], field=item[1])
        for _, item in items
    ]
    start = items[0][0] if items else 1  # a chunk's lines are numbered consecutively
    for item in pipeline.batch_words(raws, policy.common, policy.matrix, start):
        made = (
            _make(item.result, policy) if isinstance(item, pipeline.Line) else _made(item, policy)
        )
        codes[made.code] = codes.get(made.code, 0) + 1
        extra: dict[str, Any] = {"id": item.id, "exit_code": made.code}
        if policy.matrix != ({},):
            extra["matrix"] = item.cell
        texts.append(render.with_extra(made.body, extra))
        if made.traceback:
            tracebacks.append(made.traceback)
        if fallback is None:
            fallback = made.fallback
    data = ("\n".join(texts) + "\n").encode("utf-8", "backslashreplace") if texts else b""
    return Rendered(data, codes, tuple(tracebacks), fallback)


def _made(item: Words, policy: _Policy) -> _Made:
    """A line's words resolved and rendered, or what was made for them before."""
    found = policy.made.find(item.words)
    if found is not None:
        return found
    result = pipeline.resolve_words(item.words, policy.request)
    made = _make(result, policy)
    if pipeline.repeatable(item.words, result):
        policy.made.keep(item.words, made)
    return made


def _make(result: Resolution | Failure, policy: _Policy) -> _Made:
    target = result.target
    return _Made(
        render.json_body(result, strict=policy.strict),
        render.exit_code_under(result, strict=policy.strict, never=policy.never),
        (target.note or "") if target is not None and target.source == "fallback" else None,
        getattr(result, "traceback", None),
    )


_IN_WORKER: dict[str, _Policy] = {}
"""The run's policy in a worker process (under ``"policy"``), set when the worker starts."""


def _start_worker(policy: _Policy) -> None:
    # What the worker inherits is never garbage in it: the collector leaves it alone
    # instead of walking (and so copying) the parent's pages in every process. Its own
    # objects are collected as usual. ~2% of a --jobs auto run (make bench, interleaved).
    gc.freeze()
    _IN_WORKER["policy"] = policy
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _render_in_worker(items: list[_Item]) -> Rendered:
    """A worker's task: :func:`_render` under the policy it was started with (so what it
    keeps for repeated lines lasts the whole run)."""
    return _render(items, _IN_WORKER["policy"])


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
    cells = tuple(dict(c) for c in matrix) or ({},)
    policy = _Policy(pipeline.Request(), tuple(common), cells, strict, never)
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
    pool = ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_start_worker, initargs=(policy,)
    )
    with pool:
        waiting: deque[Future[Rendered]] = deque()
        try:
            for chunk in itertools.chain([first], chunks):
                waiting.append(pool.submit(_render_in_worker, chunk))
                if len(waiting) >= 2 * jobs:
                    yield waiting.popleft().result()
            while waiting:
                yield waiting.popleft().result()
        finally:
            for future in waiting:
                future.cancel()
