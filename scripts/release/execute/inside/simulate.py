"""Runs inside a release's throwaway venv (it imports vLLM): the simulated hardware and
installs under which vLLM's own selection code is executed on a CPU machine.

- The platform: ``vllm.platforms.current_platform`` is replaced, before any vLLM module
  binds it, by a proxy forwarding to one target object at a time, a subclass of vLLM's
  own CUDA platform class whose device queries answer the target's capability and name.
- The installs: vLLM's *library* probes (``has_flashinfer*``, ``has_deep_gemm``,
  ``_has_module``, ...) are replaced by answers for the world simulated; a probe that
  also reads the device (its source names ``current_platform`` or a capability) is never
  replaced: it runs, and calls the replaced library probes.
- Caches: every ``functools`` cache in a loaded vLLM module is cleared between targets
  and worlds.

Signatures and module names move between releases, so everything is found by name in
the installed code, and what was found is reported (``describe``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import sys
import types
from typing import Any

LIBRARY_MODULES = {
    "deep_ep": "deep_ep",
    "deep_gemm": "deep_gemm",
    "nixl_ep": "nixl_ep",
    "moonep": "moonep",
    "triton_kernels": "triton_kernels",
    "tilelang": "tilelang",
    "aiter": "aiter",
    "mori": "mori",
    "fbgemm_gpu": "fbgemm",
    "cutlass": "cutlass_dsl",
    "humming": "humming",
    "quark": "quark",
    "b12x": "b12x",
    "hpc": "hpc",
    "flashinfer": "flashinfer",
    "flashinfer_cubin": "flashinfer",
    "conch": "conch",
    "zentorch": "zentorch",
    "flydsl": "flydsl",
}
"""An importable module name (as vLLM probes it) -> the library name of the worlds."""

PROBE_MODULES = (
    "vllm.utils.import_utils",
    "vllm.utils.flashinfer",
    "vllm.utils.deep_gemm",
    "vllm.utils.b12x",
    "vllm.utils.hpc",
    "vllm.model_executor.layers.quantization.utils.flashinfer_utils",
    "vllm.model_executor.layers.quantization.utils.flashinfer_mxint4_moe",
)
"""Where vLLM keeps its library probes (those absent in a release are skipped)."""

DEVICE_WORDS = ("current_platform", "get_device_capability", "is_device_capability", "cuda.")


class PlatformProxy:
    """``current_platform`` for every vLLM module: forwards to the target set last."""

    def __init__(self) -> None:
        object.__setattr__(self, "_target", None)

    def set_target(self, target: Any) -> None:
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str) -> Any:
        target = object.__getattribute__(self, "_target")
        if target is None:
            raise AttributeError(f"no simulated target yet (asked for {name})")
        return getattr(target, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_target"), name, value)


PROXY = PlatformProxy()


def install_proxy() -> None:
    """Make the proxy vLLM's current platform before anything binds the name."""
    from vllm import platforms

    platforms._current_platform = PROXY  # type: ignore[attr-defined]
    if "current_platform" in vars(platforms):
        platforms.current_platform = PROXY  # type: ignore[attr-defined]


def cuda_target(name: str, capability: str, device_name: str) -> Any:
    """A subclass of vLLM's CUDA platform answering one GPU's device queries."""
    from vllm.platforms import cuda
    from vllm.platforms.interface import DeviceCapability

    base = getattr(cuda, "CudaPlatformBase", None) or cuda.CudaPlatform
    major, minor = (int(p) for p in capability.split("."))

    def get_device_capability(cls: Any, device_id: int = 0) -> Any:
        return DeviceCapability(major=major, minor=minor)

    def get_device_name(cls: Any, device_id: int = 0) -> str:
        return device_name

    def get_device_total_memory(cls: Any, device_id: int = 0) -> int:
        return 80 * 1024**3

    def is_fully_connected(cls: Any, ids: Any) -> bool:
        return True

    def device_count(cls: Any) -> int:
        return 8

    attrs = {
        "get_device_capability": classmethod(get_device_capability),
        "get_device_name": classmethod(get_device_name),
        "get_device_total_memory": classmethod(get_device_total_memory),
        "is_fully_connected": classmethod(is_fully_connected),
        "device_count": classmethod(device_count),
    }
    cls = type(f"Simulated_{name.replace('-', '_')}", (base,), attrs)
    return cls()


# ---------------------------------------------------------------- install worlds
def _mentions_device(fn: Any) -> bool:
    try:
        source = inspect.getsource(inspect.unwrap(fn))
    except (OSError, TypeError):
        return True
    body = source.split(":", 1)[-1]
    return any(word in body for word in DEVICE_WORDS)


def _library_of_probe(name: str) -> str | None:
    if "flashinfer" in name:
        return "flashinfer"
    stem = name.removeprefix("has_").removeprefix("is_").removesuffix("_available")
    stem = stem.removesuffix("_v2")
    for module, library in LIBRARY_MODULES.items():
        if stem in (module, library) or stem == library.replace("_dsl", "dsl"):
            return library
    return {"cutedsl": "cutlass_dsl", "fbgemm_gpu": "fbgemm"}.get(stem)


class Worlds:
    """vLLM's library probes, found in the installed code, and their replacement."""

    def __init__(self) -> None:
        self.originals: dict[str, Any] = {}
        self.library: dict[str, str | None] = {}
        self.kept: dict[str, str] = {}
        self.libs: frozenset[str] = frozenset()
        for mod_name in PROBE_MODULES:
            try:
                module = importlib.import_module(mod_name)
            except Exception as exc:
                self.kept[mod_name] = f"not importable: {type(exc).__name__}"
                continue
            for attr, value in vars(module).items():
                if not callable(value) or getattr(value, "__module__", None) != mod_name:
                    continue
                if attr in ("_has_module", "_has_module_spec"):
                    self._take(mod_name, attr, value, "module")
                elif attr in ("_deep_gemm_nvcc_path", "_flashinfer_nvcc_path"):
                    self._take(mod_name, attr, value, "nvcc")
                elif attr == "_nvcc_version":
                    self._take(mod_name, attr, value, "nvcc_version")
                elif attr.startswith("has_") or (
                    attr.startswith("is_") and attr.endswith("_available")
                ):
                    library = _library_of_probe(attr)
                    if library is None:
                        self.kept[f"{mod_name}.{attr}"] = "no library named"
                    elif _mentions_device(value):
                        self.kept[f"{mod_name}.{attr}"] = "reads the device: runs as is"
                    else:
                        self._take(mod_name, attr, value, library)

    def _take(self, mod_name: str, attr: str, value: Any, library: str) -> None:
        self.originals[f"{mod_name}.{attr}"] = value
        self.library[f"{mod_name}.{attr}"] = library

    def _answer(self, key: str) -> Any:
        library = self.library[key]
        libs = self.libs
        if library == "module":

            def probe(module_name: str) -> bool:
                top = module_name.split(".", maxsplit=1)[0]
                if top == "vllm":  # a vendored copy: ships with every install
                    part = module_name.rsplit(".", maxsplit=1)[-1]
                    return LIBRARY_MODULES.get(part, part) in libs
                return LIBRARY_MODULES.get(top, "?") in libs

            return probe
        if library == "nvcc":
            return lambda *a, **k: "/usr/local/cuda/bin/nvcc" if "nvcc" in libs else None
        if library == "nvcc_version":
            return lambda *a, **k: (13, 0)
        return lambda *a, **k: library in libs

    def enter(self, libs: frozenset[str], env: dict[str, str]) -> None:
        """Simulate one world: which libraries are installed, which env vars set."""
        self.libs = libs
        for key in list(os.environ):
            if key.startswith("VLLM_") and key not in ("VLLM_LOGGING_LEVEL",):
                del os.environ[key]
        os.environ.update(env)
        replacements = {id(orig): self._answer(key) for key, orig in self.originals.items()}
        for key, orig in self.originals.items():
            mod_name, attr = key.rsplit(".", 1)
            setattr(sys.modules[mod_name], attr, replacements[id(orig)])
        # every name bound to an original probe elsewhere (`from ... import has_x`)
        self._rebind(replacements)
        clear_caches()

    def _rebind(self, replacements: dict[int, Any]) -> None:
        if not hasattr(self, "_bound"):
            bound: list[tuple[Any, str, int]] = []
            for module in list(sys.modules.values()):
                name = getattr(module, "__name__", "") or ""
                if not name.startswith("vllm") or not isinstance(module, types.ModuleType):
                    continue
                for attr, value in list(vars(module).items()):
                    if id(value) in replacements and f"{name}.{attr}" not in self.originals:
                        bound.append((module, attr, id(value)))
            self._bound = bound
        for module, attr, ident in self._bound:
            setattr(module, attr, replacements[ident])

    def describe(self) -> dict[str, Any]:
        return {
            "replaced": {k: self.library[k] for k in sorted(self.originals)},
            "rebound_elsewhere": sorted(
                f"{m.__name__}.{a}" for m, a, _ in getattr(self, "_bound", [])
            ),
            "kept": dict(sorted(self.kept.items())),
        }


def clear_caches() -> None:
    """Clear every functools cache of every loaded vLLM module (and their classes)."""
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "") or ""
        if not name.startswith("vllm") or not isinstance(module, types.ModuleType):
            continue
        for value in list(vars(module).values()):
            _clear(value)
            if isinstance(value, type) and value.__module__ == name:
                for member in vars(value).values():
                    _clear(getattr(member, "__func__", member))
    envs = sys.modules.get("vllm.envs")
    if envs is not None and hasattr(envs, "disable_envs_cache"):
        envs.disable_envs_cache()


def _clear(value: Any) -> None:
    if isinstance(value, functools._lru_cache_wrapper):
        value.cache_clear()


# ---------------------------------------------------------------- the model being served
class _Text:
    def __init__(self, model_type: str) -> None:
        self.model_type = model_type


def model_context(model_type: str) -> Any:
    """vLLM's current config as the oracles read it: a default ``VllmConfig`` whose
    model config is a stand-in holding only the model type (``hf_text_config``,
    ``hf_config``) and dtype, set with vLLM's own ``set_current_vllm_config``."""
    import torch
    from vllm.config import VllmConfig, set_current_vllm_config

    config = VllmConfig()
    stand_in = types.SimpleNamespace(
        hf_config=_Text(model_type),
        hf_text_config=_Text(model_type),
        dtype=torch.bfloat16,
        quantization=None,
        quantization_config=None,
        architectures=[],
    )
    object.__setattr__(config, "model_config", stand_in)
    return set_current_vllm_config(config)
