"""The files ``kernelcfg scan`` reads: the files named (each once, by its real path), the
files of each folder named, and standard input.

A folder is walked as its repository sees it: in a git checkout, ``git ls-files
--cached --others --exclude-standard`` (what ``.gitignore`` ignores is left out), else
every folder but ``.git``. A folder's files are those of a form ``scan`` reads
(:func:`scannable`); at most :data:`MAX_FILES` of them, in name order, and at most
:data:`MAX_BYTES` in all; a file over kernelcfg's file limit (16 MiB) is skipped with a
warning, as is a file past those limits (one warning says how many).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

from kernelcfg.base import bounded
from kernelcfg.base.problems import Problem
from kernelcfg.flags.launches import kind_of

__all__ = ["MAX_BYTES", "MAX_FILES", "STDIN", "Listing", "Source", "listing", "scannable"]

MAX_FILES = 10_000
"""The most files of the folders named that are read."""
MAX_BYTES = 256 * 1024 * 1024
"""The most bytes of the folders' files read in all (256 MiB)."""
STDIN = "<stdin>"
"""How standard input is named in the reports."""
_SHELL_SUFFIXES = frozenset({".sh", ".bash", ".zsh", ".ksh", ".mk", ".env"})
_SHELL_NAMES = frozenset({"makefile", "gnumakefile", "justfile", "procfile", ".env"})
_GIT_SECONDS = 60


@dataclass(frozen=True)
class Source:
    """One thing to scan: a file, or text given on standard input."""

    path: str
    """The file's name as shown (:data:`STDIN` for standard input)."""
    text: str | None = None
    """The text itself, when it was given (standard input)."""
    kind: str | None = None
    """The reader to use (default: by the file's name, or by what the text holds)."""
    walked: bool = False
    """Whether it was found by walking a folder: a file that cannot be read is then a
    warning, not a failure."""


@dataclass
class Listing:
    """What a scan reads, and what it passed over."""

    sources: list[Source] = field(default_factory=list)
    """The files (and standard input), each once."""
    skipped: list[Problem] = field(default_factory=list)
    """Warnings for files of the folders that were not read (too large, past the
    limits)."""
    folders: bool = False
    """Whether a folder was named."""


def scannable(path: str) -> bool:
    """Whether a folder's file is of a form ``scan`` reads: a Dockerfile, YAML, Markdown,
    Python, a shell script (``*.sh`` …, a Makefile, a file starting ``#!`` with a shell)."""
    if kind_of(path) != "shell":
        return True
    name = os.path.basename(path).lower()
    suffix = os.path.splitext(name)[1]
    if suffix in _SHELL_SUFFIXES or name in _SHELL_NAMES:
        return True
    if suffix:
        return False
    try:
        with open(path, "rb") as handle:
            first = handle.read(128)
    except OSError:
        return False
    return first.startswith(b"#!") and any(s in first for s in (b"sh\n", b"sh ", b"bash"))


def listing(names: Sequence[str], stdin_text: str | None) -> Listing:
    """The sources for ``names`` (files, folders, ``-`` for standard input, whose text
    is ``stdin_text``): each file once, by its real path; folders walked."""
    out = Listing()
    seen: set[str] = set()
    walked = 0
    total = 0
    for name in dict.fromkeys(names):
        if name == "-":
            out.sources.append(Source(STDIN, stdin_text or ""))
            continue
        if os.path.isdir(name):
            out.folders = True
            for path in _folder_files(name):
                if _first_time(path, seen):
                    walked, total = _take(out, path, walked, total)
            continue
        if _first_time(name, seen):
            out.sources.append(Source(name))
    if walked > MAX_FILES or total > MAX_BYTES:
        out.skipped.append(_past_limits(walked, total))
    return out


def _first_time(path: str, seen: set[str]) -> bool:
    """Whether ``path`` names a file not named before (by its real path)."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        real = path
    if real in seen:
        return False
    seen.add(real)
    return True


def _take(out: Listing, path: str, walked: int, total: int) -> tuple[int, int]:
    """Add a folder's file, within the limits; the counts so far."""
    walked += 1
    info, _ = bounded.file_stat(path)
    size = info.st_size if info is not None else 0
    if size > bounded.MAX_FILE_BYTES:
        out.skipped.append(
            Problem(
                "warning",
                "file-not-scanned",
                None,
                f"{bounded.shown(path)} is larger than "
                f"{bounded.MAX_FILE_BYTES // (1024 * 1024)} MiB: not scanned",
                0,
            )
        )
        return walked, total
    total += size
    if walked <= MAX_FILES and total <= MAX_BYTES:
        out.sources.append(Source(path, walked=True))
    return walked, total


def _past_limits(walked: int, total: int) -> Problem:
    """The warning for the files past the folder limits."""
    return Problem(
        "warning",
        "files-not-scanned",
        None,
        f"the folders named hold {walked:,} files scan reads ({total / 1024 / 1024:,.0f} MiB); "
        f"the first {MAX_FILES:,} files, and at most {MAX_BYTES // (1024 * 1024)} MiB, were "
        "scanned: name the folders that hold deployment files",
        0,
    )


def _folder_files(folder: str) -> list[str]:
    """The files of a folder that ``scan`` reads, in name order."""
    listed = _git_files(folder)
    names = listed if listed is not None else _walk(folder)
    return [path for path in names if os.path.isfile(path) and scannable(path)]


def _git_files(folder: str) -> list[str] | None:
    """The files git shows in a folder of a checkout (tracked, and untracked ones that
    ``.gitignore`` does not ignore); ``None`` outside a checkout or without git."""
    try:
        done = subprocess.run(
            ["git", "-C", folder, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            timeout=_GIT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    names = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    return sorted(os.path.normpath(os.path.join(folder, name)) for name in names if name)


def _walk(folder: str) -> list[str]:
    """Every file under a folder, ``.git`` left out."""
    found: list[str] = []
    for here, folders, files in os.walk(folder):
        folders[:] = sorted(f for f in folders if f != ".git")
        found += (os.path.normpath(os.path.join(here, name)) for name in files)
        if len(found) > 20 * MAX_FILES:  # a tree far past the limit: stop walking
            break
    return sorted(found)
