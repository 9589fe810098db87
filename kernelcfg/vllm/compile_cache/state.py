"""The state vLLM's config rules work on: one launch's field values per config class,
built from the release's defaults (``compile-config-X.Y.Z.json``), and the platform
facts the rules ask (the release's data, the target's capability, what is installed,
the environment as the release reads it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kernelcfg.base.errors import KernelcfgError
from kernelcfg.targets.presets import Target, gfx_capability
from kernelcfg.vllm import releases
from kernelcfg.vllm.compile_cache.model import ModelFacts

__all__ = ["UNSET", "Build", "Launch", "capability", "config_data", "supported_dtypes"]

UNSET = object()
"""A field whose default is not a constant and that no rule has set."""


@cache
def config_data(version: str) -> dict[str, Any]:
    """The release's ``compile-config-X.Y.Z.json``."""
    data = releases.release_data("compile-config", releases.parse_version(version))
    if data is None:
        raise KernelcfgError(f"no config-factor data for vLLM {version}", code="unknown_release")
    return data


def capability(target: Target) -> tuple[int, int] | None:
    """The target's compute capability as ``(major, minor)`` (ROCm: from the gfx arch)."""
    if target.capability:
        major, _, minor = target.capability.partition(".")
        return int(major), int(minor or 0)
    if target.kind == "rocm" and target.gfx_arch:
        return gfx_capability(target.gfx_arch)
    return None


def supported_dtypes(target: Target) -> list[str]:
    """``current_platform.supported_dtypes``: no bfloat16 on CUDA before 8.0."""
    cap = capability(target)
    if target.kind == "cuda" and cap is not None and cap[0] * 10 + cap[1] < 80:
        return ["torch.float16", "torch.float32"]
    return ["torch.bfloat16", "torch.float16", "torch.float32"]


@dataclass(frozen=True)
class Launch:
    """What one launch gives the rules, besides the release and the target."""

    options: Mapping[str, Any]
    """The ``vllm serve`` options given, by destination, as vLLM's parser typed them."""
    env: Mapping[str, str]
    """The environment vLLM reads."""
    hf: Mapping[str, Any] | None
    """The model's config.json (``None``: not found)."""
    install: str = "pip"
    """What is installed beside vLLM (``--install``): whether FlashInfer's kernels and
    AITER are found."""
    kernel: Mapping[str, Any] | None = None
    """The resolved kernel config (its IR-op priority feeds the fusion passes)."""


_DEFAULTS: dict[str, dict[str, dict[str, Any]]] = {}
"""Each release's config-class defaults (a template: copied, never changed)."""


def _fresh(value: Any) -> Any:
    """A copy of a defaults template: new dicts and lists, the same leaves (``UNSET``
    stays itself, which ``copy.deepcopy`` would not keep)."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


class Build:
    """One launch's config, as vLLM builds it: field values per config class."""

    def __init__(self, data: Mapping[str, Any], target: Target, launch: Launch) -> None:
        """Every config class at its release defaults, for ``launch`` on ``target``."""
        self.data = data
        """The release's ``compile-config-X.Y.Z.json``."""
        self.target = target
        """The platform."""
        self.options = dict(launch.options)
        """The options given."""
        self.env = launch.env
        """The environment."""
        self.hf = launch.hf
        """The model's config.json."""
        self.install = launch.install
        """What is installed beside vLLM."""
        self.kernel = launch.kernel
        """The resolved kernel config."""
        self.unknown: dict[str, str] = {}
        """The parts no rule can derive here: ``VllmConfig`` attribute to the reason."""
        self.values: dict[str, dict[str, Any]] = _fresh(self._all_defaults())
        """Each config class's field values (normalised, nested configs as dicts)."""
        self.model: ModelFacts | None = None
        """The model facts, once read."""
        self.level = int(self.options.get("optimization_level", 2))
        """The optimisation level (``-O``)."""
        self.breakable = False
        """Whether breakable CUDA graphs are on."""
        host = target.host_features
        self.cpu_avx512_bf16 = True if host is None else host["avx512_bf16"]
        """Whether a CPU target has AVX512-BF16 (vLLM asks torch): the target's CPU
        features; where they are not known, a current server CPU's, as the reference
        vectors' host had."""
        self.cpu_arm = (
            host["arm"] if host is not None else target.device.startswith(("aarch64", "arm"))
        )
        """Whether a CPU target is an Arm host (vLLM's ``get_cpu_architecture()``)."""

    # ------------------------------------------------------------------ data

    def _all_defaults(self) -> dict[str, dict[str, Any]]:
        """Every config class's defaults, worked out once per release (a batch builds
        one config a line: working them out each time was a fifth of a line's cost)."""
        version = str(self.data.get("vllm_version"))
        found = _DEFAULTS.get(version)
        if found is None:
            found = _DEFAULTS[version] = {n: self._defaults(n) for n in self.data["configs"]}
        return found

    def _defaults(self, name: str) -> dict[str, Any]:
        """A config class's release defaults (nested config classes as their own values)."""
        out: dict[str, Any] = {}
        for f in self.data["configs"][name]["fields"]:
            default = f.get("default")
            if "nested" in f and f["nested"] in self.data["configs"]:
                out[f["name"]] = self._defaults(f["nested"])
            elif self._config_instance(default):
                out[f["name"]] = self._defaults(default[0].rsplit(".", 1)[-1])
            elif "default" in f:
                out[f["name"]] = copy.deepcopy(f["default"])
            else:
                out[f["name"]] = UNSET
        return out

    def _config_instance(self, default: Any) -> bool:
        """Whether a normalised default is an instance of a config class the data
        describes (``[fqn, items]``): it is then held as that class's values."""
        return (
            isinstance(default, list)
            and len(default) == 2
            and isinstance(default[0], str)
            and default[0].rsplit(".", 1)[-1] in self.data["configs"]
        )

    def const(self, cls: str, name: str) -> Any:
        """A class constant of the release (``CacheConfig.DEFAULT_BLOCK_SIZE`` …)."""
        return self.data["configs"][cls].get("constants", {})[name]

    @property
    def cc(self) -> dict[str, Any]:
        """``CompilationConfig``'s values."""
        return self.values["CompilationConfig"]

    @property
    def pc(self) -> dict[str, Any]:
        """``ParallelConfig``'s values."""
        return self.values["ParallelConfig"]

    def has(self, cls: str, name: str) -> bool:
        """Whether the release's ``cls`` has the field ``name``."""
        return name in self.values[cls]

    def set(self, cls: str, name: str, value: Any) -> None:
        """Set a field the release has (fields it lacks are skipped)."""
        if name in self.values[cls]:
            self.values[cls][name] = value

    # -------------------------------------------------------------- platform

    @property
    def kind(self) -> str:
        """vLLM's platform: ``cuda``, ``rocm``, ``cpu`` …"""
        return self.target.kind

    def capability_family(self, family: int) -> bool:
        """``is_device_capability_family(100)``: the same major."""
        cap = capability(self.target)
        return self.kind == "cuda" and cap is not None and cap[0] * 10 == family

    def capability_is(self, value: int) -> bool:
        """``is_devicecapability(90)``."""
        cap = capability(self.target)
        return self.kind == "cuda" and cap is not None and cap[0] * 10 + cap[1] == value

    def supported_dtypes(self) -> list[str]:
        """``current_platform.supported_dtypes``."""
        return supported_dtypes(self.target)

    def aiter_found(self) -> bool:
        """``is_aiter_found_and_supported``: ROCm, a CDNA3+ gfx9 device, and the aiter
        library (the official ROCm image, or every optional library)."""
        arch = self.target.gfx_arch or ""
        return (
            self.kind == "rocm"
            and arch.startswith(("gfx94", "gfx95"))
            and self.install in ("image", "all")
        )

    def aiter_enabled(self) -> bool | None:
        """``rocm_aiter_ops.is_enabled()``: ``None`` where aiter is not supported (its
        decorator returns ``None``)."""
        if not self.aiter_found():
            return None
        return bool(self.envs("VLLM_ROCM_USE_AITER"))

    def envs(self, name: str) -> Any:
        """A variable as the release's ``envs`` reads it (its default when unset)."""
        from kernelcfg.vllm.compile_cache.env import env_value

        return env_value(self.data["vllm_version"], self.env, name)

    def has_flashinfer(self) -> bool:
        """``has_flashinfer()``: the package with its kernels (the official image, or
        every optional library); ``pip install vllm`` alone has no usable kernels."""
        return self.kind == "cuda" and self.install in ("image", "all")

    # ------------------------------------------------------------------ run
