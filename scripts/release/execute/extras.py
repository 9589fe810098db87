"""Python libraries that vLLM's selection code imports when an install world has them,
added to the release's throwaway venv so those paths run to the end instead of stopping
at ``ModuleNotFoundError``.

- Humming (``humming-kernels``, the version the wheel's ``Requires-Dist`` pins,
  ``--no-deps``) with every unconditional requirement of that Humming wheel but torch
  and Triton (the venv's CPU torch stays; nothing launches a kernel): ``cuda-bindings``
  (NVIDIA's CUDA Python bindings; they load ``libcuda`` only when called), ``jinja2``,
  ``tabulate``, and, for Humming 0.1.6-0.1.10, ``pyelftools``, without which its import
  fails and vLLM 0.24.0-0.27.0's Humming paths stop at ``ModuleNotFoundError: No module
  named 'elftools'``. Selection only imports Humming and reads its dtype tables.

A marker file in the venv says it is done.
"""

from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

import common

__all__ = ["ensure_extras", "pinned", "wheel_metadata"]

KEPT = {"torch", "triton", "triton-windows"}
"""Humming's requirements the venv keeps as they are (CPU torch; no Triton needed)."""


def wheel_metadata(whl: Path) -> str:
    """A wheel's ``METADATA`` text."""
    with zipfile.ZipFile(whl) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return zf.read(meta).decode("utf-8", "replace")


def requirements(whl: Path) -> list[str]:
    """A wheel's unconditional ``Requires-Dist`` names (no extra, no platform marker)
    but :data:`KEPT`."""
    found = re.findall(r"^Requires-Dist: ([A-Za-z0-9_.-]+)[^;\n]*$", wheel_metadata(whl), re.M)
    return [name for name in found if name.lower() not in KEPT]


def pinned(version: str, project: str) -> str | None:
    """The ``==`` version of ``project`` in the release wheel's ``Requires-Dist``."""
    text = wheel_metadata(common.wheel(version))
    found = re.search(rf"^Requires-Dist: {re.escape(project)}(?:\[[^\]]*\])?==([\w.]+)", text, re.M)
    return found.group(1) if found else None


def ensure_extras(version: str, venv: Path) -> list[str]:
    """Install the extras once; the requirement strings installed (or already there)."""
    marker = venv / ".kernelcfg-extras"
    if marker.is_file():
        return marker.read_text(encoding="utf-8").split()
    installed = []
    humming = pinned(version, "humming-kernels")
    if humming:
        folder = common.wheel_cache()
        nice = ["nice", "-n", "10"]
        pip = str(venv / "bin" / "pip")
        req = f"humming-kernels=={humming}"
        subprocess.run(
            [*nice, pip, "download", "-q", "--no-deps", "-d", str(folder), req], check=True
        )
        subprocess.run(
            [*nice, pip, "install", "-q", "--no-deps", req, "-f", str(folder)], check=True
        )
        whl = next(folder.glob(f"humming_kernels-{humming}-*.whl"))
        pure = requirements(whl)
        subprocess.run([*nice, pip, "install", "-q", *pure], check=True)
        installed = [req, *pure]
    marker.write_text(" ".join(installed) + "\n", encoding="utf-8")
    return installed
