"""What kernelcfg reads about the model: its ``config.json``, downloaded only on request.

From, first to last: ``--hf-config-path`` (a folder or a ``config.json``; a hub id as
MODEL is one), MODEL when it is a local folder, and — for a hub id (``org/name``) — the
local Hugging Face cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
``~/.cache/huggingface/hub``), at the snapshot vLLM's ``--revision`` names (else the one
``refs/main`` names, else the newest); with ``--download``, a hub id not in the cache is
fetched into it (:mod:`kernelcfg.flags.hub`). The cache folder is the caller's: this
process's environment names it, never a launch's own (``--env``, a scanned file's
``ENV``), which describes vLLM's container, not the machine kernelcfg runs on. It fills
the inputs' architectures, quantisation method and scheme, keeps the whole file
(attention reads its shape), and says where they came from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kernelcfg.base import bounded
from kernelcfg.base.answers import LARGE, Answers
from kernelcfg.base.errors import ArgumentError
from kernelcfg.base.problems import Problem
from kernelcfg.flags.hf_paths import hub_cache
from kernelcfg.flags.model_facts import typed
from kernelcfg.vllm.inputs import Inputs

__all__ = ["CODES", "hub_cache", "read"]

CODES = frozenset(
    {"model-config-value", "model-config-unreadable", "model-cache-broken", "hub-cache-unknown"}
)
"""The codes of the problems met reading the model's files (``why`` shows them too)."""


def read(
    inputs: Inputs,
    hf_config_path: str | None,
    *,
    revision: str | None = None,
    download: bool = False,
    root: str | None = None,
) -> None:
    """Fill ``inputs`` from the model's ``config.json`` where one can be found here, or,
    with ``download``, fetched from the Hub for a hub id whose file is not here (a
    failure to fetch raises :class:`ArgumentError`, exit 2). ``revision`` is vLLM's
    ``--revision``; with ``root`` (a scanned file's repository), a local path outside it
    is not read."""
    for candidate, source in ((hf_config_path, "--hf-config-path"), (inputs.model, "local folder")):
        if not candidate:
            continue
        if root is not None and _outside(candidate, root):
            _note_outside(inputs, candidate, root, given=source == "--hf-config-path")
            continue
        found = _local_config(candidate)
        if found is not None:
            config_file, info = found
            _apply(inputs, *_load(config_file, info), config_file, source)
            return
        given = source == "--hf-config-path"
        if _from_hub_id(inputs, candidate, revision, download=download):
            return
        if _note_not_local(inputs, candidate, given=given, revision=revision):
            return  # a hub id as --hf-config-path: vLLM reads no config from MODEL


def _outside(candidate: str, root: str) -> bool:
    """Whether ``candidate`` is a path here that resolves outside ``root``."""
    if not os.path.lexists(candidate):
        return False
    real, top = os.path.realpath(candidate), os.path.realpath(root)
    return os.path.commonpath((real, top)) != top


def _note_outside(inputs: Inputs, candidate: str, root: str, *, given: bool) -> None:
    """Say that a path a scanned launch names outside its repository is not read."""
    inputs.notes.append(
        Problem(
            "info",
            "model-not-read",
            "hf_config_path" if given else "model",
            f"{bounded.shown(candidate)}: not read: outside the repository "
            f"({bounded.shown(root)}); it names a folder of vLLM's container, so the model's "
            "architectures are unknown unless given with --architecture",
        )
    )


def _from_hub_id(inputs: Inputs, model: str, revision: str | None, *, download: bool) -> bool:
    """Read ``org/name``'s config.json from the caller's cache, else (``download``) fetch
    it into that cache; ``False`` when it is neither there nor fetched, ``True`` when it
    was read or what is there is reported broken."""
    from kernelcfg.flags import hub  # the module that fetches: only for a hub id

    if not hub.is_hub_id(model):
        return False
    cache = hub_cache(os.environ)
    if isinstance(cache, str):
        inputs.notes.append(
            Problem(
                "info",
                "hub-cache-unknown",
                "model",
                f"{cache}; kernelcfg reads no Hugging Face cache, so the architectures of "
                f"{bounded.shown(model)} are unknown unless given with --architecture",
            )
        )
        return True
    if _from_cache(inputs, model, cache, revision, guess=not download):
        return True
    if not download:
        return False
    config_file = hub.fetch(model, revision=revision, environ=os.environ, cache=cache)
    if _from_cache(inputs, model, cache, revision, guess=False):  # through the same guard
        return True
    raise ArgumentError(
        f"the config.json of {bounded.shown(model)} was fetched to "
        f"{bounded.shown(config_file)}, which cannot be read back",
        field="model",
        code=hub.CODE,
    )


def _from_cache(
    inputs: Inputs, model: str, cache: Path, revision: str | None, *, guess: bool
) -> bool:
    """Read ``org/name``'s config.json from the local cache; ``False`` when it is not
    there (at ``revision``; ``guess``: without one, the newest snapshot stands in for a
    missing ``refs/main``), ``True`` when it was read or what is there is reported
    broken."""
    org, name = model.split("/")
    folder = os.path.join(cache, f"models--{org}--{name}")
    if not os.path.isdir(folder):  # not downloaded here (most lines): one stat
        return False
    try:
        found = _cached_config(folder, revision, guess=guess)
    except _BrokenCacheError as exc:
        inputs.notes.append(
            Problem(
                "warning",
                "model-cache-broken",
                "model",
                f"{bounded.shown(model)} is in the Hugging Face cache ({bounded.shown(folder)}) "
                f"but broken: {exc}; kernelcfg cannot read the model's config.json there",
            )
        )
        return True
    if found is None:
        return False
    _apply(inputs, *_load(*found), found[0], "Hugging Face cache")
    return True


class _BrokenCacheError(Exception):
    """What is broken in a model's cache folder, as one line (its paths shown)."""


def _cached_config(
    folder: str, revision: str | None, *, guess: bool
) -> tuple[str, os.stat_result] | None:
    """The config.json of the snapshot ``revision`` names (by default ``refs/main``, else,
    with ``guess``, the newest snapshot) and its ``stat``; ``None`` when that snapshot,
    or its config.json, is not there. Every path must resolve inside ``folder``: a
    snapshot's files are links into ``../../blobs``, never out of the model's folder."""
    snapshot = _snapshot(folder, revision, guess=guess)
    if snapshot is None:
        return None
    config_file = os.path.join(folder, "snapshots", snapshot, "config.json")
    if not os.path.lexists(config_file):  # the snapshot holds other files only
        return None
    root = os.path.realpath(folder)
    real = os.path.realpath(config_file)
    if os.path.commonpath((root, real)) != root:
        raise _BrokenCacheError(
            f"snapshots/{snapshot}/config.json leads to {bounded.shown(real)}, outside the "
            "model's folder"
        )
    info, problem = bounded.file_stat(real)
    if info is None:
        raise _BrokenCacheError(f"snapshots/{snapshot}/config.json: {problem}")
    return config_file, info


_MAX_REF = 256
"""The most bytes of a ``refs/`` file read (a revision is 40 hex digits)."""
_REVISION = re.compile(r"[0-9A-Za-z_][0-9A-Za-z_.-]{0,127}")
"""What a revision named in a ``refs/`` file may look like (a commit hash is 40 hex
digits): never a path."""
_COMMIT = re.compile(r"[0-9a-f]{40}")
"""A commit hash, which names a snapshot folder itself."""


def _snapshot(folder: str, revision: str | None, *, guess: bool) -> str | None:
    """The snapshot ``refs/REVISION`` names (a branch or tag ``huggingface_hub`` fetched),
    or REVISION itself when it is a commit hash with a snapshot; without a revision, the
    one ``refs/main`` names, else (``guess``: when no download will say) the newest
    one. ``None``: that revision is not here."""
    from kernelcfg.flags import hub

    if revision is not None and not hub.safe_revision(revision):
        return None
    name = revision or "main"
    ref = os.path.join(folder, "refs", name)
    if os.path.lexists(ref):
        return _revision(ref, name)
    if revision is not None:
        snapshot = os.path.join(folder, "snapshots", revision)
        return revision if _COMMIT.fullmatch(revision) and os.path.isdir(snapshot) else None
    if not guess:
        return None
    try:
        with os.scandir(os.path.join(folder, "snapshots")) as entries:
            snapshots = [(e.stat().st_mtime, e.name) for e in entries if e.is_dir()]
    except OSError as exc:
        raise _BrokenCacheError(f"snapshots: {exc.strerror or type(exc).__name__}") from None
    if not snapshots:
        raise _BrokenCacheError("snapshots holds no snapshot")
    return max(snapshots)[1]


def _revision(ref: str, name: str) -> str:
    """The revision a ``refs/NAME`` file names: a short word, never a path."""
    info, problem = bounded.file_stat(ref)
    if info is None:
        raise _BrokenCacheError(f"refs/{name}: {problem}")
    if info.st_size > _MAX_REF:
        raise _BrokenCacheError(f"refs/{name} is {info.st_size:,} bytes long, not a revision")
    try:
        commit = bounded.read_text(ref, f"refs/{name}", limit=_MAX_REF).strip()
    except ArgumentError as exc:
        raise _BrokenCacheError(exc.message) from None
    if not _REVISION.fullmatch(commit):
        raise _BrokenCacheError(f"refs/{name} holds {bounded.shown(commit)}, not a revision")
    return commit


Loaded = tuple[dict[str, Any], tuple[Problem, ...]]
"""A config.json as kernelcfg keeps it: its facts typed (``model_facts.typed``) and the
warnings for what was ignored or cut."""


def _load(
    config_file: str, info: os.stat_result, parse: Callable[[str], Loaded] | None = None
) -> tuple[Loaded, tuple[str, int, int, int]]:
    """The parsed file and its identity (from ``info``, the ``stat`` its finder took),
    read once per process while it is unchanged (a batch names the same model line after
    line: ``make bench`` measured reading it as a fifth of a resolve with a model).
    ``parse`` reads it (default: as a model's config.json)."""
    key = (config_file, info.st_ino, info.st_size, info.st_mtime_ns)
    return _LOADED.get(key, lambda: (parse or _parse)(config_file)), key


_LOADED: Answers[tuple[str, int, int, int], Loaded] = Answers(64, text=LARGE)
"""The config.json files read in this process (never changed by a reader)."""


def _parse(config_file: str) -> Loaded:
    data = bounded.loads_json(
        bounded.read_text(config_file, "config.json"), f"config.json {bounded.shown(config_file)}"
    )
    if not isinstance(data, dict):
        raise ArgumentError(
            f"{bounded.shown(config_file)} holds a JSON {type(data).__name__}, not the "
            "mapping a model's config.json is; vLLM cannot load it either",
            field="hf_config_path",
        )
    facts, warnings = typed(data, bounded.shown(config_file))
    return facts, tuple(warnings)


def _local_config(candidate: str) -> tuple[str, os.stat_result] | None:
    """The ``config.json`` a model path names and its ``stat``, or ``None`` when it names
    none here (one ``stat`` for a folder, the common case: a batch asks line after line)."""
    inside = os.path.join(candidate, "config.json")
    info = bounded.file_stat(inside)[0]
    if info is not None:
        return inside, info
    info = bounded.file_stat(candidate)[0] if os.path.basename(candidate) == "config.json" else None
    return (candidate, info) if info is not None else None


def _note_not_local(inputs: Inputs, candidate: str, *, given: bool, revision: str | None) -> bool:
    """Say why the model's facts are not read from ``candidate``; ``True`` when it is a
    hub id given as ``--hf-config-path`` (vLLM reads the config there, not from MODEL)."""
    from kernelcfg.flags import hub

    problem = bounded.file_problem(candidate)
    hub_id = hub.is_hub_id(candidate)
    if not hub_id and (given or (problem is not None and _looks_like_path(candidate))):
        reason = problem or "it holds no config.json"
        inputs.notes.append(
            Problem(
                "warning",
                "model-config-unreadable",
                "hf_config_path" if given else "model",
                f"{bounded.shown(candidate)}: {reason}; kernelcfg cannot read the model's "
                "architectures or quantisation from it (vLLM would fail to load it)",
            )
        )
        return False
    at = f" at revision {bounded.shown(revision)}" if revision else ""
    inputs.notes.append(
        Problem(
            "info",
            "model-not-local",
            "hf_config_path" if given else "model",
            f"{bounded.shown(candidate)} is neither a local folder nor in the local Hugging "
            f"Face cache{at}; its architectures are unknown unless given with --architecture"
            + (", or its config.json fetched from the Hub with --download" if hub_id else ""),
        )
    )
    return given and hub_id


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", "./", "../", "~")) or text.count("/") > 1


def _apply(
    inputs: Inputs,
    loaded: Loaded,
    key: tuple[str, int, int, int],
    config_file: str,
    source: str,
) -> None:
    data, warnings = loaded
    inputs.model_source = source
    inputs.model_config_file = config_file
    inputs.model_config_key = key
    inputs.hf_config = data
    inputs.notes.extend(warnings)
    archs = data.get("architectures")
    if isinstance(archs, list) and inputs.architectures is None:
        inputs.architectures = list(archs)
        inputs.sources["architectures"] = config_file
    _quantisation(inputs, data, config_file)


def _quantisation(inputs: Inputs, data: dict[str, Any], config_file: str) -> None:
    """The checkpoint's quantisation as vLLM reads it (``vllm.checkpoint``): its method
    (when ``--quantization`` names none), its scheme (when ``--quant-scheme`` names none),
    the kinds of linear layer it builds, and the KV-cache dtype ``auto`` becomes. ModelOpt
    0.29 and older keep the dict in ``hf_quant_config.json`` beside the config (vLLM reads
    it when config.json has none)."""
    from kernelcfg.vllm.checkpoint import (
        kv_cache_dtype_of,
        linear_layers,
        quantization_config_of,
    )

    quant = quantization_config_of(data)
    if quant is None:
        side, warnings = _side_quant_config(config_file)
        inputs.notes.extend(warnings)
        if side is not None:
            inputs.hf_config = data = {**data, "quantization_config": side}
            quant = quantization_config_of(data)
    kv_cache = kv_cache_dtype_of(quant)
    if inputs.kv_cache_dtype == "auto" and kv_cache not in (None, "auto"):
        inputs.kv_cache_dtype = str(kv_cache)
        inputs.sources["kv_cache_dtype"] = config_file
    user = inputs.quantization
    if quant is not None and user is None and quant.get("quant_method"):
        inputs.quantization = str(quant["quant_method"])
        inputs.sources["quantization"] = config_file
    if inputs.quant_scheme is not None:
        return
    dtype = inputs.dtype if inputs.dtype != "auto" else _checkpoint_dtype(data)
    found = linear_layers(quant, user, data.get("model_type"), dtype)
    inputs.linear_kinds = found.kinds
    if found.scheme is not None:
        inputs.quant_scheme = found.scheme
        inputs.sources["quant_scheme"] = config_file


def _checkpoint_dtype(data: Mapping[str, Any]) -> str | None:
    """The dtype the checkpoint was saved in (``torch_dtype``, newer ``dtype``; the text
    config's for a multimodal model)."""
    for where in (data, data.get("text_config")):
        if isinstance(where, Mapping):
            found = where.get("torch_dtype") or where.get("dtype")
            if isinstance(found, str):
                return found
    return None


def _side_quant_config(
    config_file: str,
) -> tuple[dict[str, Any] | None, tuple[Problem, ...]]:
    """``hf_quant_config.json`` beside ``config_file``, typed as a quantisation config
    (``None`` when there is none, or it is not a JSON mapping), and the warnings for
    what was ignored in it."""
    side = os.path.join(os.path.dirname(config_file), "hf_quant_config.json")
    info = bounded.file_stat(side)[0]
    if info is None:
        return None, ()
    (data, warnings), _key = _load(side, info, _parse_side)
    return (data or None), warnings


def _parse_side(path: str) -> Loaded:
    """``hf_quant_config.json``, its facts typed as a ``quantization_config`` (``{}``
    when it holds no JSON mapping)."""
    data = bounded.loads_json(bounded.read_text(path, "hf_quant_config.json"), bounded.shown(path))
    if not isinstance(data, dict):
        return {}, ()
    facts, warnings = typed({"quantization_config": data}, bounded.shown(path))
    quant = facts.get("quantization_config")
    return (quant if isinstance(quant, dict) else {}), tuple(warnings)
