"""Launches in Python source, read with the running interpreter's own parser (nothing is
run or imported): an argv list or tuple (``subprocess.Popen(["vllm", "serve", model,
...])``) with what is appended to it, a command string run by a shell (a literal, an
f-string, ``.format``, ``%``); see :mod:`.python_argv`.

A file the interpreter cannot parse (a newer Python's syntax, a typo) is never read as
holding nothing: a notice names the file and the line the parser stopped at, and the
file is read again with each such line left out (at most :data:`MAX_RETRIES` times, for
a file of at most :data:`MAX_RETRY_BYTES`), so the launches elsewhere in it are still
found.
"""

from __future__ import annotations

import ast
import dataclasses
import sys
from collections.abc import Iterator

from kernelcfg.base import bounded
from kernelcfg.flags.launches import images
from kernelcfg.flags.launches.python_argv import launches_in_tree
from kernelcfg.flags.launches.words import Found, Notice

__all__ = ["MAX_RETRIES", "MAX_RETRY_BYTES", "launches"]

MAX_RETRIES = 20
"""The most lines left out of a file Python cannot parse."""
MAX_RETRY_BYTES = 1024 * 1024
"""The largest file read again without the lines Python cannot parse."""


def launches(text: str, path: str) -> Iterator[Found | Notice]:
    """Every launch in a Python file, and a notice for each part it could not read."""
    lines = text.split("\n")
    tries: dict[int, int] = {}
    notices: list[Notice] = []
    for _ in range(MAX_RETRIES + 1):
        try:
            tree = ast.parse("\n".join(lines), filename=path)
        except SyntaxError as exc:
            line = exc.lineno or 1
            if line not in tries:
                written = lines[line - 1] if 0 < line <= len(lines) else ""
                notices.append(_unparsed(path, line, exc.offset or 1, exc.msg, written))
            tries[line] = tries.get(line, 0) + 1
            if tries[line] > len(_LEFT_OUT) or len(text) > MAX_RETRY_BYTES or line > len(lines):
                break
            lines[line - 1] = _LEFT_OUT[tries[line] - 1](lines[line - 1])
            continue
        except (ValueError, RecursionError, MemoryError) as exc:
            notices.append(_unparsed(path, 1, 1, type(exc).__name__, text))
            break
        yield from notices
        yield from launches_in_tree(tree, path)
        return
    # not read at all: a warning when the file names vLLM anywhere
    yield from notices[:-1]
    last = notices[-1]
    said = last.message.split("; ")[0] + "; no launch of the file is read"
    severity = "warning" if images.marker().search(text) else "info"
    yield dataclasses.replace(last, message=said, severity=severity)


def _unparsed(path: str, line: int, column: int, why: str, written: str) -> Notice:
    """The notice of a line the running Python cannot parse: a warning when the line
    names vLLM (a launch may be written there), else a note."""
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return Notice(
        path,
        line,
        max(column, 1),
        "unparsed-python",
        f"Python {version} cannot parse this line of {bounded.shown(path)} ({why}); a "
        "launch written on it is not read (the rest of the file is)",
        "warning" if images.marker().search(written) else "info",
    )


def _as_statement(line: str) -> str:
    """A line replaced by a statement that keeps the block around it whole."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if stripped.endswith(":"):  # a block's header: its body stays a block
        return f"{indent}if True:"
    return f"{indent}pass" if stripped else line


def _as_nothing(_line: str) -> str:
    """A line left blank (inside brackets, where no statement may stand)."""
    return ""


_LEFT_OUT = (_as_statement, _as_nothing)
"""How a line Python cannot parse is left out: tried in turn."""
