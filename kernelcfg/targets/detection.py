"""This machine's GPU, found without importing torch where possible.

First NVIDIA's own NVML binding (``nvidia-ml-py``: name and compute capability), then
the ROCm KFD topology in sysfs (the gfx target), then torch (imported only then), and
finally nothing: the caller falls back to the CPU platform and says why.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["KFD_TOPOLOGY", "Found", "by_kfd", "by_nvml", "by_torch", "find"]

KFD_TOPOLOGY = Path("/sys/class/kfd/kfd/topology/nodes")
"""Where the ROCm kernel driver lists its nodes (``properties`` of each)."""

Found = tuple[str, str, str | None, str | None]
"""``(kind, device name, capability, gfx arch)``."""


def by_nvml(binding: Any = None) -> Found | str:
    """The first NVIDIA GPU through NVML (``binding``: nvidia-ml-py's ``pynvml``, or a
    stand-in with the same functions), or why there is none."""
    nvml = binding
    if nvml is None:
        try:
            import pynvml

            nvml = pynvml
        except ImportError:
            return "NVML's Python binding (nvidia-ml-py) is not installed"
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError: no driver, no library
        return f"NVML is not usable here ({type(exc).__name__})"
    try:
        if nvml.nvmlDeviceGetCount() < 1:
            return "NVML sees no NVIDIA GPU"
        handle = nvml.nvmlDeviceGetHandleByIndex(0)
        name = nvml.nvmlDeviceGetName(handle)
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
    except Exception as exc:  # NVMLError of any kind
        return f"NVML failed ({type(exc).__name__})"
    finally:
        with contextlib.suppress(Exception):  # nothing to do if shutting down fails
            nvml.nvmlShutdown()
    text = name.decode() if isinstance(name, bytes) else str(name)
    return ("cuda", text, f"{major}.{minor}", None)


def gfx_name(version: int) -> str | None:
    """KFD's ``gfx_target_version`` (``90402``) as a gfx target (``gfx942``)."""
    if version <= 0:
        return None
    major, minor, step = version // 10000, (version // 100) % 100, version % 100
    return f"gfx{major}{minor:x}{step:x}"


def by_kfd(topology: Path = KFD_TOPOLOGY) -> Found | str:
    """The first AMD GPU in the KFD topology, or why there is none."""
    try:
        nodes = sorted(topology.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else 0)
    except OSError:
        return "no ROCm KFD topology in sysfs"
    for node in nodes:
        try:
            text = (node / "properties").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        fields = dict(line.split(" ", 1) for line in text.splitlines() if " " in line)
        try:
            arch = gfx_name(int(fields.get("gfx_target_version", "0")))
        except ValueError:
            continue
        if arch:
            return ("rocm", f"AMD GPU ({arch})", None, arch)
    return "the ROCm KFD topology lists no GPU"


def by_torch() -> Found | str:
    """The first accelerator torch sees, or why there is none (imports torch)."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. torch's note that numpy is missing
            import torch
    except ImportError:
        return "torch is not installed"
    try:
        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            if getattr(torch.version, "hip", None):
                arch = str(getattr(props, "gcnArchName", "")).split(":")[0]
                return ("rocm", props.name, None, arch or None)
            major, minor = torch.cuda.get_device_capability(0)
            return ("cuda", props.name, f"{major}.{minor}", None)
        xpu = getattr(torch, "xpu", None)
        if xpu is not None and xpu.is_available():
            return ("xpu", xpu.get_device_name(0), None, None)
    except RuntimeError as exc:
        return f"torch saw no usable GPU: {exc}"
    return "torch sees no CUDA, ROCm or XPU GPU"


def find(
    probes: tuple[Callable[[], Found | str], ...] = (by_nvml, by_kfd, by_torch),
) -> Found | str:
    """The first probe's answer that names a GPU; else every probe's reason, joined.

    ``KERNELCFG_DETECT_TORCH=0`` leaves torch out (it takes seconds to import).
    """
    reasons = []
    for probe in probes:
        if probe is by_torch and os.environ.get("KERNELCFG_DETECT_TORCH") == "0":
            continue
        found = probe()
        if not isinstance(found, str):
            return found
        reasons.append(found)
    return "; ".join(reasons)
