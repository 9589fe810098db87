"""``--format env`` carries the picks and the compile-cache key under clear names; the
compile-cache key's env part is there without a model, and every unknown part says why."""

from __future__ import annotations

import shlex

from tests.cli_helpers import run

DEEPSEEK = ("--device", "h200", "--hf-config-path", "docs/examples/deepseek-r1")


def _env(*args: str) -> dict[str, str]:
    done = run("resolve", *args, "--format", "env")
    return dict(line.split("=", 1) for line in shlex.split(done.stdout, posix=True) if "=" in line)


def test_env_names_the_kernel_config_hash_and_keeps_the_old_name() -> None:
    env = _env("--device", "h100")
    data = run("resolve", "--device", "h100", "--format", "json").json()
    assert env["KERNELCFG_KERNEL_CONFIG_HASH"] == data["hash"]
    assert env["KERNELCFG_HASH"] == data["hash"]  # deprecated, one release
    assert env["KERNELCFG_COMPILE_CACHE_ENV_HASH"] == data["compile_cache"]["env_hash"]
    assert env["KERNELCFG_COMPILE_CACHE_KEY"] == ""
    assert "--compile-cache DIR" in env["KERNELCFG_COMPILE_CACHE_UNKNOWN"]


def test_env_carries_the_picks() -> None:
    env = _env(*DEEPSEEK)
    selection = run("resolve", *DEEPSEEK, "--format", "json").json()["selection"]
    assert env["KERNELCFG_PICKED_ATTENTION_BACKEND"] == selection["attention"]["backend"]
    assert env["KERNELCFG_PICKED_MOE_BACKEND"] == selection["moe_backend"]["backend"]
    assert env["KERNELCFG_PICKED_MOE_KERNEL"] == selection["moe_backend"]["kernel"]
    assert env["KERNELCFG_PICKED_LINEAR_KERNEL"] == selection["linear_backend"]["kernel"]
    layers = selection["linear_backend"]["layers"]
    assert env["KERNELCFG_PICKED_LINEAR_KERNEL_FP8_BLOCK_128X128"] == layers["fp8_block/128x128"]


def test_compile_cache_env_part_without_a_model() -> None:
    found = run("resolve", "--device", "h100", "--format", "json").json()["compile_cache"]
    assert found is not None
    assert len(found["env_hash"]) == 64
    assert found["env_factors"]
    assert found["config_hash"] is None
    assert found["key"] is None
    reasons = found["unknown"]
    assert any(r.startswith("config: no config.json") for r in reasons), reasons
    assert "code: no reference cache of this install (give --compile-cache DIR)" in reasons
    assert "compiler: no reference cache of this install (give --compile-cache DIR)" in reasons


def test_no_transformers_names_the_model_extra() -> None:
    from kernelcfg.vllm.compile_cache.model import NO_TRANSFORMERS

    assert "kernelcfg[model]" in NO_TRANSFORMERS


def test_readme_names_the_hash_per_release() -> None:
    """0.34.0 has no ``KernelConfig.compute_hash()``: the README says how each release
    hashes."""
    from pathlib import Path

    text = (Path(__file__).parents[1] / "README.md").read_text()
    assert "0.34: `hash_config()`" in text
