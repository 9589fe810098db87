"""Reading what users hand kernelcfg, with limits: files, JSON, YAML, text in messages.

Every file kernelcfg reads (``--config``, ``config.json``, ``--env-file``, a saved
resolve, a ``--batch`` file) goes through :func:`read_text`: regular files only, at
most :data:`MAX_FILE_BYTES`, strict UTF-8 (a byte-order mark is tolerated). JSON and
YAML are parsed with their nesting capped at :data:`MAX_DEPTH`, YAML aliases expanded
to at most :data:`MAX_YAML_NODES` nodes, and no ``NaN``/``Infinity``. Every failure is
one :class:`~kernelcfg.base.errors.ArgumentError` line naming the input (exit 2).

:func:`shown` and :func:`one_line` make user-controlled text safe to put in a message:
short, on one line, with control characters escaped.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import IO, Any

from kernelcfg.base.errors import ArgumentError

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "MAX_WORDS",
    "MAX_YAML_LINE",
    "MAX_YAML_NODES",
    "check_depth",
    "cut",
    "decode",
    "file_problem",
    "file_stat",
    "lines",
    "loads_json",
    "loads_yaml",
    "one_line",
    "read_text",
    "reason",
    "shown",
    "yaml_documents",
]

MAX_FILE_BYTES = 16 * 1024 * 1024
"""The largest file kernelcfg reads (16 MiB): YAML, JSON, env files."""
MAX_LINE_BYTES = 1024 * 1024
"""The longest ``--batch`` line (1 MiB)."""
MAX_WORDS = 10_000
"""The most words one command line may have (a launch in a file too)."""
MAX_DEPTH = 64
"""The deepest nesting of JSON or YAML values kernelcfg reads."""
MAX_YAML_LINE = 64 * 1024
"""The longest line of a YAML file (64 KiB): PyYAML reads a huge scalar slowly."""
MAX_YAML_NODES = 100_000
"""The most values a document's aliases may add to those written in it (a document of
any size, its aliases followed, holds at most this many more)."""
_SHOWN = 120


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped (``\\n``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else _escape(c) for c in text)


def _escape(char: str) -> str:
    escaped = repr(char)[1:-1]
    return escaped if escaped != char else f"\\x{ord(char):02x}"


def reason(exc: BaseException) -> str:
    """An input error as one line for a message: a RecursionError says the value was
    nested too deep (its own text names Python's recursion limit)."""
    if isinstance(exc, RecursionError):
        return "nested too deep"
    text = str(exc)
    if "int_max_str_digits" in text:  # CPython's hint to the programmer, not to the user
        return f"an integer of more than {sys.get_int_max_str_digits():,} digits"
    return one_line(text)


def shown(value: object, limit: int = _SHOWN) -> str:
    """``repr(value)`` on one line, cut to about ``limit`` characters."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + f"… ({len(value):,} characters)"
    return cut(one_line(repr(value)), limit)


def cut(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and how many there were."""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} characters)"


def file_stat(path: str) -> tuple[os.stat_result | None, str | None]:
    """``path``'s ``stat`` when it is a regular file (``None`` then for the problem);
    else ``None`` and why it cannot be read as one."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return None, exc.strerror or type(exc).__name__
    except ValueError as exc:  # embedded NUL
        return None, str(exc)
    if stat.S_ISREG(info.st_mode):
        return info, None
    if stat.S_ISDIR(info.st_mode):
        return None, "it is a directory"
    if stat.S_ISFIFO(info.st_mode):
        return None, "it is a pipe (FIFO), not a regular file"
    return None, "it is a device or special file, not a regular file"


def file_problem(path: str) -> str | None:
    """Why ``path`` cannot be read as a regular file, or ``None`` when it can."""
    return file_stat(path)[1]


def read_text(path: str, what: str, *, limit: int = MAX_FILE_BYTES) -> str:
    """The text of a regular file of at most ``limit`` bytes, strictly UTF-8."""
    problem = file_problem(path)
    if problem is not None:
        raise ArgumentError(f"{what}: cannot read {shown(path)}: {problem}", field=what)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise ArgumentError(
            f"{what}: cannot read {shown(path)}: {exc.strerror or exc}", field=what
        ) from None
    if len(data) > limit:
        raise ArgumentError(
            f"{what}: {shown(path)} is larger than {limit // (1024 * 1024)} MiB", field=what
        )
    return decode(data, f"{what} {shown(path)}")


def decode(data: bytes, what: str) -> str:
    """``data`` as UTF-8 (a leading byte-order mark dropped); one clear line otherwise."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ArgumentError(
            f"{what} is not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})",
            field=what.split(" ", 1)[0],
        ) from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} does not fit in a float")
    return number


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite)


def loads_json(text: str, what: str) -> Any:
    """JSON text as a value: strict RFC 8259 numbers, nesting at most :data:`MAX_DEPTH`."""
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise ArgumentError(
            f"{what}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
            field=what,
        ) from None
    except RecursionError:
        raise ArgumentError(
            f"{what}: JSON nested deeper than {MAX_DEPTH} levels", field=what
        ) from None
    except ValueError as exc:
        raise ArgumentError(f"{what}: not usable JSON ({reason(exc)})", field=what) from None
    if text.count("[") + text.count("{") > MAX_DEPTH:  # else it cannot be too deep
        check_depth(value, what)
    return value


def check_depth(value: Any, what: str, limit: int = MAX_DEPTH) -> None:
    """Refuse a value nested deeper than ``limit`` (without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            raise ArgumentError(f"{what}: nested deeper than {limit} levels", field=what)
        stack.extend((child, depth + 1) for child in children)


def loads_yaml(text: str, what: str) -> Any:
    """YAML text through PyYAML's safe loader, with nesting and alias expansion capped."""
    _check_yaml_lines(text, what)
    with _reading_yaml(what):
        loader = _safe_loader()(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_yaml_nodes(node, what)
            return loader.construct_document(node)
        finally:
            loader.dispose()


def yaml_documents(text: str, what: str) -> list[Any]:
    """Every document of a YAML stream as PyYAML's nodes (each with its place in the
    text: ``start_mark``), under the limits of :func:`loads_yaml`."""
    _check_yaml_lines(text, what)
    documents: list[Any] = []
    with _reading_yaml(what):
        loader = _safe_loader()(text)
        try:
            while loader.check_node():
                node = loader.get_node()
                if node is not None:
                    _check_yaml_nodes(node, what)
                    documents.append(node)
        finally:
            loader.dispose()
    return documents


@contextmanager
def _reading_yaml(what: str) -> Iterator[None]:
    """PyYAML's failures while reading ``what`` as one :class:`ArgumentError` line each."""
    import yaml

    try:
        yield
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "malformed YAML"
        raise ArgumentError(f"{what}: not valid YAML: {one_line(first)}", field=what) from None
    except (RecursionError, _TooDeepError):
        raise ArgumentError(
            f"{what}: YAML nested deeper than {MAX_DEPTH} levels", field=what
        ) from None
    except (ValueError, OverflowError, TypeError) as exc:
        raise ArgumentError(f"{what}: unusable YAML value ({reason(exc)})", field=what) from None


def _check_yaml_lines(text: str, what: str) -> None:
    """Refuse a YAML text with a line longer than :data:`MAX_YAML_LINE`."""
    longest = max(map(len, text.splitlines()), default=0)
    if longest > MAX_YAML_LINE:
        raise ArgumentError(
            f"{what}: a line of {longest:,} characters; YAML lines are capped at "
            f"{MAX_YAML_LINE // 1024} KiB",
            field=what,
        )


class _TooDeepError(Exception):
    """A flow collection (``[``, ``{``) opened deeper than :data:`MAX_DEPTH`."""


@cache
def _safe_loader() -> Any:
    """PyYAML's safe loader, stopping at a flow collection nested deeper than
    :data:`MAX_DEPTH` (the document would be refused for its depth anyway): its scanner
    looks ahead over every open collection at each token, so 3,000 nested ``[`` took
    0.7 s before the depth was checked (``make bench``)."""
    import yaml

    class Loader(yaml.SafeLoader):
        def fetch_flow_collection_start(self, token_class: Any) -> None:
            if self.flow_level >= MAX_DEPTH:
                raise _TooDeepError
            super().fetch_flow_collection_start(token_class)

    return Loader


def _check_yaml_nodes(root: Any, what: str) -> None:
    """Refuse documents nested too deep, self-referencing, or whose aliases add more
    than :data:`MAX_YAML_NODES` values to those written (a large file written out in
    full is no alias bomb: only what aliases add is counted)."""
    import yaml

    written = _distinct_nodes(root)
    limit = MAX_YAML_NODES + written
    sizes: dict[int, int] = {}
    active: set[int] = set()
    # Iterative post-order walk: (node, depth, children done?)
    stack: list[tuple[Any, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = 1
            continue
        children = (
            [c for pair in node.value for c in pair]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
        )
        if done:
            active.discard(key)
            total = 1 + sum(sizes[id(c)] for c in children)
            if total > limit:
                raise ArgumentError(
                    f"{what}: YAML aliases expand to more than {MAX_YAML_NODES:,} values "
                    f"beyond the {written:,} written",
                    field=what,
                )
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in active:
            raise ArgumentError(f"{what}: a YAML alias refers to itself", field=what)
        if depth > MAX_DEPTH:
            raise ArgumentError(f"{what}: YAML nested deeper than {MAX_DEPTH} levels", field=what)
        active.add(key)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children if id(c) not in sizes)


def _distinct_nodes(root: Any) -> int:
    """How many nodes a document holds, each counted once however many aliases name it."""
    import yaml

    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack.extend(c for pair in node.value for c in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return len(seen)


def lines(stream: IO[bytes], what: str = "--batch") -> Iterator[str | ArgumentError]:
    """Each line of a byte stream as text, or the error that line is (too long, not UTF-8).

    Memory stays bounded by :data:`MAX_LINE_BYTES` whatever the stream holds; a
    byte-order mark before the first line is dropped.
    """
    number = 0
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while (rest := stream.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass
            yield ArgumentError(
                f"{what} line {number}: longer than {MAX_LINE_BYTES // 1024} KiB", field=what
            )
            continue
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield ArgumentError(
                f"{what} line {number}: not UTF-8 (byte {raw[exc.start]:#04x} at column "
                f"{exc.start + 1})",
                field=what,
            )
