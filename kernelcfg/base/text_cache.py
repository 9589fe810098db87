"""Texts kept on disk between runs, for what is slow to make and never changes for the
same question (transformers' text of a model's config: importing transformers takes
seconds, the text a millisecond).

The folder is ``KERNELCFG_CACHE_DIR``, else ``$XDG_CACHE_HOME/kernelcfg``, else
``~/.cache/kernelcfg``; ``KERNELCFG_CACHE_DIR`` set empty turns the cache off. An entry
is one file named by the SHA-256 of its question, written whole (a temporary file, then
a rename) or not at all; a file that cannot be read or written is a miss, never an error.

Someone else may have written the folder (a shared CI cache): an entry is used only when
it is a regular file (never a link, a FIFO or a device: it is opened without following a
link and without blocking), lies in the folder kernelcfg names, and starts with the line
kernelcfg writes — the hash of its question and of its text — both of which match. Any
other entry is a miss, and is written anew.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Mapping

__all__ = ["MAX_TEXT", "folder", "get", "put"]

MAX_TEXT = 1024 * 1024
"""The longest text kept (a model config's text is a few KiB)."""


def folder(environ: Mapping[str, str] | None = None) -> str | None:
    """The cache folder, or ``None`` when the cache is off or no home is known."""
    env = os.environ if environ is None else environ
    given = env.get("KERNELCFG_CACHE_DIR")
    if given is not None:
        return given or None
    xdg = env.get("XDG_CACHE_HOME")
    if xdg:
        return os.path.join(xdg, "kernelcfg")
    home = os.path.expanduser("~")
    return None if home == "~" else os.path.join(home, ".cache", "kernelcfg")


def _path(namespace: str, question: str) -> str | None:
    """Where ``question``'s entry lies, or ``None`` (no cache)."""
    root = folder()
    if root is None:
        return None
    name = hashlib.sha256(question.encode()).hexdigest()
    return os.path.join(root, namespace, name)


def _in_its_folder(path: str) -> bool:
    """Whether the folder of the entry ``path`` is the one kernelcfg names, not a link
    to another place."""
    holder = os.path.dirname(path)
    real = os.path.realpath(holder)
    return real == os.path.join(os.path.realpath(os.path.dirname(holder)), os.path.basename(holder))


def get(namespace: str, question: str) -> str | None:
    """The text kept for ``question``, or ``None`` (also for an entry that is not one
    kernelcfg wrote for this question)."""
    path = _path(namespace, question)
    if path is None or not _in_its_folder(path):
        return None
    try:
        data = _read_regular(path)
    except OSError:
        return None
    if data is None:
        return None
    head, newline, body = data.partition(b"\n")
    if not newline or head != _header(question, body):
        return None
    try:
        return body.decode()
    except UnicodeDecodeError:
        return None


_FORMAT = b"kernelcfg-text 1"
"""The first words of an entry's first line."""


def _header(question: str, body: bytes) -> bytes:
    """An entry's first line: the format, the question's hash and the text's."""
    asked = hashlib.sha256(question.encode()).hexdigest().encode()
    return b" ".join((_FORMAT, asked, hashlib.sha256(body).hexdigest().encode()))


def _read_regular(path: str) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most :data:`MAX_TEXT` bytes
    (and a line), opened without following a link or waiting on a FIFO; else ``None``."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    handle = os.open(path, flags)
    with os.fdopen(handle, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TEXT + _HEAD:
            return None
        return fh.read(MAX_TEXT + _HEAD + 1)


_HEAD = 256
"""Room for an entry's first line."""


def put(namespace: str, question: str, text: str) -> None:
    """Keep ``text`` for ``question`` (quietly not, where the folder cannot be written)."""
    path = _path(namespace, question)
    if path is None or len(text) > MAX_TEXT:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not _in_its_folder(path):
            return
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".part-")
    except OSError:
        return
    try:
        body = text.encode()
        with os.fdopen(handle, "wb") as fh:
            fh.write(_header(question, body) + b"\n" + body)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
