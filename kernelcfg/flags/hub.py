"""A model's config files fetched from the Hugging Face Hub, only when asked
(``--download``, ``KERNELCFG_DOWNLOAD=1``, ``kernelcfg fetch``).

Fetched: ``config.json`` and, when it holds no ``quantization_config``, the two files
vLLM then reads beside it — ``hf_quant_config.json`` (ModelOpt's older layout, which
vLLM's ``get_config`` takes as the quantisation config) and ``quantization_config.json``
(Intel Neural Compressor's, read with ``--quantization inc``); never weights. They go
through ``huggingface_hub.hf_hub_download`` (the ``hub`` extra, imported here only when
fetching) into the standard cache, where :mod:`kernelcfg.flags.model_config` finds them.
What decides where and how is read from the line's environment at each call, not from
what ``huggingface_hub`` read when it was imported: ``HF_ENDPOINT``, ``HF_TOKEN``,
``HF_HUB_OFFLINE`` and the cache folder the caller found (``HF_HUB_CACHE``,
``HF_HOME``). Every failure is one :class:`ArgumentError` line naming the model and
what to do (exit 2).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kernelcfg.base import bounded
from kernelcfg.base.answers import Answers
from kernelcfg.base.errors import ArgumentError, KernelcfgError

__all__ = ["CODE", "EXTRA", "HUB_ID", "fetch", "is_hub_id", "safe_revision"]

CODE = "model-download-failed"
"""The code of every failure to fetch a model's config files (exit 2)."""
EXTRA = "pip install 'kernelcfg[hub]' (or pip install 'huggingface_hub>=0.30')"
"""How to install what downloading needs."""
HUB_ID = re.compile(r"[A-Za-z0-9_.-]{1,96}/[A-Za-z0-9_.-]{1,96}")
"""A Hub model id as kernelcfg looks for it (``org/name``); the Hub's finer rules (no
``--``, no leading ``.``) are ``huggingface_hub``'s to say."""
_BESIDE = ("hf_quant_config.json", "quantization_config.json")
"""The files vLLM reads beside a config.json that holds no ``quantization_config``."""
_TRUE = frozenset({"1", "ON", "YES", "TRUE"})
"""The values ``huggingface_hub`` takes as true for ``HF_HUB_OFFLINE``."""


class _Where(NamedTuple):
    """Where and how to reach the Hub, as a line's environment says at call time (a
    NamedTuple: a third of a dataclass's cost to define, on every run that reads a
    model)."""

    endpoint: str | None
    """``HF_ENDPOINT`` (no trailing ``/``); ``None``: huggingface_hub's default."""
    cache: str
    """The hub cache folder the files go into."""
    token: str | None
    """``HF_TOKEN``; ``None``: huggingface_hub's own (its stored login, if any)."""
    offline: bool
    """``HF_HUB_OFFLINE``: nothing is asked of the network; only the cache answers."""

    @property
    def hub(self) -> str:
        """The Hub as a message names it."""
        return f"HF_ENDPOINT {bounded.shown(self.endpoint)}" if self.endpoint else "the Hub"


def is_hub_id(model: str) -> bool:
    """Whether ``model`` names a Hub repository (``org/name``) rather than a path here."""
    return (
        HUB_ID.fullmatch(model) is not None
        and all(part not in (".", "..") for part in model.split("/"))
        and not os.path.lexists(model)
    )


def safe_revision(revision: str) -> bool:
    """Whether ``revision`` can name a branch, tag or commit: the cache keeps a branch
    as ``refs/REVISION``, so it must never climb out (``..``), start at ``/`` or be
    empty."""
    parts = revision.split("/")
    return (
        len(revision) <= _MAX_REVISION
        and all(part not in ("", ".", "..") for part in parts)
        and not any(char in revision for char in "\\\0")
    )


_MAX_REVISION = 256
"""The longest revision kernelcfg asks for (a commit hash is 40 characters)."""


def fetch(model: str, *, revision: str | None, environ: Mapping[str, str], cache: Path) -> str:
    """Fetch ``model``'s ``config.json`` (and the files vLLM reads beside it) into
    ``cache``; return the cached ``config.json``'s path. Raises :class:`ArgumentError`
    (one line, exit 2) when it cannot. A failure is asked once per process: a batch
    that names a gated model on every line asks the Hub once."""
    if not is_hub_id(model):
        raise ArgumentError(
            f"{bounded.shown(model)} is not a Hugging Face model id (org/name, not a path "
            "here); only a hub id can be downloaded",
            field="model",
            code=CODE,
        )
    if revision is not None and not safe_revision(revision):
        raise ArgumentError(
            f"--revision {bounded.shown(revision)} is not a branch, tag or commit name",
            field="revision",
            code=CODE,
        )
    where = _where(environ, cache)
    key = (model, revision, where)
    failed = _FAILED.find(key)
    if failed is not None:
        raise ArgumentError(failed, field="model", code=CODE)
    try:
        return _fetch(model, revision, where)
    except KernelcfgError as exc:
        _FAILED.keep(key, exc.message)
        raise


_FAILED: Answers[tuple[str, str | None, _Where], str] = Answers(256)
"""The failures met in this process, by model, revision and where it was asked."""


def _where(environ: Mapping[str, str], cache: Path) -> _Where:
    """Where and how to ask, as ``environ`` says now (not as when huggingface_hub was
    imported: a batch line's ``--env`` may name another endpoint or token)."""
    endpoint = environ.get("HF_ENDPOINT", "").strip().rstrip("/") or None
    offline = environ.get("HF_HUB_OFFLINE", "").strip().upper() in _TRUE
    return _Where(endpoint, str(cache), environ.get("HF_TOKEN") or None, offline)


def _fetch(model: str, revision: str | None, where: _Where) -> str:
    """:func:`fetch`'s work, once the request is known to be asked."""
    hub = _hub_module(model)
    with _quiet():
        config = _download(hub, model, "config.json", revision, where)
        if not _has_quantization(config):
            for name in _BESIDE:
                _download(hub, model, name, revision, where, optional=True)
    return config


def _hub_module(model: str) -> Any:
    """``huggingface_hub``, imported now (never when kernelcfg starts)."""
    try:
        import huggingface_hub
    except ImportError:
        raise ArgumentError(
            f"downloading the config.json of {bounded.shown(model)} needs huggingface_hub, "
            f"which is not installed: {EXTRA}",
            field="model",
            code=CODE,
        ) from None
    return huggingface_hub


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No progress bar and no log line of ``huggingface_hub``'s while it fetches: what
    goes wrong is kernelcfg's one line. Its settings are put back after."""
    import logging

    from huggingface_hub.utils.logging import get_logger  # sets its level, once imported
    from huggingface_hub.utils.tqdm import (
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    group = "huggingface_hub"  # its progress bars' group
    bars = not are_progress_bars_disabled(group)
    logger = get_logger()  # the root of its loggers
    level = logger.level
    logger.setLevel(logging.ERROR)
    if bars:
        disable_progress_bars(group)
    try:
        yield
    finally:
        logger.setLevel(level)
        if bars:
            enable_progress_bars(group)


def _download(
    hub: Any, model: str, name: str, revision: str | None, where: _Where, *, optional: bool = False
) -> str:
    """One file into the cache, its path; an optional file the repository lacks is
    skipped (``""``)."""
    from huggingface_hub import errors

    try:
        path: str = hub.hf_hub_download(
            model,
            name,
            revision=revision,
            cache_dir=where.cache,
            endpoint=where.endpoint,
            token=where.token,
            local_files_only=where.offline,
        )
    except errors.LocalEntryNotFoundError as exc:  # before EntryNotFoundError: 0.x's subclass
        if optional:
            return ""
        raise _failed(_not_cached(model, revision, where, exc)) from None
    except errors.EntryNotFoundError:
        if optional:
            return ""
        raise _failed(_missing(model, f"no config.json{_at(revision)}", where)) from None
    except _errors() as exc:
        raise _failed(_explain(exc, model, name, revision, where)) from None
    return path


def _errors() -> tuple[type[BaseException], ...]:
    """What a download raises for a refusal, the network or the disk: ``huggingface_hub``'s
    HTTP errors and ``requests``' are ``OSError``; ``httpx``'s are its own."""
    found: list[type[BaseException]] = [OSError, ValueError]
    for name in ("httpx2", "httpx"):
        error = getattr(sys.modules.get(name), "HTTPError", None)
        if isinstance(error, type) and issubclass(error, BaseException):
            found.append(error)
    return tuple(found)


def _failed(message: str) -> ArgumentError:
    """A failure to fetch, as the error every caller reports (exit 2)."""
    return ArgumentError(message, field="model", code=CODE)


def _missing(model: str, what: str, where: _Where) -> str:
    """What is missing on the Hub (``'org/name' has no config.json on the Hub``), and
    what to do."""
    return (
        f"{bounded.shown(model)} has {what} on {where.hub}: check the model id and "
        "--revision; kernelcfg reads a model's config.json only (else give --architecture, "
        "or a local --hf-config-path)"
    )


def _at(revision: str | None) -> str:
    """`` at revision 'r'``, or nothing for the default branch."""
    return f" at revision {bounded.shown(revision)}" if revision else ""


def _not_cached(model: str, revision: str | None, where: _Where, exc: BaseException) -> str:
    """The file is not in the cache, and the Hub could not be asked: offline, or the
    network (the cause ``huggingface_hub`` chained) failed."""
    what = (
        f"the config.json of {bounded.shown(model)}{_at(revision)} is not in the Hugging Face cache"
    )
    if where.offline:
        return (
            f"{what} ({bounded.shown(where.cache)}) and HF_HUB_OFFLINE is set: run "
            f"`kernelcfg fetch {model}` where the Hub can be reached, or unset HF_HUB_OFFLINE"
        )
    cause = exc.__cause__ or exc.__context__ or exc
    return (
        f"{what} and {where.hub} cannot be reached ({bounded.cut(bounded.reason(cause), 200)}): "
        "check the network, proxy or HF_ENDPOINT, or run `kernelcfg fetch` where the Hub can "
        "be reached"
    )


def _explain(exc: BaseException, model: str, name: str, revision: str | None, where: _Where) -> str:
    """A refusal of the Hub's (gated, missing repository or revision, another HTTP
    status), or a failure of the disk or the network, as one line."""
    from huggingface_hub import errors

    if isinstance(exc, errors.GatedRepoError):
        return (
            f"{bounded.shown(model)} is a gated repository and {_token_said(where)}: accept "
            f"its terms on the model's Hub page, then set HF_TOKEN to a token of that account"
        )
    if isinstance(exc, errors.RepositoryNotFoundError):
        return (
            f"{bounded.shown(model)} is not a model repository on {where.hub}, or it is "
            f"private and {_token_said(where)}: check the id, or set HF_TOKEN to a token that "
            "can read it"
        )
    if isinstance(exc, errors.RevisionNotFoundError):
        return _missing(model, f"no revision {bounded.shown(revision)}", where)
    if isinstance(exc, errors.HfHubHTTPError) and exc.response is not None:
        status = exc.response.status_code
        return (
            f"{where.hub} answered HTTP {status} for {name} of {bounded.shown(model)}"
            f"{_status_hint(status)}"
        )
    if isinstance(exc, OSError) and exc.filename is not None:
        return (
            f"cannot write {name} of {bounded.shown(model)} into the Hugging Face cache "
            f"({bounded.shown(where.cache)}): {exc.strerror or bounded.reason(exc)}; set "
            "HF_HUB_CACHE (or HF_HOME) to a folder this user can write"
        )
    return (
        f"cannot download {name} of {bounded.shown(model)} from {where.hub} "
        f"({bounded.cut(bounded.reason(exc), 200)}): check the network, proxy or HF_ENDPOINT"
    )


def _token_said(where: _Where) -> str:
    """What the request carried, in words."""
    return "the token in HF_TOKEN has no access to it" if where.token else "HF_TOKEN is not set"


def _status_hint(status: int) -> str:
    """What to do about an HTTP status the Hub answered with."""
    if status in (401, 403):
        return ": set HF_TOKEN to a token that can read it"
    if status == 429:
        return ": too many requests; wait, or set HF_TOKEN (a logged-in user may ask more)"
    if status >= 500:
        return ": the Hub is failing; try again later"
    return ""


def _has_quantization(config: str) -> bool:
    """Whether the fetched config.json holds a ``quantization_config`` (then vLLM reads
    no file beside it); a file kernelcfg cannot read says so later, where it is read."""
    try:
        data = bounded.loads_json(bounded.read_text(config, "config.json"), "config.json")
    except (KernelcfgError, OSError):
        return True
    return isinstance(data, dict) and data.get("quantization_config") is not None
