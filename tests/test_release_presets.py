"""Every release kernelcfg knows resolves on every preset: exit 0 or 1 (a problem
found), never a crash or an unusable-input refusal, for the release asked for by its
full version, with a kernel-config hash."""

from __future__ import annotations

import pytest

from kernelcfg.targets.presets import PRESETS
from kernelcfg.vllm import releases

from .cli_helpers import run


@pytest.mark.parametrize("version", releases.known_versions())
@pytest.mark.parametrize("device", sorted(PRESETS))
def test_resolves_on_every_preset(version: str, device: str) -> None:
    result = run("resolve", "--device", device, "--vllm-version", version, "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    data = result.json()
    assert data["vllm_version"] == version
    assert data["hash"]
