"""What kernelcfg reads about the model: its ``config.json``, never downloaded.

From, first to last: ``--hf-config-path`` (a folder or a ``config.json``), MODEL when it
is a local folder, and — when MODEL is a hub id (``org/name``) — the local Hugging Face
cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``), the
revision ``refs/main`` names (else the newest snapshot). It fills the inputs'
architectures, quantisation method and scheme, keeps the whole file (attention reads
its shape), and says where they came from.
"""

from __future__ import annotations

import os
from collections import ChainMap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernelcfg.base import bounded
from kernelcfg.base.answers import LARGE, Answers
from kernelcfg.base.errors import ArgumentError
from kernelcfg.base.problems import Problem
from kernelcfg.vllm.inputs import Inputs

__all__ = ["hub_cache", "read"]


def read(inputs: Inputs, hf_config_path: str | None, env: Mapping[str, str]) -> None:
    """Fill ``inputs`` from the model's ``config.json`` where one can be found here."""
    for candidate, source in ((hf_config_path, "--hf-config-path"), (inputs.model, "local folder")):
        if not candidate:
            continue
        found = _local_config(candidate)
        if found is None:
            if source == "local folder" and _from_cache(inputs, candidate, env):
                return
            _note_not_local(inputs, candidate, given=source == "--hf-config-path")
            continue
        config_file, info = found
        _apply(inputs, *_load(config_file, info), config_file, source)
        return


def hub_cache(env: Mapping[str, str]) -> Path:
    """The Hugging Face hub cache folder, as ``huggingface_hub`` finds it (worked out
    once per set of the variables it reads: every batch line that names a model asks,
    and the path arithmetic cost a sixth of such a line)."""
    read = (env.get("HF_HUB_CACHE"), env.get("HF_HOME"), env.get("XDG_CACHE_HOME"))
    home = os.environ.get("HOME")  # what expanduser and Path.home read
    return _HUB_CACHES.get((*read, home), lambda: _hub_cache(*read))


_HUB_CACHES: Answers[tuple[str | None, ...], Path] = Answers(8)


def _hub_cache(hub: str | None, hf_home: str | None, xdg: str | None) -> Path:
    if hub:
        return Path(hub).expanduser()
    if hf_home:
        return Path(hf_home).expanduser() / "hub"
    return Path(xdg or str(Path.home() / ".cache")).expanduser() / "huggingface" / "hub"


def _from_cache(inputs: Inputs, model: str, env: Mapping[str, str]) -> bool:
    """Read ``org/name``'s config.json from the local cache; ``False`` when not there."""
    parts = model.split("/")
    if len(parts) != 2 or not all(parts) or any(p in (".", "..") for p in parts):
        return False
    name = os.path.join(
        hub_cache(ChainMap(dict(env), os.environ)), f"models--{parts[0]}--{parts[1]}"
    )
    if not os.path.isdir(name):  # not downloaded here (most lines): one stat
        return False
    snapshot = _snapshot(Path(name))
    if snapshot is None:
        return False
    config_file = str(snapshot / "config.json")
    info = bounded.file_stat(config_file)[0]
    if info is None:
        return False
    _apply(inputs, *_load(config_file, info), config_file, "Hugging Face cache")
    return True


def _snapshot(folder: Path) -> Path | None:
    """The snapshot ``refs/main`` points at, else the newest one."""
    try:
        commit = bounded.read_text(str(folder / "refs" / "main"), "refs/main").strip()
    except ArgumentError:  # no refs/main (or not a readable file): the newest snapshot
        commit = ""
    if commit and "/" not in commit:
        return folder / "snapshots" / commit
    try:
        snapshots = [p for p in (folder / "snapshots").iterdir() if p.is_dir()]
    except OSError:
        return None
    return max(snapshots, key=lambda p: p.stat().st_mtime, default=None)


def _load(
    config_file: str, info: os.stat_result
) -> tuple[dict[str, Any], tuple[str, int, int, int]]:
    """The parsed file and its identity (from ``info``, the ``stat`` its finder took),
    read once per process while it is unchanged (a batch names the same model line after
    line: ``make bench`` measured reading it as a fifth of a resolve with a model)."""
    key = (config_file, info.st_ino, info.st_size, info.st_mtime_ns)
    return _LOADED.get(key, lambda: _parse(config_file)), key


_LOADED: Answers[tuple[str, int, int, int], dict[str, Any]] = Answers(64, text=LARGE)
"""The config.json files read in this process (never changed by a reader)."""


def _parse(config_file: str) -> dict[str, Any]:
    data = bounded.loads_json(
        bounded.read_text(config_file, "config.json"), f"config.json {bounded.shown(config_file)}"
    )
    if not isinstance(data, dict):
        raise ArgumentError(
            f"{bounded.shown(config_file)} holds a JSON {type(data).__name__}, not the "
            "mapping a model's config.json is; vLLM cannot load it either",
            field="hf_config_path",
        )
    return data


def _local_config(candidate: str) -> tuple[str, os.stat_result] | None:
    """The ``config.json`` a model path names and its ``stat``, or ``None`` when it names
    none here (one ``stat`` for a folder, the common case: a batch asks line after line)."""
    inside = os.path.join(candidate, "config.json")
    info = bounded.file_stat(inside)[0]
    if info is not None:
        return inside, info
    info = bounded.file_stat(candidate)[0] if os.path.basename(candidate) == "config.json" else None
    return (candidate, info) if info is not None else None


def _note_not_local(inputs: Inputs, candidate: str, *, given: bool) -> None:
    problem = bounded.file_problem(candidate)
    if given or (problem is not None and _looks_like_path(candidate)):
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
        return
    inputs.notes.append(
        Problem(
            "info",
            "model-not-local",
            "model",
            f"{bounded.shown(candidate)} is neither a local folder nor in the local Hugging "
            "Face cache; kernelcfg never downloads, so its architectures are unknown unless "
            "given with --architecture",
        )
    )


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", "./", "../", "~")) or text.count("/") > 1


def _apply(
    inputs: Inputs,
    data: dict[str, Any],
    key: tuple[str, int, int, int],
    config_file: str,
    source: str,
) -> None:
    inputs.model_source = source
    inputs.model_config_file = config_file
    inputs.model_config_key = key
    inputs.hf_config = data
    archs = data.get("architectures")
    if isinstance(archs, list) and inputs.architectures is None:
        inputs.architectures = [str(a) for a in archs]
        inputs.sources["architectures"] = config_file
    quant = data.get("quantization_config")
    if isinstance(quant, dict) and inputs.quantization is None:
        method = quant.get("quant_method")
        if isinstance(method, str):
            inputs.quantization = method
            inputs.sources["quantization"] = config_file
    if inputs.quant_scheme is None and (isinstance(quant, dict) or not inputs.quantization):
        from kernelcfg.vllm.quantization import scheme_from_model

        inputs.quant_scheme = scheme_from_model(quant if isinstance(quant, dict) else None)
        if inputs.quant_scheme:
            inputs.sources["quant_scheme"] = config_file
