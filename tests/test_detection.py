"""Finding this machine's GPU from recorded NVML and sysfs answers, and what happens
when nothing is found: the CPU platform, said once, never silently."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kernelcfg.targets import detection

from .cli_helpers import run


class _NvmlError(Exception):
    pass


class _Nvml:
    """NVML's answers on an H100 node, as nvidia-ml-py returns them."""

    def __init__(self, count: int = 8, fail_init: bool = False) -> None:
        self.count = count
        self.fail_init = fail_init
        self.shut = False

    def nvmlInit(self) -> None:  # noqa: N802 - NVML's own names
        if self.fail_init:
            raise _NvmlError("NVML Shared Library Not Found")

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shut = True

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return self.count

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:  # noqa: N802
        return index

    def nvmlDeviceGetName(self, _handle: Any) -> str:  # noqa: N802
        return "NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetCudaComputeCapability(self, _handle: Any) -> tuple[int, int]:  # noqa: N802
        return (9, 0)


def test_nvml_names_the_gpu() -> None:
    nvml = _Nvml()
    assert detection.by_nvml(nvml) == ("cuda", "NVIDIA H100 80GB HBM3", "9.0", None)
    assert nvml.shut


@pytest.mark.parametrize("nvml", [_Nvml(count=0), _Nvml(fail_init=True)])
def test_nvml_without_a_gpu_says_why(nvml: _Nvml) -> None:
    found = detection.by_nvml(nvml)
    assert isinstance(found, str)
    assert "NVML" in found


def _kfd(root: Path, versions: list[int]) -> Path:
    for i, version in enumerate(versions):
        node = root / str(i)
        node.mkdir(parents=True)
        (node / "properties").write_text(f"cpu_cores_count 0\ngfx_target_version {version}\n")
    return root


@pytest.mark.parametrize(
    ("version", "arch"),
    [
        (90402, "gfx942"),
        (90010, "gfx90a"),
        (110000, "gfx1100"),
        (120001, "gfx1201"),
        (90500, "gfx950"),
    ],
)
def test_kfd_gives_the_gfx_target(tmp_path: Path, version: int, arch: str) -> None:
    topology = _kfd(tmp_path, [0, version])  # node 0 is the CPU
    assert detection.by_kfd(topology) == ("rocm", f"AMD GPU ({arch})", None, arch)


def test_kfd_absent_or_cpu_only(tmp_path: Path) -> None:
    assert isinstance(detection.by_kfd(tmp_path / "none"), str)
    assert isinstance(detection.by_kfd(_kfd(tmp_path / "cpu", [0])), str)


def test_find_takes_the_first_answer() -> None:
    h100 = ("cuda", "NVIDIA H100", "9.0", None)
    assert detection.find((lambda: "no nvml", lambda: h100)) == h100
    assert detection.find((lambda: "a", lambda: "b")) == "a; b"


def test_no_target_is_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelcfg.targets import presets

    monkeypatch.delenv("KERNELCFG_DEVICE", raising=False)
    monkeypatch.delenv("KERNELCFG_PLATFORM", raising=False)
    monkeypatch.setattr(detection, "find", lambda: "NVML sees no NVIDIA GPU")
    presets.detect.cache_clear()
    try:
        result = run("resolve", "--moe-backend", "flashinfer_trtllm", "--format", "json")
        data = result.json()
        assert data["platform"]["source"] == "fallback"
        assert result.stderr.count("note: no --device given") == 1
        assert "KERNELCFG_DEVICE" in result.stderr
        assert "the target is cpu" in data["problems"][0]["message"]
        assert "no GPU detected" not in data["problems"][0]["message"]  # the note says it
    finally:
        presets.detect.cache_clear()
