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
                for member in list(vars(value).values()):
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


def model_context(model_type: str, **config_fields: Any) -> Any:
    """vLLM's current config as the oracles read it: a ``VllmConfig`` (default, or with
    ``config_fields`` such as a ``kernel_config``) whose model config is a stand-in
    holding only the model type (``hf_text_config``, ``hf_config``) and dtype, set with
    vLLM's own ``set_current_vllm_config``."""
    import torch
    from vllm.config import VllmConfig, set_current_vllm_config

    config = VllmConfig(**config_fields)
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


# ---------------------------------------------------------------- more of the simulation
# (used by the linear / attention / top-k drivers; additive: the MoE driver does not
# call these)
CONSTANT_LINE = r"^([A-Z][A-Z0-9_]*)\s*=\s*([A-Za-z_][A-Za-z0-9_]*)\(\)\s*$"


class ImportTimeConstants:
    """Module constants vLLM computes once at import from the device (``NAME = f()``,
    e.g. ``CUTLASS_BLOCK_FP8_SUPPORTED = cutlass_block_fp8_supported()``): found in the
    loaded vLLM modules' source, recomputed by calling the same function for each target,
    and rebound wherever the name was imported."""

    def __init__(self) -> None:
        import re

        self.found: list[tuple[Any, str, Any]] = []
        for module in list(sys.modules.values()):
            name = getattr(module, "__name__", "") or ""
            if not name.startswith("vllm") or not isinstance(module, types.ModuleType):
                continue
            try:
                source = inspect.getsource(module)
            except (OSError, TypeError):
                continue
            for const, fn_name in re.findall(CONSTANT_LINE, source, flags=re.M):
                fn = vars(module).get(fn_name)
                if callable(fn) and (_mentions_device(fn) or "supported" in fn_name):
                    self.found.append((module, const, fn))
        self.users: dict[str, list[Any]] = {}
        for _module, const, _fn in self.found:
            self.users[const] = [
                m
                for m in list(sys.modules.values())
                if isinstance(m, types.ModuleType)
                and (getattr(m, "__name__", "") or "").startswith("vllm")
                and const in vars(m)
            ]

    def refresh(self) -> None:
        for module, const, fn in self.found:
            try:
                value = fn()
            except Exception:
                continue
            for user in self.users.get(const, [module]):
                setattr(user, const, value)

    def describe(self) -> list[str]:
        return sorted(f"{m.__name__}.{c} = {f.__name__}()" for m, c, f in self.found)


class _Anything(type):
    """A stand-in library object: a class (so annotations like ``X | None`` and
    subclassing work) whose attributes are stand-ins too and whose call answers yes
    (the library's own support queries, e.g. B12X's ``blockscaled.is_supported()``,
    say supported)."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(name, (), {})

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return True


class _AnyAttribute(types.ModuleType):
    """A stand-in for an installed library's (sub)module: every attribute exists."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(name, (), {})


def stand_in_submodules(libs: frozenset[str]) -> list[str]:
    """The library lookups that vLLM's device-reading probes and kernel checks make
    beside the probes ``Worlds`` replaces, answered for the world: each
    ``_get_submodule`` (FlashInfer's and B12X's lazy imports) returns a stand-in module
    for a library the world installs, and ``find_spec`` where a module imported it by
    name (``from importlib.util import find_spec``) a stand-in spec; other names are
    looked up for real. Returns what was replaced."""
    import importlib.machinery
    import importlib.util

    replaced = []

    def installed(name: str) -> bool:
        top = name.split(".", maxsplit=1)[0]
        return top in LIBRARY_MODULES and LIBRARY_MODULES[top] in libs

    for mod_name in ("vllm.utils.flashinfer", "vllm.utils.b12x"):
        module = sys.modules.get(mod_name)
        if module is None or not hasattr(module, "_get_submodule"):
            continue
        original = vars(module).setdefault("_kernelcfg_original", module._get_submodule)

        def get_submodule(name: str, _original: Any = original) -> Any:
            if name.split(".", maxsplit=1)[0] in LIBRARY_MODULES:
                return _AnyAttribute(name) if installed(name) else None
            return _original(name)

        module._get_submodule = get_submodule
        replaced.append(f"{mod_name}._get_submodule")

    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        top = name.split(".", maxsplit=1)[0]
        if top in LIBRARY_MODULES:
            return importlib.machinery.ModuleSpec(name, None) if installed(name) else None
        return real(name, *args, **kwargs)

    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "") or ""
        if name.startswith("vllm") and isinstance(module, types.ModuleType):
            bound = vars(module).get("find_spec")
            if bound is real or getattr(bound, "_kernelcfg", False):
                module.find_spec = find_spec
                replaced.append(f"{name}.find_spec")
    find_spec._kernelcfg = True  # type: ignore[attr-defined]
    return sorted(set(replaced))


class _StandInFinder:
    """Import hook: ``import NAME`` (and its submodules) gives a stand-in module for the
    packages named, where the real one is not installed in the venv."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        import importlib.machinery

        if not any(fullname == n or fullname.startswith(n + ".") for n in self.names):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> Any:
        module = _AnyAttribute(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: Any) -> None:
        return None


def install_stand_in_packages(names: list[str], placeholders: list[str] = ()) -> list[str]:  # type: ignore[assignment]
    """Make the named packages importable as stand-ins (those really installed are left
    alone), and the ``placeholders`` (dotted package names, e.g. a vLLM subpackage
    whose import chain needs GPU-only libraries) stand-ins even where installed; returns
    the names served. For packages that a release's install brings and whose import
    vLLM's selection modules need (e.g. ``flashinfer-python``, importable with ``pip
    install vllm`` even where its kernels are off)."""
    import importlib.util

    served = frozenset(
        [n for n in names if importlib.util.find_spec(n) is None] + list(placeholders)
    )
    if served:
        sys.meta_path.insert(0, _StandInFinder(served))
    return sorted(served)


def stand_in_torch_cuda() -> list[str]:
    """CPU torch answering the device queries backend modules make at import, from the
    current target: ``torch.cuda.get_device_properties`` (name, capability, SM count,
    memory; ``gcnArchName`` is the device name, as on a CUDA torch), and tensors
    allocated on ``cuda`` at import (workspaces) go to the ``meta`` device. Nothing is
    computed on them. Returns what was replaced."""
    import torch

    def properties(device: Any = None) -> Any:
        cc = PROXY.get_device_capability()
        name = PROXY.get_device_name()
        return types.SimpleNamespace(
            name=name,
            gcnArchName=name,
            major=cc.major,
            minor=cc.minor,
            multi_processor_count=132,
            total_memory=80 * 1024**3,
            L2_cache_size=50 * 1024**2,
        )

    torch.cuda.get_device_properties = properties
    torch.cuda.current_device = lambda: 0
    torch.cuda.device_count = lambda: 8
    replaced = ["torch.cuda.get_device_properties", "torch.cuda.current_device"]

    def on_meta(factory: Any) -> Any:
        def make(*args: Any, **kwargs: Any) -> Any:
            device = kwargs.get("device")
            if device is not None and str(device).startswith("cuda"):
                kwargs["device"] = "meta"
            return factory(*args, **kwargs)

        return make

    for name in ("empty", "zeros", "ones", "full", "arange"):
        setattr(torch, name, on_meta(getattr(torch, name)))
        replaced.append(f"torch.{name} (device cuda -> meta)")
    return replaced


def serve(run: Any) -> None:
    """A driver's entry point: the request as JSON on stdin, ``run(request)``'s answer as
    JSON on stdout. vLLM logs to stdout, so its lines are captured while ``run`` works; a
    failure's why (the model registry's "Error in inspecting model architecture"
    traceback, say) goes to stderr with it."""
    import contextlib
    import io
    import json

    request = json.load(sys.stdin)
    noise = io.StringIO()
    try:
        with contextlib.redirect_stdout(noise):
            answer = run(request)
    except BaseException:
        sys.stderr.write(noise.getvalue()[-8000:])
        raise
    json.dump(answer, sys.stdout)
