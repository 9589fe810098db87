"""Python libraries that vLLM's selection code imports when an install world has them,
added to the release's throwaway venv so those paths run to the end instead of stopping
at ``ModuleNotFoundError``.

- Humming (``humming-kernels``, the version the wheel's ``Requires-Dist`` pins,
  ``--no-deps``) with the pure-Python parts it imports: ``cuda-bindings`` (NVIDIA's
  CUDA Python bindings; they load ``libcuda`` only when called), ``jinja2``,
  ``tabulate``. Selection only imports Humming and reads its dtype tables; nothing
  launches a kernel.

A marker file in the venv says it is done.
"""

from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

import common

__all__ = ["ensure_extras", "pinned"]

PURE = ["cuda-bindings", "jinja2", "tabulate"]


def pinned(version: str, project: str) -> str | None:
    """The ``==`` version of ``project`` in the release wheel's ``Requires-Dist``."""
    whl = common.wheel(version)
    with zipfile.ZipFile(whl) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(meta).decode("utf-8", "replace")
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
        subprocess.run([*nice, pip, "install", "-q", *PURE], check=True)
        installed = [req, *PURE]
    marker.write_text(" ".join(installed) + "\n", encoding="utf-8")
    return installed
