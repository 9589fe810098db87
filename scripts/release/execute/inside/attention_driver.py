"""Runs inside a release's throwaway venv: vLLM's own attention-backend selection
(``current_platform.get_attn_backend_cls`` as ``vllm/v1/attention/selector.py`` calls
it, with each backend's ``validate_configuration``) executed per (target, install world,
model feature set, ``--attention-backend`` value); for ``auto`` also the platform's
ordered candidates with each refusal reason (``get_valid_backends``, where the release
has it).

Reads the request (JSON, stdin; written by ``scripts/release/execute/attention.py``),
writes ``{"found": ..., "records": [...]}`` (JSON, stdout).
"""

from __future__ import annotations

import importlib
import inspect
import json
from typing import Any

import simulate
import simulate_rocm

SELECTOR = "vllm.v1.attention.selector"
REGISTRY = "vllm.v1.attention.backends.registry"


def _selector_config(feature: dict[str, Any]) -> Any:
    import torch

    selector = importlib.import_module(SELECTOR)
    config_cls = selector.AttentionSelectorConfig
    values = {
        "head_size": feature["head_size"],
        "dtype": getattr(torch, feature["dtype"]),
        "kv_cache_dtype": feature["kv_cache_dtype"],
        "block_size": feature.get("block_size"),
        "use_mla": feature["use_mla"],
        "has_sink": feature["has_sink"],
        "use_sparse": feature["use_sparse"],
    }
    return config_cls(**{k: v for k, v in values.items() if k in config_cls._fields})


def _name(path: str, enum: Any) -> str:
    for member in enum:
        try:
            if member.get_path() == path:
                return str(member.name)
        except Exception:
            continue
    return path.rsplit(".", maxsplit=1)[-1]


def _message(exc: Exception) -> str:
    return f"{type(exc).__name__}: {' | '.join(str(exc).splitlines())[:600]}"


def _select(enum: Any, value: str | None, config: Any, num_heads: int | None) -> Any:
    platform = simulate.PROXY
    params = inspect.signature(platform.get_attn_backend_cls).parameters
    selected = None if value is None else enum[value]
    kwargs: dict[str, Any] = {}
    if "attn_selector_config" in params:
        kwargs["attn_selector_config"] = config
    if "num_heads" in params:
        kwargs["num_heads"] = num_heads
    path = platform.get_attn_backend_cls(selected, **kwargs)
    if not path:
        raise ValueError(f"Invalid attention backend for {platform.device_name}")
    return path


def _candidates(config: Any, num_heads: int | None) -> list[list[Any]] | None:
    platform = simulate.PROXY
    if not hasattr(platform, "get_valid_backends"):
        return None
    capability = platform.get_device_capability()
    valid, invalid = platform.get_valid_backends(
        device_capability=capability, attn_selector_config=config, num_heads=num_heads
    )
    rows: list[tuple[int, str, str, list[str]]] = []
    for c in valid:  # CUDA: candidates with .backend/.priority; ROCm: (backend, priority)
        backend, priority = (c.backend, c.priority) if hasattr(c, "backend") else c
        rows.append((priority, backend.name, "ok", []))
    # ROCm's refusals carry no priority: they were found in priority order, in the
    # positions the valid ones leave free
    free = iter(sorted(set(range(len(valid) + len(invalid))) - {r[0] for r in rows}))
    for b, found in invalid.items():
        priority, reasons = found if isinstance(found, tuple) else (next(free), found)
        rows.append((priority, b.name, "rejected", list(reasons)))
    return [[name, verdict, reasons] for _, name, verdict, reasons in sorted(rows)]


def _auto(enum: Any, config: Any, num_heads: int | None) -> dict[str, Any]:
    try:
        backend = _name(_select(enum, None, config, num_heads), enum)
        out: dict[str, Any] = {"status": "selected", "backend": backend}
    except Exception as exc:
        out = {"status": "error", "message": _message(exc)}
    try:
        candidates = _candidates(config, num_heads)
    except Exception as exc:
        candidates = [["?", "error", [_message(exc)]]]
    if candidates is not None:
        out["candidates"] = candidates
    return out


def _explicit(enum: Any, value: str, config: Any, num_heads: int | None) -> dict[str, Any]:
    try:
        backend = _name(_select(enum, value, config, num_heads), enum)
    except Exception as exc:
        return {"status": "refused", "message": _message(exc)}
    if backend == value:
        return {"status": "honoured"}
    return {"status": "ignored", "backend": backend}


_MODEL_CONFIGS: dict[str, Any] = {}


def _model_config(feature: dict[str, Any]) -> Any:
    """vLLM's own ``ModelConfig`` for the feature's ``config.json`` (written alone into
    a temporary model folder; no tokenizer), one per distinct file and dtype."""
    import os
    import tempfile

    from vllm.config import ModelConfig

    key = json.dumps([feature["hf_config"], feature["dtype"]], sort_keys=True)
    if key not in _MODEL_CONFIGS:
        folder = tempfile.mkdtemp(prefix="kernelcfg-model-")
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as fh:
            json.dump(feature["hf_config"], fh)
        _MODEL_CONFIGS[key] = ModelConfig(
            model=folder, skip_tokenizer_init=True, dtype=feature["dtype"]
        )
    return _MODEL_CONFIGS[key]


def _vllm_config(feature: dict[str, Any]) -> Any:
    """The feature's run config: its KV-cache dtype (some selectors read the run-wide
    one), its model config, and its tensor-parallel size (set on the parallel config
    without the checks a real launch runs on it)."""
    from vllm.config import CacheConfig, VllmConfig

    config = VllmConfig(cache_config=CacheConfig(cache_dtype=feature["kv_cache_dtype"]))
    object.__setattr__(config, "model_config", _model_config(feature))
    parallel = config.parallel_config
    object.__setattr__(parallel, "tensor_parallel_size", feature["tensor_parallel_size"])
    return config


def _import_backends(enum: Any) -> list[str]:
    """Import every backend class once, before the worlds replace the library probes,
    so that names they import (``from vllm.utils.flashinfer import has_...``) are
    rebound with the others on every world change. The names that failed."""
    failed = []
    for member in enum:
        try:
            member.get_class()
        except Exception as exc:
            failed.append(f"{member.name}: {type(exc).__name__}: {str(exc)[:160]}")
    return failed


def run(request: dict[str, Any]) -> dict[str, Any]:
    import os

    os.environ["HF_HUB_OFFLINE"] = "1"
    simulate.install_proxy()
    found_pkgs = simulate.install_stand_in_packages(
        request["stand_in_packages"], request.get("placeholders", [])
    )
    torch_cuda = simulate.stand_in_torch_cuda()
    facts = simulate_rocm.first_target(request["targets"], hide_importers=True)
    importlib.import_module(SELECTOR)
    enum = importlib.import_module(REGISTRY).AttentionBackendEnum
    from vllm.config import set_current_vllm_config

    values = [m.name for m in enum]
    found: dict[str, Any] = {
        "backends": values,
        "stand_in_packages": found_pkgs,
        "torch_cuda": torch_cuda,
    }
    features = request["features"]
    configs = {f["id"]: _vllm_config(f) for f in features}
    found["import_failures"] = _import_backends(enum)
    worlds = simulate.Worlds()
    constants: simulate.ImportTimeConstants | None = None
    records = []
    each = simulate_rocm.each_world(request["targets"], request["worlds"], worlds, facts)
    for target, world, libs in each:
        found["submodules"] = simulate.stand_in_submodules(libs)
        if constants is None:
            constants = simulate.ImportTimeConstants()
        constants.refresh()
        for feature in features:
            config = _selector_config(feature)
            heads = feature.get("num_heads")
            with set_current_vllm_config(configs[feature["id"]]):
                auto = _auto(enum, config, heads)
                explicit = [_explicit(enum, v, config, heads) for v in values]
            records.append([target, feature["id"], world, auto, explicit])
    found["probes"] = worlds.describe()
    if facts is not None:
        found["rocm_facts"] = facts.describe()
    found["import_time_constants"] = constants.describe() if constants else []
    return {"found": found, "records": records}


if __name__ == "__main__":
    simulate.serve(run)
