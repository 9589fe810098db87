"""Targets (what GPU the engine would run on): presets, flags, the environment, detection.

A target comes from, first to last: explicit flags, a named preset, the
environment (``KERNELCFG_DEVICE``, ``KERNELCFG_PLATFORM``, ``KERNELCFG_CAPABILITY``,
``KERNELCFG_GFX_ARCH``), detection on this machine through torch (imported only
then), and finally ``cpu``. torch is never imported when a target is given.

A CPU target's host features (AMX, AVX-512, the architecture: :mod:`.cpu`) come from
``--cpu-features``, a CPU preset (``xeon-spr``, ``epyc-genoa``, ...), then
``KERNELCFG_CPU_FEATURES``, then this machine's ``/proc/cpuinfo`` where the target is
this machine (found by detection); the generic ``cpu`` preset and ``--platform cpu``
leave them unknown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal, cast

from kernelcfg.base.errors import ArgumentError, closest
from kernelcfg.targets import cpu as cpu_mod
from kernelcfg.targets.cpu import CpuFeatures

__all__ = [
    "CPU_VARIABLE",
    "KINDS",
    "PRESETS",
    "Target",
    "capability_int",
    "ci_needs_target",
    "detect",
    "gfx_capability",
    "resolve_target",
    "with_cpu_features",
]

Kind = Literal["cuda", "rocm", "xpu", "cpu", "tpu"]
KINDS: tuple[Kind, ...] = ("cuda", "rocm", "xpu", "cpu", "tpu")
"""The platform kinds kernelcfg knows."""

Source = Literal["flag", "preset", "environment", "detected", "fallback"]


@dataclass(frozen=True)
class Target:
    """A platform the engine would run on."""

    kind: Kind
    """``cuda``, ``rocm``, ``xpu``, ``cpu`` or ``tpu``."""
    device: str
    """The device's marketing name, as the driver reports it."""
    capability: str | None = None
    """CUDA compute capability, ``major.minor`` (``9.0``); ``None`` elsewhere."""
    gfx_arch: str | None = None
    """ROCm GCN architecture (``gfx942``); ``None`` elsewhere."""
    source: Source = "fallback"
    """Where this target came from."""
    note: str | None = None
    """Why detection settled on this target, when it did."""
    cpu: CpuFeatures | None = None
    """A CPU target's host features; ``None``: not known (or not a CPU target)."""

    def __hash__(self) -> int:
        # Targets key several caches on the hot path: hash the identity fields once.
        cached: int | None = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(
                (self.kind, self.device, self.capability, self.gfx_arch, self.source, self.cpu)
            )
            object.__setattr__(self, "_hash", cached)
        return cached

    @property
    def capability_int(self) -> int | None:
        """The capability as vLLM's ``to_int()`` (see :func:`capability_int`)."""
        return None if self.capability is None else capability_int(self.capability)

    @property
    def host_features(self) -> dict[str, bool] | None:
        """A CPU target's host-feature words (:attr:`CpuFeatures.words`); ``None`` where
        they are not known or the target is no CPU."""
        return self.cpu.words if self.kind == "cpu" and self.cpu is not None else None

    def as_dict(self) -> dict[str, object]:
        """The ``platform`` object of kernelcfg's JSON output (``cpu``: a CPU target's
        host features, ``null`` where not known or not a CPU)."""
        return {
            "kind": self.kind,
            "device": self.device,
            "capability": self.capability,
            "gfx_arch": self.gfx_arch,
            "source": self.source,
            "cpu": self.cpu.as_dict() if self.cpu is not None else None,
        }


def capability_int(capability: str) -> int:
    """``major.minor`` as vLLM's ``DeviceCapability.to_int()``: ``major * 10 + minor``."""
    major, _, minor = capability.partition(".")
    return int(major) * 10 + int(minor or 0)


def gfx_capability(arch: str) -> tuple[int, int] | None:
    """ROCm's capability from the gfx arch, as vLLM reads it (gfx942 is 9.4, gfx1201 12.0)."""
    digits = arch.removeprefix("gfx")
    if len(digits) == 3 and digits[:2].isdigit():
        return int(digits[0]), int(digits[1])
    if len(digits) == 4 and digits[:3].isdigit():
        return int(digits[:2]), int(digits[2])
    return None


def _cuda(device: str, capability: str) -> Target:
    return Target("cuda", device, capability=capability, source="preset")


def _rocm(device: str, gfx_arch: str) -> Target:
    return Target("rocm", device, gfx_arch=gfx_arch, source="preset")


def _host(device: str, features: str) -> Target:
    return Target("cpu", device, source="preset", cpu=cpu_mod.parse(features, source="preset"))


PRESETS: dict[str, Target] = {
    "v100": _cuda("Tesla V100-SXM2-32GB", "7.0"),
    "t4": _cuda("Tesla T4", "7.5"),
    "a100": _cuda("NVIDIA A100-SXM4-80GB", "8.0"),
    "a10g": _cuda("NVIDIA A10G", "8.6"),
    "rtx-4090": _cuda("NVIDIA GeForce RTX 4090", "8.9"),
    "l4": _cuda("NVIDIA L4", "8.9"),
    "l40s": _cuda("NVIDIA L40S", "8.9"),
    "h100": _cuda("NVIDIA H100 80GB HBM3", "9.0"),
    "h200": _cuda("NVIDIA H200", "9.0"),
    "gh200": _cuda("NVIDIA GH200 480GB", "9.0"),
    "b200": _cuda("NVIDIA B200", "10.0"),
    "gb200": _cuda("NVIDIA GB200", "10.0"),
    "b300": _cuda("NVIDIA B300 SXM6 AC", "10.3"),
    "gb300": _cuda("NVIDIA GB300", "10.3"),
    "jetson-thor": _cuda("NVIDIA Jetson AGX Thor", "11.0"),
    "rtx-pro-6000": _cuda("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"),
    "rtx-5090": _cuda("NVIDIA GeForce RTX 5090", "12.0"),
    "dgx-spark": _cuda("NVIDIA GB10", "12.1"),
    "mi210": _rocm("AMD Instinct MI210", "gfx90a"),
    "mi250x": _rocm("AMD Instinct MI250X", "gfx90a"),
    "mi300x": _rocm("AMD Instinct MI300X", "gfx942"),
    "mi325x": _rocm("AMD Instinct MI325X", "gfx942"),
    "mi350x": _rocm("AMD Instinct MI350X", "gfx950"),
    "mi355x": _rocm("AMD Instinct MI355X", "gfx950"),
    "rx-7900-xtx": _rocm("AMD Radeon RX 7900 XTX", "gfx1100"),
    "rx-9070-xt": _rocm("AMD Radeon RX 9070 XT", "gfx1201"),
    "intel-max-1550": Target("xpu", "Intel(R) Data Center GPU Max 1550", source="preset"),
    "arc-b580": Target("xpu", "Intel(R) Arc(TM) B580 Graphics", source="preset"),
    "tpu-v6e": Target("tpu", "TPU v6e", source="preset"),
    "cpu": Target("cpu", "cpu", source="preset"),
    "xeon-icx": _host("Intel Xeon 3rd gen (Ice Lake)", "x86_64 avx512"),
    "xeon-spr": _host("Intel Xeon 4th gen (Sapphire Rapids)", "x86_64 amx avx512 avx512_bf16"),
    "xeon-emr": _host("Intel Xeon 5th gen (Emerald Rapids)", "x86_64 amx avx512 avx512_bf16"),
    "xeon-gnr": _host("Intel Xeon 6 (Granite Rapids)", "x86_64 amx avx512 avx512_bf16"),
    "epyc-milan": _host("AMD EPYC 3rd gen (Milan, Zen 3)", "x86_64 amd"),
    "epyc-genoa": _host("AMD EPYC 4th gen (Genoa, Zen 4)", "x86_64 amd avx512 avx512_bf16"),
    "epyc-turin": _host("AMD EPYC 5th gen (Turin, Zen 5)", "x86_64 amd avx512 avx512_bf16"),
    "graviton4": _host("AWS Graviton4 (Neoverse V2)", "aarch64"),
    "grace": _host("NVIDIA Grace CPU (Neoverse V2)", "aarch64"),
    "power10": _host("IBM Power10", "ppc64le"),
    "apple-silicon": _host("Apple silicon (macOS)", "aarch64 macos"),
}
"""Named devices with their real compute capability or gfx architecture; the CPU
presets with their host features (the generic ``cpu`` leaves them unknown)."""

_CAPABILITY = re.compile(r"[0-9]{1,2}\.[0-9]")
_GFX = re.compile(r"gfx[0-9a-f]{3,4}")


def _preset(name: str) -> Target:
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    if key in PRESETS:
        return PRESETS[key]
    hint = closest(key, PRESETS)
    raise ArgumentError(
        f"--device: unknown device {name!r}; known: {', '.join(PRESETS)}"
        + (f" (did you mean {hint!r}?)" if hint else ""),
        field="device",
    )


def _check_kind(kind: str) -> Kind:
    lowered = kind.strip().lower()
    for known in KINDS:
        if lowered == known:
            return known
    hint = closest(lowered, KINDS)
    raise ArgumentError(
        f"--platform: unknown platform {kind!r}; allowed: {', '.join(KINDS)}"
        + (f" (did you mean {hint!r}?)" if hint else ""),
        field="platform",
    )


def _explicit(
    kind: str | None, capability: str | None, gfx_arch: str | None, base: Target | None
) -> Target | None:
    """Apply explicit ``--platform``/``--capability``/``--gfx-arch`` over ``base``."""
    if kind is None and capability is None and gfx_arch is None:
        return base
    chosen = _chosen_kind(kind, capability, gfx_arch, base)
    if base is not None and base.kind == chosen:
        return replace(
            base,
            capability=capability or base.capability,
            gfx_arch=gfx_arch.lower() if gfx_arch else base.gfx_arch,
            source="flag",
        )
    if chosen == "cuda":
        cap = capability or "9.0"
        return Target("cuda", f"CUDA device (SM {cap})", capability=cap, source="flag")
    if chosen == "rocm":
        arch = (gfx_arch or "gfx942").lower()
        return Target("rocm", f"ROCm device ({arch})", gfx_arch=arch, source="flag")
    return Target(chosen, chosen, source="flag")


def _chosen_kind(
    kind: str | None, capability: str | None, gfx_arch: str | None, base: Target | None
) -> Kind:
    """The platform kind explicit flags choose (``--platform``, else ``base``'s, else the
    kind ``--capability`` or ``--gfx-arch`` implies); each flag's text and kind checked."""
    if capability is not None and not _CAPABILITY.fullmatch(capability):
        raise ArgumentError(
            f"--capability: {capability!r} is not a compute capability; write it as "
            "major.minor, e.g. 9.0 or 12.1",
            field="capability",
        )
    if gfx_arch is not None and not _GFX.fullmatch(gfx_arch.lower()):
        raise ArgumentError(
            f"--gfx-arch: {gfx_arch!r} is not a gfx architecture; write it as gfxNNN, e.g. gfx942",
            field="gfx_arch",
        )
    chosen: Kind
    if kind is not None:
        chosen = _check_kind(kind)
    elif base is not None:
        chosen = base.kind
    else:
        chosen = "cuda" if capability is not None else "rocm" if gfx_arch else "cpu"
    if capability is not None and chosen != "cuda":
        raise ArgumentError(
            f"--capability applies to CUDA targets only; the target is {chosen}",
            field="capability",
        )
    if gfx_arch is not None and chosen != "rocm":
        raise ArgumentError(
            f"--gfx-arch applies to ROCm targets only; the target is {chosen}",
            field="gfx_arch",
        )
    return chosen


def resolve_target(
    *,
    device: str | None = None,
    kind: str | None = None,
    capability: str | None = None,
    gfx_arch: str | None = None,
    environ: Mapping[str, str] | None = None,
    allow_detection: bool = True,
) -> Target:
    """The target, from flags, a preset, the environment, detection, or ``cpu`` (a CPU
    target with a CPU preset's or this machine's features: :func:`with_cpu_features`
    adds ``--cpu-features`` and ``KERNELCFG_CPU_FEATURES``)."""
    return _resolve(device, kind, capability, gfx_arch, environ or {}, allow_detection)


def _resolve(
    device: str | None,
    kind: str | None,
    capability: str | None,
    gfx_arch: str | None,
    env: Mapping[str, str],
    allow_detection: bool,
) -> Target:
    if device is not None or kind is not None or capability is not None or gfx_arch:
        return _from_flags(device, kind, capability, gfx_arch)
    env_device, env_kind, env_cap, env_gfx = (env.get(name) for name in _VARIABLES)
    if env_device or env_kind or env_cap or env_gfx:
        try:
            found = _from_flags(env_device or None, env_kind, env_cap, env_gfx)
        except ArgumentError as exc:
            named = [name for name in _VARIABLES if env.get(name)]
            raise ArgumentError(
                f"{exc.message} (set by {', '.join(named)} in the environment)", field=exc.field
            ) from None
        return replace(found, source="environment")
    if allow_detection:
        return detect()
    return Target("cpu", "cpu", source="fallback", note="detection was not allowed")


CPU_VARIABLE = "KERNELCFG_CPU_FEATURES"
"""The variable that stands for ``--cpu-features``."""


def with_cpu_features(
    target: Target, given: str | None, env: Mapping[str, str] | None = None
) -> Target:
    """``target`` with the host features ``--cpu-features`` (``given``) states, else a
    CPU preset's, else ``KERNELCFG_CPU_FEATURES``' in ``env``, else this machine's."""
    env = env or {}
    if given is not None:
        if target.kind != "cpu":
            raise ArgumentError(
                f"--cpu-features applies to CPU targets only; the target is {target.kind}",
                field="cpu_features",
            )
        return replace(target, cpu=_parsed(given, "--cpu-features", "flag"))
    stated = env.get(CPU_VARIABLE)
    preset = target.cpu is not None and target.cpu.source != "detected"
    if target.kind != "cpu" or preset or not stated:
        return target
    return replace(target, cpu=_parsed(stated, f"{CPU_VARIABLE} in the environment", "environment"))


@cache
def _parsed(text: str, option: str, source: str) -> CpuFeatures:
    return cpu_mod.parse(text, option=option, source=source)


def ci_needs_target(command: str, environ: Mapping[str, str]) -> str | None:
    """The one line every command refuses with in CI (``CI`` true, 1 or yes) when no
    target is named: a runner has no GPU to detect, and the CPU fallback would judge the
    launch for the wrong machine. ``None`` outside CI."""
    if environ.get("CI", "").strip().lower() not in ("true", "1", "yes"):
        return None
    return (
        f"{command} in CI needs a target: give --device PRESET (e.g. --device h100) or set "
        "KERNELCFG_DEVICE; a runner has no GPU to detect"
    )


_VARIABLES = (
    "KERNELCFG_DEVICE",
    "KERNELCFG_PLATFORM",
    "KERNELCFG_CAPABILITY",
    "KERNELCFG_GFX_ARCH",
)
"""The variables that stand for ``--device``, ``--platform``, ``--capability`` and
``--gfx-arch``, in that order."""


@cache
def _from_flags(
    device: str | None, kind: str | None, capability: str | None, gfx_arch: str | None
) -> Target:
    """The target explicit flags (or their ``KERNELCFG_*`` variables) name; cached, as
    batch lines repeat them."""
    base = _preset(device) if device is not None else None
    found = _explicit(kind, capability, gfx_arch, base)
    assert found is not None
    return found


@cache
def detect() -> Target:
    """This machine's first accelerator (NVML, the ROCm KFD topology, then torch);
    ``cpu`` with the reasons otherwise, and this machine's CPU features (``/proc/cpuinfo``:
    the CPU platform runs here)."""
    from kernelcfg.targets import detection

    found = detection.find()
    if isinstance(found, str):
        host = cpu_mod.detect()
        if isinstance(host, str):
            return Target("cpu", "cpu", source="fallback", note=f"{found}; {host}")
        return Target("cpu", "cpu", source="fallback", note=found, cpu=host)
    kind, name, capability, gfx_arch = found
    return Target(
        cast(Kind, kind), name, capability=capability, gfx_arch=gfx_arch, source="detected"
    )
