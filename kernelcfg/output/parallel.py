"""``resolve --batch --jobs N``: a batch's JSON lines made in worker processes and
handed back in input order.

The parent reads the input and writes the output; each worker resolves and renders a
chunk of lines at a time. At most two chunks per worker are in flight, so memory stays
bounded whatever the input's length. Workers are forked (they start with the releases
already loaded); where fork is not available the lines are made in this process.

No more workers start than the CPUs this process may use (:func:`available_jobs`: the
affinity mask and a cgroup CPU quota). Workers end with the parent (Linux's parent-death
signal). Where workers cannot be started (no usable ``/dev/shm`` for the pool's
semaphores, ``fork`` refused) or one dies (the OOM killer), the lines are made in this
process instead, none lost; each such event is a note in the output (:attr:`Rendered.notes`)
for the command line to show.

A line whose words recur in a run is made once: the renderer keeps what it wrote for
lines that read no file (:func:`pipeline.repeatable`), a bounded number of them.
"""

from __future__ import annotations

import gc
import itertools
import math
import multiprocessing
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kernelcfg.base.answers import Answers
from kernelcfg.base.bounded import one_line
from kernelcfg.base.errors import ArgumentError, KernelcfgError
from kernelcfg.commands import pipeline
from kernelcfg.output import render

if TYPE_CHECKING:
    from kernelcfg.commands.pipeline import Failure, Request, Words
    from kernelcfg.engine.resolution import Resolution

__all__ = ["CGROUP_ROOT", "CHUNK", "Rendered", "available_jobs", "cpu_quota", "json_lines"]

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
    notes: tuple[str, ...] = ()
    """What the run itself has to say (workers capped, not started, or dead), one line
    each, for stderr."""

    @property
    def lines(self) -> int:
        """How many lines ``data`` holds (each has one exit code)."""
        return sum(self.codes.values())


CGROUP_ROOT = "/sys/fs/cgroup"
"""Where Linux mounts the cgroup hierarchies."""


def available_jobs(root: str = CGROUP_ROOT) -> int:
    """The CPUs this process may use: its affinity mask, capped by a cgroup CPU quota
    (:func:`cpu_quota`); at least 1."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    quota = cpu_quota(root)
    return max(1, min(cpus, quota) if quota is not None else cpus)


def cpu_quota(root: str = CGROUP_ROOT, own: str = "/proc/self/cgroup") -> int | None:
    """The CPUs a cgroup CPU quota lets this process use (rounded up), the smallest over
    its cgroup and those above it; ``None`` without a quota (or without cgroups).

    ``own`` lists the process's cgroups (``/proc/self/cgroup``): cgroup v2's ``cpu.max``
    (``"200000 100000"`` is 2 CPUs, ``"max 100000"`` none) is read under ``root``,
    cgroup v1's ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us`` under the ``cpu``
    controller's mount there. Inside a container the own path may not exist under
    ``root`` (the container's cgroup is mounted as ``root``): the levels that exist count.
    """
    text = _small_file(Path(own))
    if text is None:
        return None
    found: list[int] = []
    for line in text.splitlines():
        _, _, rest = line.partition(":")
        controllers, sep, path = rest.partition(":")
        if not sep:
            continue
        if not controllers:  # cgroup v2
            found += _limits(Path(root), path, _v2_cpus)
        elif "cpu" in controllers.split(","):
            for mount in dict.fromkeys((controllers, "cpu")):
                found += _limits(Path(root) / mount, path, _v1_cpus)
    return min(found) if found else None


def _limits(mount: Path, path: str, read: Callable[[Path], int | None]) -> list[int]:
    """The quotas ``read`` finds in the cgroup at ``path`` under ``mount`` and in each
    cgroup above it, up to ``mount`` itself."""
    parts = [p for p in path.split("/") if p not in ("", ".", "..")]
    quotas = (read(mount.joinpath(*parts[:n])) for n in range(len(parts), -1, -1))
    return [q for q in quotas if q is not None]


def _v2_cpus(folder: Path) -> int | None:
    """cgroup v2: ``cpu.max`` is ``QUOTA PERIOD`` in microseconds, or ``max PERIOD``."""
    text = _small_file(folder / "cpu.max")
    words = text.split() if text else []
    if not words or words[0] == "max":
        return None
    return _cpus(words[0], words[1] if len(words) > 1 else "100000")


def _v1_cpus(folder: Path) -> int | None:
    """cgroup v1: ``cpu.cfs_quota_us`` (``-1``: none) over ``cpu.cfs_period_us``."""
    quota = _small_file(folder / "cpu.cfs_quota_us")
    period = _small_file(folder / "cpu.cfs_period_us")
    return _cpus(quota.strip(), period.strip()) if quota and period else None


def _cpus(quota: str, period: str) -> int | None:
    """A quota over its period as whole CPUs (rounded up); ``None`` when either is not
    a positive count."""
    try:
        spent, every = int(quota), int(period)
    except ValueError:
        return None
    return max(1, math.ceil(spent / every)) if spent > 0 and every > 0 else None


def _small_file(path: Path) -> str | None:
    """The first 4 KiB of a kernel file, or ``None`` when it cannot be read."""
    try:
        with path.open("rb") as file:
            return file.read(4096).decode("ascii", "replace")
    except OSError:
        return None


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


def _start_worker(policy: _Policy, parent: int) -> None:
    _die_with(parent)
    # What the worker inherits is never garbage in it: the collector leaves it alone
    # instead of walking (and so copying) the parent's pages in every process. Its own
    # objects are collected as usual. ~2% of a --jobs auto run (make bench, interleaved).
    gc.freeze()
    _IN_WORKER["policy"] = policy
    signal.signal(signal.SIGINT, signal.SIG_IGN)


_PR_SET_PDEATHSIG = 1
"""Linux's ``prctl`` option: the signal a process gets when its parent ends."""


def _die_with(parent: int) -> None:
    """End this worker when the parent process ``parent`` ends (Linux's parent-death
    signal), so that a killed ``kernelcfg`` leaves no worker behind; end it now when the
    parent ended before the signal was asked for."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # no C library to ask: it ends with its pool
            pass
    if os.getppid() != parent:
        os._exit(1)


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
) -> Generator[Rendered, None, None]:
    """Every batch line rendered, in input order, by up to ``jobs`` worker processes (a
    :class:`Rendered` per chunk of lines; a note as a :class:`Rendered` of no lines)."""
    cells = tuple(dict(c) for c in matrix) or ({},)
    request = pipeline.Request(serve_is_vllms=True, want_compile_cache=True)
    policy = _Policy(request, tuple(common), cells, strict, never)
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield from _here(_chunks(lines, 1), policy)  # each line as soon as it is read
        return
    chunks = _chunks(lines, CHUNK)
    first = next(chunks, [])
    if len(first) < CHUNK:  # one chunk: workers would cost more than they save
        yield _render(first, policy)
        return
    usable = available_jobs()
    if jobs > usable:
        yield _note(f"--jobs {jobs} capped at {usable}, the CPUs this process may use")
        jobs = usable
    yield from _in_workers(itertools.chain([first], chunks), policy, jobs)


def _note(text: str) -> Rendered:
    """A note for stderr, in the output's order."""
    return Rendered(b"", {}, notes=(text,))


def _here(chunks: Iterable[list[_Item]], policy: _Policy) -> Iterator[Rendered]:
    """The chunks made in this process."""
    for chunk in chunks:
        yield _render(chunk, policy)


_Held = deque[tuple[list[_Item], Future[Rendered] | None]]
"""The chunks handed to workers, oldest first, each with its future (``None`` while
being handed over)."""


def _in_workers(chunks: Iterator[list[_Item]], policy: _Policy, jobs: int) -> Iterator[Rendered]:
    """The chunks made by ``jobs`` forked workers, in order. When the workers cannot
    start, or one dies, the chunks not made yet are made in this process, with a note."""
    if jobs <= 1:
        yield from _here(chunks, policy)
        return
    try:
        pool = ProcessPoolExecutor(
            jobs,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_start_worker,
            initargs=(policy, os.getpid()),
        )
    except (OSError, ImportError) as exc:  # no semaphores: /dev/shm absent, read-only, full
        yield _note(
            f"--jobs {jobs}: worker processes cannot start (their semaphores in /dev/shm: "
            f"{_why(exc)}); resolving in this process"
        )
        yield from _here(chunks, policy)
        return
    held: _Held = deque()
    lost: str | None = None
    with pool:
        try:
            yield from _stream(pool, chunks, held, 2 * jobs)
        except BrokenProcessPool:  # a worker was killed (the OOM killer, a signal)
            lost = "a worker process died (killed by a signal or for memory)"
        except OSError as exc:  # fork refused
            lost = f"worker processes cannot start ({_why(exc)})"
        finally:
            for _, future in held:
                if future is not None:
                    future.cancel()
        if lost is not None:
            _end_workers(pool)
    if lost is not None:
        yield _note(f"--jobs {jobs}: {lost}; its lines and the rest are resolved in this process")
        for chunk, future in held:
            yield _finished(future) or _render(chunk, policy)
        yield from _here(chunks, policy)


def _stream(
    pool: ProcessPoolExecutor, chunks: Iterator[list[_Item]], held: _Held, most: int
) -> Iterator[Rendered]:
    """Hand the chunks to the pool, at most ``most`` at a time, and the lines made back
    in order; ``held`` keeps what is not back yet (what to redo if the pool breaks)."""
    for chunk in chunks:
        held.append((chunk, None))
        held[-1] = (chunk, pool.submit(_render_in_worker, chunk))
        if len(held) >= most:
            yield _oldest(held)
    while held:
        yield _oldest(held)


def _oldest(held: _Held) -> Rendered:
    """The oldest chunk's lines, once made (and only then dropped from ``held``)."""
    future = held[0][1]
    assert future is not None
    made = future.result()
    held.popleft()
    return made


def _finished(future: Future[Rendered] | None) -> Rendered | None:
    """What a worker made before its pool broke; ``None`` when it made nothing."""
    if future is None or not future.done() or future.cancelled() or future.exception():
        return None
    return future.result()


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """Kill what is left of a broken pool's workers: a fork refused half way leaves the
    others waiting for work that never comes (and the interpreter joins them at exit)."""
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        process.kill()


def _why(exc: BaseException) -> str:
    """An operating-system error as a few words."""
    return one_line(getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)
