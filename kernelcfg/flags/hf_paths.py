"""Where Hugging Face keeps its files on this machine, as ``huggingface_hub`` finds them:
its home folder (``HF_HOME``, else ``XDG_CACHE_HOME/huggingface``, else
``~/.cache/huggingface``), the hub cache inside it (or ``HF_HUB_CACHE``) and the stored
login's token there. Read from the caller's environment; a ``~`` that names no home
folder is said, not guessed. Shared by the reader of the cache
(:mod:`.model_config`) and the downloader (:mod:`.hub`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from kernelcfg.base import bounded
from kernelcfg.base.answers import Answers

__all__ = ["hf_home", "hub_cache"]


def hub_cache(env: Mapping[str, str]) -> Path | str:
    """The Hugging Face hub cache folder, as ``huggingface_hub`` finds it, or why there
    is none here (a ``~`` that names no home folder). Worked out once per set of the
    variables it reads: every batch line that names a model asks, and the path
    arithmetic cost a sixth of such a line."""
    read = (env.get("HF_HUB_CACHE"), env.get("HF_HOME"), env.get("XDG_CACHE_HOME"))
    home = os.environ.get("HOME")  # what expanduser reads
    return _HUB_CACHES.get((*read, home), lambda: _hub_cache(*read))


_HUB_CACHES: Answers[tuple[str | None, ...], Path | str] = Answers(8)


def _hub_cache(hub: str | None, hf_home: str | None, xdg: str | None) -> Path | str:
    if hub:
        return _home_path(hub, "HF_HUB_CACHE")
    home = _hf_home(hf_home, xdg)
    return home / "hub" if isinstance(home, Path) else home


def hf_home(env: Mapping[str, str]) -> Path | str:
    """Hugging Face's home folder as ``huggingface_hub`` finds it (``HF_HOME``, else
    ``XDG_CACHE_HOME/huggingface``, else ``~/.cache/huggingface``; the stored login's
    token and, by default, the hub cache live there), or why there is none here."""
    return _hf_home(env.get("HF_HOME"), env.get("XDG_CACHE_HOME"))


def _hf_home(hf_home: str | None, xdg: str | None) -> Path | str:
    if hf_home:
        return _home_path(hf_home, "HF_HOME")
    cache = _home_path(xdg, "XDG_CACHE_HOME") if xdg else _home_path("~/.cache", "HOME")
    return cache / "huggingface" if isinstance(cache, Path) else cache


def _home_path(path: str, variable: str) -> Path | str:
    """``path`` with its leading ``~`` expanded, or why it cannot be (no such user, or no
    home folder known for this one: ``HOME`` unset and no passwd entry)."""
    expanded = os.path.expanduser(path)
    if not expanded.startswith("~"):
        return Path(expanded)
    user = expanded.split("/", 1)[0]
    where = "HOME is unset and this user has no home folder" if user == "~" else "no such user"
    return f"{variable} {bounded.shown(path)} starts with {bounded.shown(user)} ({where})"
