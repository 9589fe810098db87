"""Texts kept on disk between runs, for what is slow to make and never changes for the
same question (transformers' text of a model's config: importing transformers takes
seconds, the text a millisecond).

The folder is ``KERNELCFG_CACHE_DIR``, else ``$XDG_CACHE_HOME/kernelcfg``, else
``~/.cache/kernelcfg``; ``KERNELCFG_CACHE_DIR`` set empty turns the cache off. An entry
is one file named by the SHA-256 of its question, written whole (a temporary file, then
a rename) or not at all; a file that cannot be read or written is a miss, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
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
    root = folder()
    if root is None:
        return None
    name = hashlib.sha256(question.encode()).hexdigest()
    return os.path.join(root, namespace, name)


def get(namespace: str, question: str) -> str | None:
    """The text kept for ``question``, or ``None``."""
    path = _path(namespace, question)
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_TEXT + 1)
        return data.decode() if len(data) <= MAX_TEXT else None
    except (OSError, UnicodeDecodeError):
        return None


def put(namespace: str, question: str, text: str) -> None:
    """Keep ``text`` for ``question`` (quietly not, where the folder cannot be written)."""
    path = _path(namespace, question)
    if path is None or len(text) > MAX_TEXT:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".part-")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
