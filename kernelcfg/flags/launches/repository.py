"""Where a scanned file's repository is, and whether a path a file names lies inside it.

A path written in a deployment file (``--config /etc/vllm/config.yaml``, compose's
``build: ./docker``) names a file of the container or of the checkout, never one of the
machine that scans: kernelcfg reads it only when it resolves (symbolic links followed)
inside the scanned file's repository — its git root (the nearest folder above it holding
``.git``), else the folder the file is in.
"""

from __future__ import annotations

import os
from functools import lru_cache

__all__ = ["inside", "resolve", "root_of"]

_MAX_LEVELS = 64
"""The most folders climbed looking for ``.git``."""


@lru_cache(maxsize=256)
def root_of(path: str) -> str:
    """The repository root of the file at ``path``: its git root, else its folder."""
    folder = os.path.dirname(os.path.realpath(path)) or os.sep
    here = folder
    for _ in range(_MAX_LEVELS):
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return folder


def inside(path: str, root: str) -> bool:
    """Whether ``path`` resolves (symbolic links followed) inside ``root``."""
    try:
        real = os.path.realpath(path)
        return os.path.commonpath([real, os.path.realpath(root)]) == os.path.realpath(root)
    except (OSError, ValueError):
        return False


def resolve(written: str, base: str, root: str) -> str | None:
    """The real path of ``written`` (relative to the folder ``base``) when it lies
    inside ``root`` and is a regular file; ``None`` otherwise."""
    try:
        candidate = os.path.realpath(os.path.join(base, written))
    except (OSError, ValueError):
        return None
    if not inside(candidate, root) or not os.path.isfile(candidate):
        return None
    return candidate
