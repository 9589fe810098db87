"""The host CPU's features: what vLLM's CPU platform asks of the machine it runs on.

vLLM asks torch (``torch.cpu._is_amx_tile_supported()``, ``_is_avx512_supported()``,
``_is_avx512_bf16_supported()``), its own ``_C.cpu_has_amx_fp8()``, the machine's
architecture (``platform.machine()``: ``CpuPlatform.get_cpu_architecture``) and
``/proc/cpuinfo`` (``AuthenticAMD`` with AVX-512: the AMD Zen platform where zentorch
imports, ``vllm/platforms/__init__.py:_is_amd_zen_cpu``). kernelcfg reads the same
answers from ``/proc/cpuinfo`` and ``platform`` when the target is this machine (never
importing torch), and takes them from ``--cpu-features`` or a CPU preset otherwise.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from pathlib import Path

from kernelcfg.base.errors import ArgumentError, closest

__all__ = [
    "ARCHES",
    "CPUINFO",
    "FLAGS",
    "CpuFeatures",
    "detect",
    "from_cpuinfo",
    "parse",
]

ARCHES: dict[str, str] = {
    "x86_64": "x86",
    "aarch64": "arm",
    "ppc64le": "powerpc",
    "s390x": "s390x",
    "riscv64": "riscv",
}
"""The architectures kernelcfg names, each to vLLM's ``CpuArchEnum`` as the selection
data's host-feature word (``x86``, ``arm``, ``powerpc``, ...)."""

FLAGS: dict[str, str] = {
    "amx": "AMX tiles (torch.cpu._is_amx_tile_supported(); /proc/cpuinfo amx_tile)",
    "amx_fp8": "AMX-FP8 (vLLM's _C.cpu_has_amx_fp8(); /proc/cpuinfo amx_fp8)",
    "avx512": "AVX-512 (torch.cpu._is_avx512_supported(); /proc/cpuinfo avx512f/bw/vl/dq)",
    "avx512_bf16": "AVX512-BF16 (torch.cpu._is_avx512_bf16_supported())",
    "amd": "an AMD CPU (/proc/cpuinfo AuthenticAMD; with AVX-512 vLLM's Zen platform)",
}
"""The features a CPU target states, each with how vLLM finds it out."""

CPUINFO = Path("/proc/cpuinfo")
"""Where Linux lists the CPU's vendor and flags."""

_AVX512 = ("avx512f", "avx512bw", "avx512vl", "avx512dq")
"""The flags torch's ``_is_avx512_supported()`` asks cpuinfo for."""


@dataclass(frozen=True)
class CpuFeatures:
    """What the host CPU has, as vLLM's CPU platform reads it."""

    arch: str
    """The architecture (a key of :data:`ARCHES`)."""
    flags: frozenset[str] = frozenset()
    """The features present (keys of :data:`FLAGS`)."""
    macos: bool = False
    """Whether the host runs macOS (vLLM's CPU build there)."""
    source: str = "preset"
    """Where they came from: ``preset``, ``flag``, ``environment`` or ``detected``."""

    @property
    def words(self) -> dict[str, bool]:
        """The host-feature words of the selection data (``releases/moe-*.json``'s
        ``host_features``: ``amx_tile``, ``amx_fp8``, ``zen``, ``x86``, ``arm``, ...)."""
        found = {word: self.arch == arch for arch, word in ARCHES.items()}
        found.update(
            amx_tile="amx" in self.flags,
            amx_fp8="amx_fp8" in self.flags,
            avx512="avx512" in self.flags,
            avx512_bf16="avx512_bf16" in self.flags,
            zen="amd" in self.flags and "avx512" in self.flags,
            macos=self.macos,
        )
        return found

    @property
    def text(self) -> str:
        """``x86_64 amx avx512 avx512_bf16``: the architecture and the features, as
        ``--cpu-features`` takes them."""
        return " ".join([self.arch, *sorted(self.flags), *(["macos"] if self.macos else [])])

    def as_dict(self) -> dict[str, object]:
        """The ``platform.cpu`` object of the JSON output."""
        return {
            "arch": self.arch,
            "features": sorted(self.flags),
            "macos": self.macos,
            "source": self.source,
        }


def parse(text: str, *, option: str = "--cpu-features", source: str = "flag") -> CpuFeatures:
    """``--cpu-features``' value: an architecture and feature names, comma- or
    space-separated (``x86_64,avx512,avx512_bf16,amd``; no architecture: x86_64;
    ``none``: x86_64 with none of them)."""
    words = [w for w in text.replace(",", " ").lower().split() if w and w != "none"]
    arch = "x86_64"
    arches = [w for w in words if w in ARCHES]
    if len(arches) > 1:
        raise ArgumentError(
            f"{option}: {text!r} names {len(arches)} architectures; give one of "
            f"{', '.join(ARCHES)}",
            field="cpu_features",
        )
    if arches:
        arch = arches[0]
    flags = set()
    macos = False
    allowed = [*ARCHES, *FLAGS, "macos", "none"]
    for word in words:
        if word in ARCHES:
            continue
        if word == "macos":
            macos = True
        elif word in FLAGS:
            flags.add(word)
        else:
            hint = closest(word, allowed)
            raise ArgumentError(
                f"{option}: unknown CPU feature {word!r}; allowed: {', '.join(allowed)}"
                + (f" (did you mean {hint!r}?)" if hint else ""),
                field="cpu_features",
            )
    x86_only = sorted(flags - {"amd"}) if arch != "x86_64" else []
    if x86_only:
        raise ArgumentError(
            f"{option}: {', '.join(x86_only)} {'is' if len(x86_only) == 1 else 'are'} x86_64 "
            f"features; the architecture named is {arch}",
            field="cpu_features",
        )
    return CpuFeatures(arch, frozenset(flags), macos, source)


def from_cpuinfo(cpuinfo: str, machine: str, system: str = "linux") -> CpuFeatures:
    """The features ``/proc/cpuinfo``'s text, the machine (``platform.machine()``) and
    the system (``sys.platform``) show, as vLLM's probes answer them."""
    arch = _arch(machine)
    flags: set[str] = set()
    present: set[str] = set()
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            present.update(value.split())
    if arch == "x86_64":
        if all(f in present for f in _AVX512):
            flags.add("avx512")
            if "avx512_bf16" in present:
                flags.add("avx512_bf16")
        if "amx_tile" in present:
            flags.add("amx")
        if "amx_fp8" in present:
            flags.add("amx_fp8")
    if "AuthenticAMD" in cpuinfo:
        flags.add("amd")
    return CpuFeatures(arch, frozenset(flags), system.startswith("darwin"), "detected")


def _arch(machine: str) -> str:
    """``CpuPlatform.get_cpu_architecture``'s reading of ``platform.machine()``."""
    lowered = machine.lower()
    if lowered in ("x86_64", "amd64", "i386", "i686"):
        return "x86_64"
    if lowered.startswith(("arm", "aarch")):
        return "aarch64"
    if lowered.startswith("ppc"):
        return "ppc64le"
    if lowered.startswith("s390"):
        return "s390x"
    if lowered.startswith("riscv"):
        return "riscv64"
    return lowered or "unknown"


def detect(cpuinfo: Path = CPUINFO) -> CpuFeatures | str:
    """This machine's CPU features, or why they cannot be read."""
    machine = platform.machine()
    if sys.platform.startswith("darwin"):
        return from_cpuinfo("", machine, sys.platform)
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"{cpuinfo} is not readable here"
    return from_cpuinfo(text, machine, sys.platform)
