"""Loaded by every Python process of a real ``vllm serve`` start of vLLM's CPU build
(``PYTHONPATH`` names this folder; ``scripts/release/execute/cpu_start.py``): records
what vLLM hashed into its compile-cache key and what it picked, returning every value
unchanged, so the start is the start it would be without it.

Recorded, one JSON file per process under ``$KERNELCFG_RECORD_DIR``:

- ``aot_factors``: what ``vllm.compilation.caching.aot_compile_hash_factors`` returned
  (the env hash, the config hash, the inductor factors), and beside it
  ``envs.compile_factors()`` (the env factors it hashed), the kernel config's own hash
  and fields, and the compilation settings;
- ``attention``: the backend class ``get_attn_backend`` returned, per call.

Nothing is patched but these two functions, after their module has run.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import sys
from typing import Any

_OUT = os.environ.get("KERNELCFG_RECORD_DIR")
_SEEN: dict[str, Any] = {}


def _write(key: str, value: Any) -> None:
    _SEEN.setdefault(key, []).append(value)
    if not _OUT:
        return
    path = os.path.join(_OUT, f"record-{os.getpid()}.json")
    with open(path + ".part", "w", encoding="utf-8") as fh:
        json.dump(_SEEN, fh, default=repr, sort_keys=True)
    os.replace(path + ".part", path)


def _kernel_config(vllm_config: Any) -> dict[str, Any]:
    kernel = getattr(vllm_config, "kernel_config", None)
    if kernel is None:
        return {}
    fields = {}
    for name in getattr(type(kernel), "__dataclass_fields__", {}) or vars(kernel):
        value = getattr(kernel, name, None)
        if name == "ir_op_priority" and value is not None:
            value = {
                op: list(getattr(value, op))
                for op in getattr(type(value), "__dataclass_fields__", {})
                if isinstance(getattr(value, op), (list, tuple))
            }
        fields[name] = (
            value if isinstance(value, (str, int, float, bool, type(None), dict)) else repr(value)
        )
    return {
        "fields": fields,
        "hash": kernel.compute_hash() if hasattr(kernel, "compute_hash") else None,
    }


def _patch_caching(module: Any) -> None:
    original = module.aot_compile_hash_factors

    def aot_compile_hash_factors(vllm_config: Any) -> Any:
        factors = original(vllm_config)
        from vllm import envs

        compilation = vllm_config.compilation_config
        _write(
            "aot_factors",
            {
                "factors": list(factors),
                "env_factors": envs.compile_factors(),
                "config_hash": vllm_config.compute_hash(),
                "kernel_config": _kernel_config(vllm_config),
                "compilation": {
                    "mode": getattr(compilation.mode, "name", str(compilation.mode)),
                    "backend": str(compilation.backend),
                    "cudagraph_mode": getattr(
                        compilation.cudagraph_mode, "name", str(compilation.cudagraph_mode)
                    ),
                },
                "environ": {k: v for k, v in os.environ.items() if k.startswith("VLLM_")},
            },
        )
        return factors

    module.aot_compile_hash_factors = aot_compile_hash_factors


def _patch_selector(module: Any) -> None:
    original = module.get_attn_backend

    def get_attn_backend(*args: Any, **kwargs: Any) -> Any:
        backend = original(*args, **kwargs)
        name = getattr(backend, "get_name", lambda: None)()
        _write("attention", {"class": getattr(backend, "__name__", repr(backend)), "name": name})
        return backend

    module.get_attn_backend = get_attn_backend


_PATCHES = {
    "vllm.compilation.caching": _patch_caching,
    "vllm.v1.attention.selector": _patch_selector,
}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a patch right after its module's code ran (the module is found as usual)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        patch = _PATCHES.get(name)
        if patch is None:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            patch(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


sys.meta_path.insert(0, _AfterImport())
