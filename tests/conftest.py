"""Shared test helpers: the golden vectors (copied from real vLLM runs) and fixtures."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.vllm import releases

GOLDEN = Path(__file__).parent / "golden"

PLATFORM_KIND = {
    "Platform": "cpu",
    "UnspecifiedPlatform": "cpu",
    "CpuPlatform": "cpu",
    "ZenCpuPlatform": "cpu",
    "CudaPlatform": "cuda",
    "XPUPlatform": "xpu",
    "RocmPlatform": "rocm",
}
"""vLLM's platform classes, by the kind kernelcfg models them as."""

MODES = ("NONE", "STOCK_TORCH_COMPILE", "DYNAMO_TRACE_ONCE", "VLLM_COMPILE")


@pytest.fixture(autouse=True, scope="session")
def _own_text_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """kernelcfg's disk cache (``base.text_cache``) in a folder of this test run, never
    the user's: a test sees texts only this run made."""
    import os

    os.environ["KERNELCFG_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernelcfg-cache"))


@pytest.fixture(autouse=True, scope="session")
def _no_user_releases(tmp_path_factory: pytest.TempPathFactory) -> None:
    """No release data from the user's folders (``~/.local/share/kernelcfg/releases``):
    the default folder is an empty one of this test run, and ``KERNELCFG_DATA_PATH``
    unset; a test that wants a user folder sets the variable itself."""
    import os

    os.environ.pop("KERNELCFG_DATA_PATH", None)
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    releases.forget()


def golden_versions() -> list[str]:
    """Releases with both a kernelcfg data file and vectors of vLLM's own ``KernelConfig``
    (``cases.json``, or ``cases.json.gz`` where the project executed them for an older
    release; a release may have only the vectors of its executed selection)."""
    have = {
        p.name.removeprefix("vllm-")
        for p in GOLDEN.iterdir()
        if (p / "cases.json").is_file() or (p / "cases.json.gz").is_file()
    }
    return [v for v in releases.known_versions() if v in have]


@cache
def golden(version: str, name: str) -> dict[str, Any]:
    """One golden file of one release (``NAME.json``, else its packed ``NAME.json.gz``)."""
    path = GOLDEN / f"vllm-{version}" / f"{name}.json"
    if not path.is_file():
        with gzip.open(path.with_name(path.name + ".gz"), "rt", encoding="utf-8") as packed:
            data: dict[str, Any] = json.load(packed)
        return data
    with path.open(encoding="utf-8") as fh:
        plain: dict[str, Any] = json.load(fh)
    return plain


def enum_name(value: Any) -> Any:
    """``CompilationMode.NONE`` (or ``0``) to ``NONE``; ``None`` stays."""
    if isinstance(value, int):
        return MODES[value]
    return None if value is None else str(value).split(".")[-1]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No VLLM_*/KERNELCFG_*/TORCH_COMPILE_DISABLE variables from the caller's shell."""
    import os

    for key in list(os.environ):
        if key.startswith(("VLLM_", "KERNELCFG_")) or key == "TORCH_COMPILE_DISABLE":
            monkeypatch.delenv(key)
    return monkeypatch


def _hypothesis_profiles() -> None:
    """``ci``: the same examples on every run (derandomised); the default explores."""
    import os

    from hypothesis import settings

    settings.register_profile("ci", derandomize=True, print_blob=True)
    if os.environ.get("CI"):
        settings.load_profile("ci")
    # Every command refuses in CI without a target: the tests name CI where they test it.
    os.environ.pop("CI", None)


_hypothesis_profiles()
