"""Targets: presets, explicit flags, the environment, detection and the fallback."""

from __future__ import annotations

import pytest

from kernelcfg.base.errors import ArgumentError
from kernelcfg.targets.presets import PRESETS, Target, detect, resolve_target

REQUIRED = [
    "h100",
    "h200",
    "b200",
    "gb200",
    "b300",
    "rtx-pro-6000",
    "dgx-spark",
    "a100",
    "l40s",
    "mi300x",
    "mi325x",
    "mi355x",
    "rx-7900-xtx",
    "cpu",
]


@pytest.mark.parametrize("name", REQUIRED)
def test_required_presets_exist_with_real_values(name: str) -> None:
    target = PRESETS[name]
    if target.kind == "cuda":
        assert target.capability is not None
        assert target.capability_int is not None
    if target.kind == "rocm":
        assert target.gfx_arch is not None
        assert target.gfx_arch.startswith("gfx")


def test_preset_values() -> None:
    assert PRESETS["h100"].capability == "9.0"
    assert PRESETS["b200"].capability == "10.0"
    assert PRESETS["b300"].capability == "10.3"
    assert PRESETS["rtx-pro-6000"].capability == "12.0"
    assert PRESETS["dgx-spark"].capability == "12.1"
    assert PRESETS["a100"].capability == "8.0"
    assert PRESETS["l40s"].capability == "8.9"
    assert PRESETS["mi300x"].gfx_arch == "gfx942"
    assert PRESETS["mi355x"].gfx_arch == "gfx950"
    assert PRESETS["rx-7900-xtx"].gfx_arch == "gfx1100"


def test_flags_beat_preset_and_say_so() -> None:
    target = resolve_target(device="h100", capability="9.0")
    assert target.source == "flag"
    assert resolve_target(device="H100").source == "preset"
    assert resolve_target(kind="rocm", gfx_arch="gfx950").gfx_arch == "gfx950"


def test_environment_is_used_when_no_flags() -> None:
    target = resolve_target(environ={"KERNELCFG_DEVICE": "mi300x"})
    assert target.source == "environment"
    assert target.gfx_arch == "gfx942"
    target = resolve_target(environ={"KERNELCFG_DEVICE": "b200", "KERNELCFG_CAPABILITY": "10.3"})
    assert (target.device, target.capability, target.source) == (
        "NVIDIA B200",
        "10.3",
        "environment",
    )
    target = resolve_target(environ={"KERNELCFG_PLATFORM": "rocm", "KERNELCFG_GFX_ARCH": "GFX950"})
    assert (target.kind, target.gfx_arch, target.source) == ("rocm", "gfx950", "environment")
    with pytest.raises(ArgumentError, match="did you mean 'h100'"):
        resolve_target(environ={"KERNELCFG_DEVICE": "h10"})
    assert resolve_target(device="b200").source == "preset"  # the flag path's cache is untouched


def test_bad_device_suggests_the_closest() -> None:
    with pytest.raises(ArgumentError, match="did you mean 'h100'"):
        resolve_target(device="h10")


def test_capability_only_on_cuda() -> None:
    with pytest.raises(ArgumentError, match="CUDA targets only"):
        resolve_target(device="mi300x", capability="9.0")
    with pytest.raises(ArgumentError, match=r"major\.minor"):
        resolve_target(capability="90")


def test_no_detection_falls_back_to_cpu() -> None:
    target = resolve_target(environ={}, allow_detection=False)
    assert target.kind == "cpu"
    assert target.source == "fallback"


def test_detection_here_says_why() -> None:
    found = detect()
    assert isinstance(found, Target)
    if found.kind == "cpu":
        assert found.source == "fallback"
        assert found.note
    else:
        assert found.source == "detected"
