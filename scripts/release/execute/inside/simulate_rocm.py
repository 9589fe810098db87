"""Runs inside a release's throwaway venv (it imports vLLM): the ROCm side of the
simulation (``simulate.py`` holds the CUDA side and what both share).

- The platform: a subclass of the release's own ``vllm.platforms.rocm.RocmPlatform``
  answering the target's device name, memory and topology (amdsmi is absent on a CPU
  host). Its capability is vLLM's own derivation: from ``_GCN_ARCH`` where the release
  derives it so, else from ``torch.cuda.get_device_capability``, answered here as HIP
  derives it from the gfx arch (gfx942 -> 9.4, gfx950 -> 9.5, gfx1100 -> 11.0).
- The gfx facts vLLM computes once at import: ``vllm.platforms.rocm._GCN_ARCH`` is set
  to the target's arch and every module-level ``_ON_*`` line of that module's source is
  re-evaluated in it (so ``on_gfx9()``, ``on_mi3xx()``, ``on_gfx950()``, ... answer the
  target through vLLM's own expressions).
- The aiter probe: ``vllm._aiter_ops.IS_AITER_FOUND`` (``find_spec("aiter")`` at
  import) answers whether the world installs aiter, rebound wherever it was imported;
  ``rocm_aiter_ops.refresh_env_variables()`` re-reads ``VLLM_ROCM_USE_AITER*`` from the
  world's env. Every other aiter decision (``is_aiter_found_and_supported``,
  ``rocm_aiter_ops.is_*_enabled``) is vLLM's code, run as is.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import types
from collections.abc import Iterator
from typing import Any

import simulate

ROCM_MODULE = "vllm.platforms.rocm"
AITER_MODULE = "vllm._aiter_ops"
FACT_LINE = r"^(_ON_[A-Z0-9_]+)\s*=\s*(.+)$"
"""A module-level gfx fact in ``vllm/platforms/rocm.py`` (``_ON_GFX9 = any(...)``)."""
STAND_IN = ("aiter", "mori")
"""ROCm libraries that vLLM's selection code imports where a world installs them: a
stand-in module (every attribute exists, calls answer yes) in those worlds only."""


def capability_of(gfx_arch: str) -> tuple[int, int]:
    """HIP's ``hipDeviceProp_t.major/minor`` for a gfx arch: ``gfx<M><m><stepping>``
    with a one-digit major below gfx10, two digits from gfx10 on."""
    digits = re.match(r"gfx(\d+)", gfx_arch)
    if digits is None:
        raise ValueError(f"not a gfx arch: {gfx_arch}")
    d = digits.group(1)
    if len(d) == 3 or (len(d) == 2 and gfx_arch[5:6].isalpha()):
        return int(d[0]), int(d[1])
    return int(d[:2]), int(d[2])


class _AllParameters(dict):  # type: ignore[type-arg]
    def __contains__(self, key: object) -> bool:
        return True


class _AnySignature(inspect.Signature):
    """A signature that has every parameter asked for (``"gate_mode" in
    inspect.signature(aiter.fused_moe.fused_moe).parameters``: a current aiter)."""

    @property
    def parameters(self) -> Any:  # type: ignore[override]
        return _AllParameters()


class _Current(simulate._Anything):
    """A stand-in object of a current release of the library: attributes exist, calls
    answer yes (its own probes of another library, ``is_<lib>_available`` / ``has_<lib>``,
    answer whether the world installs that one), signature probes find the parameter
    asked for."""

    @property
    def __signature__(self) -> inspect.Signature:
        return _AnySignature()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Current(name, (), {})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # the library's own probe of another library (aiter's is_flydsl_available):
        # whether the world installs that one
        name = self.__name__  # type: ignore[attr-defined]
        if name.startswith(("is_", "has_")):
            library = simulate._library_of_probe(name)
            if library is not None:
                return library in _WORLD_LIBS
        return True


def _rocm_ops(installed: bool) -> None:
    """The ROCm build's compiled ops (``vllm/_rocm_C``, the ``rocm_ops`` library of the
    worlds): ``torch.ops._rocm_C`` has every op where installed (vLLM probes them with
    ``hasattr(torch.ops._rocm_C, name)``), none elsewhere."""
    import torch

    if installed:
        torch.ops._rocm_C = _CurrentModule("_rocm_C")  # type: ignore[attr-defined]
    elif "_rocm_C" in vars(torch.ops):
        delattr(torch.ops, "_rocm_C")


_WORLD_LIBS: set[str] = set()
"""The libraries the world being simulated installs."""


class _CurrentModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Current(name, (), {})


AITER_FILES = ("configs/model_configs/minimax_m3_mxfp8_tuned_fmoe.csv",)
"""Files a current aiter ships that vLLM looks for beside ``aiter.__file__`` (0.25.0-0.30.0's
``is_aiter_mxfp8_moe_available``: the tuned config of ROCm/aiter#3811)."""


def _aiter_folder() -> str:
    import os
    import tempfile

    root = os.path.join(tempfile.gettempdir(), f"kernelcfg-aiter-stand-in-{os.getpid()}")
    for name in AITER_FILES:
        path = os.path.join(root, "aiter", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()
    return os.path.join(root, "aiter")


class _Finder(simulate._StandInFinder):
    def create_module(self, spec: Any) -> Any:
        module = _CurrentModule(spec.name)
        module.__path__ = []
        if spec.name == "aiter":
            module.__file__ = f"{_aiter_folder()}/__init__.py"
        return module


_CURRENT: dict[str, str] = {"gfx_arch": "gfx942", "device_name": "AMD Instinct MI300X"}


def _stand_in_torch() -> None:
    """CPU torch answering as ROCm torch does for the current target: the device
    properties' ``gcnArchName`` (the import-time fallback of ``_get_gcn_arch``) and
    ``torch.cuda.get_device_capability`` (older releases' capability)."""
    import torch

    def properties(device: Any = None) -> Any:
        major, minor = capability_of(_CURRENT["gfx_arch"])
        return types.SimpleNamespace(
            name=_CURRENT["device_name"],
            gcnArchName=_CURRENT["gfx_arch"],
            major=major,
            minor=minor,
            multi_processor_count=304,
            total_memory=192 * 1024**3,
            L2_cache_size=4 * 1024**2,
        )

    torch.cuda.get_device_properties = properties
    torch.cuda.get_device_capability = lambda device=None: capability_of(_CURRENT["gfx_arch"])
    torch.cuda.current_device = lambda: 0
    torch.cuda.device_count = lambda: 8


TRITON_ON_HIP: list[str] = []
"""What ``_triton_on_hip`` did (for ``meta``)."""


def _triton_on_hip() -> None:
    """Triton as on a ROCm host: its HIP driver is the one active driver (on a CPU host
    none is, so ``vllm.triton_utils`` would put placeholders in Triton's place and
    modules that use ``tl.bfloat16`` at import would fail), before vLLM checks it."""
    try:
        from triton.backends import backends
    except Exception as exc:  # no Triton in the venv
        TRITON_ON_HIP.append(f"triton not importable: {type(exc).__name__}")
        return
    for name, backend in backends.items():
        if backend.driver is not None:
            active = name == "amd"
            backend.driver.is_active = staticmethod(lambda active=active: active)
            TRITON_ON_HIP.append(f"triton.backends['{name}'].driver.is_active -> {active}")


def import_rocm(gfx_arch: str, device_name: str) -> Any:
    """Import ``vllm.platforms.rocm`` as a ROCm host with the first target would."""
    _CURRENT.update(gfx_arch=gfx_arch, device_name=device_name)
    _stand_in_torch()
    _triton_on_hip()
    from vllm.platforms import interface

    class ImportingRocm(interface.Platform):  # type: ignore[misc]
        """What ``current_platform`` is while vLLM's ROCm module itself imports (its
        import chain asks the platform, e.g. ``PIN_MEMORY``): a ROCm platform."""

        _enum = interface.PlatformEnum.ROCM
        device_name = "rocm"
        device_type = "cuda"
        dispatch_key = "CUDA"

        @classmethod
        def is_pin_memory_available(cls) -> bool:
            return True

    simulate.PROXY.set_target(ImportingRocm())
    return importlib.import_module(ROCM_MODULE)


class RocmFacts:
    """The import-time gfx facts and the aiter probe, recomputed per target and world."""

    def __init__(self, hide_importers: bool = False) -> None:
        """``hide_importers``: see ``_hide_importers`` (the attention driver, whose
        backend classes are imported by name per world)."""
        self.hide_importers = hide_importers
        self.rocm = importlib.import_module(ROCM_MODULE)
        source = inspect.getsource(self.rocm)
        self.lines = re.findall(FACT_LINE, source, flags=re.M)
        try:
            self.aiter: Any = importlib.import_module(AITER_MODULE)
        except Exception:  # a release without aiter ops
            self.aiter = None
        self.arch = ""
        self.finder = _Finder(frozenset())
        sys.meta_path.insert(0, self.finder)

    def set_target(self, gfx_arch: str, device_name: str) -> None:
        _CURRENT.update(gfx_arch=gfx_arch, device_name=device_name)
        self.arch = gfx_arch
        namespace = vars(self.rocm)
        if "_GCN_ARCH" in namespace:
            namespace["_GCN_ARCH"] = gfx_arch
        for name, expression in self.lines:
            namespace[name] = eval(expression, namespace)  # vLLM's own expression
        self._rebind_elsewhere([name for name, _ in self.lines])

    def set_world(self, libs: frozenset[str]) -> None:
        served = frozenset(n for n in STAND_IN if simulate.LIBRARY_MODULES[n] in libs)
        for name in list(sys.modules):
            if name.split(".", maxsplit=1)[0] in STAND_IN and name.split(".")[0] not in served:
                del sys.modules[name]
        self.finder.names = served
        if self.hide_importers:
            self._hide_importers("aiter" in served)
        _WORLD_LIBS.clear()
        _WORLD_LIBS.update(libs)
        _rocm_ops("rocm_ops" in libs)
        if self.aiter is None:
            return
        if hasattr(self.aiter, "IS_AITER_FOUND"):
            self.aiter.IS_AITER_FOUND = "aiter" in libs
            self._rebind_elsewhere(["IS_AITER_FOUND"], source=self.aiter)
        ops = getattr(self.aiter, "rocm_aiter_ops", None)
        if ops is not None and hasattr(ops, "refresh_env_variables"):
            ops.refresh_env_variables()

    def _hide_importers(self, aiter: bool) -> None:
        """Where the world lacks aiter, the loaded vLLM modules that import it at module
        level, unguarded (0.29.0-0.31.0's ``rocm_aiter_fa``: ``from aiter...`` under
        ``if current_platform.is_rocm():``), cannot be imported, as on such a host:
        their ``sys.modules`` entry is ``None`` (an import raises ``ImportError``) until
        a world installs aiter again. A module loaded in an earlier world would
        otherwise stay importable."""
        hidden = vars(self).setdefault("hidden", {})
        if aiter:
            sys.modules.update(hidden)
            hidden.clear()
            return
        for name, module in list(sys.modules.items()):
            if module is None or not name.startswith("vllm") or name in hidden:
                continue
            if _imports_aiter_at_load(module):
                hidden[name] = module
                sys.modules[name] = None  # type: ignore[assignment]

    def _rebind_elsewhere(self, names: list[str], source: Any = None) -> None:
        source = source or self.rocm
        for module in list(sys.modules.values()):
            mod_name = getattr(module, "__name__", "") or ""
            if module is source or not mod_name.startswith("vllm"):
                continue
            if not isinstance(module, types.ModuleType):
                continue
            for name in names:
                if name in vars(module):
                    setattr(module, name, getattr(source, name))

    def describe(self) -> dict[str, Any]:
        return {
            "gcn_arch": f"{ROCM_MODULE}._GCN_ARCH set to the target's gfx arch",
            "recomputed": [f"{n} = {e}" for n, e in self.lines],
            "aiter_probe": f"{AITER_MODULE}.IS_AITER_FOUND = 'aiter' in the world"
            if self.aiter is not None and hasattr(self.aiter, "IS_AITER_FOUND")
            else "absent",
            "aiter_env": "rocm_aiter_ops.refresh_env_variables() after the world's env",
            "triton": TRITON_ON_HIP,
            "aiter_importers": "where a world lacks aiter, the loaded vLLM modules that "
            "import it at load, unguarded, are not importable (sys.modules entry None): "
            + ", ".join(sorted(n for n, found in _IMPORTERS.items() if found)),
            "rocm_ops": "torch.ops._rocm_C has every op in the worlds installing rocm_ops "
            "(the ROCm build's compiled ops), none elsewhere",
            "stand_in_modules": f"{', '.join(STAND_IN)} importable as stand-ins of a current "
            "release (every attribute exists, calls answer yes but their probes of other "
            "libraries, e.g. aiter's is_flydsl_available, answer the world; signature "
            "probes such as aiter.fused_moe's gate_mode find their parameter) in the worlds "
            "that install them; aiter's __file__ is a folder holding the files vLLM looks "
            "for there: " + ", ".join(AITER_FILES),
        }


_IMPORTERS: dict[str, bool] = {}


def _imports_aiter_at_load(module: Any) -> bool:
    """Whether the module's own code imports aiter when it loads: an ``import aiter`` /
    ``from aiter... import`` among its top-level statements or under a top-level ``if``
    (never in a ``try``, a function or a class)."""
    import ast

    name = getattr(module, "__name__", "")
    if name not in _IMPORTERS:
        found = False
        try:
            tree = ast.parse(inspect.getsource(module))
        except Exception:
            tree = None
        stack = list(tree.body) if tree is not None else []
        while stack and not found:
            node = stack.pop()
            if isinstance(node, ast.If):
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    stack.extend(node.body + node.orelse)
            elif isinstance(node, ast.Import):
                found = any(a.name.split(".")[0] == "aiter" for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                found = (node.module or "").split(".")[0] == "aiter"
        _IMPORTERS[name] = found
    return _IMPORTERS[name]


def rocm_target(name: str, gfx_arch: str, device_name: str) -> Any:
    """A subclass of vLLM's ROCm platform answering one AMD GPU's device queries."""
    rocm = importlib.import_module(ROCM_MODULE)

    def get_device_name(cls: Any, device_id: int = 0) -> str:
        return device_name

    def get_device_total_memory(cls: Any, device_id: int = 0) -> int:
        return 192 * 1024**3

    def is_fully_connected(cls: Any, ids: Any) -> bool:
        return True

    def device_count(cls: Any) -> int:
        return 8

    attrs = {
        "get_device_name": classmethod(get_device_name),
        "get_device_total_memory": classmethod(get_device_total_memory),
        "is_fully_connected": classmethod(is_fully_connected),
        "device_count": classmethod(device_count),
        "_kernelcfg_gfx_arch": gfx_arch,
    }
    cls = type(f"Simulated_{name.replace('-', '_')}", (rocm.RocmPlatform,), attrs)
    return cls()


def make_target(name: str, spec: dict[str, Any], facts: RocmFacts | None) -> Any:
    """The target object for a CUDA or ROCm spec (``kind`` says which); a ROCm target
    also sets the gfx facts."""
    if spec.get("kind", "cuda") == "rocm":
        assert facts is not None
        facts.set_target(spec["gfx_arch"], spec["device_name"])
        return rocm_target(name, spec["gfx_arch"], spec["device_name"])
    return simulate.cuda_target(name, spec["capability"], spec["device_name"])


def first_target(targets: dict[str, Any], *, hide_importers: bool = False) -> RocmFacts | None:
    """Import the platform module of ``targets``' kind (one kind a driver process: the
    CUDA one, or the ROCm one for the first target's gfx arch) and make the first target
    current; the gfx facts for a ROCm run (``hide_importers``: see :class:`RocmFacts`),
    else ``None``."""
    name, spec = next(iter(targets.items()))
    facts = None
    if spec.get("kind") == "rocm":
        import_rocm(spec["gfx_arch"], spec["device_name"])
        facts = RocmFacts(hide_importers=hide_importers)
    else:
        importlib.import_module("vllm.platforms.cuda")
    simulate.PROXY.set_target(make_target(name, spec, facts))
    return facts


def each_world(
    targets: dict[str, Any],
    worlds: dict[str, Any],
    entered: simulate.Worlds,
    facts: RocmFacts | None,
) -> Iterator[tuple[str, str, frozenset[str]]]:
    """Every (target, world, the world's libraries), target by target:
    the target made current and the world entered (its libraries and env; on ROCm its
    gfx facts, and vLLM's caches cleared) before each is yielded."""
    for target, spec in targets.items():
        simulate.PROXY.set_target(make_target(target, spec, facts))
        for world, wspec in worlds.items():
            libs = frozenset(wspec["libraries"])
            entered.enter(libs, wspec.get("env", {}))
            if facts is not None:
                facts.set_world(libs)
                simulate.clear_caches()
            yield target, world, libs
