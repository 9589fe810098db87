"""The config model reads like vLLM's: every field documented, unknown keys refused,
the release files well formed."""

from __future__ import annotations

import dataclasses
import json

import pytest
from pydantic import ValidationError

from kernelcfg import for_version
from kernelcfg.base.errors import UnknownVersionError
from kernelcfg.vllm import releases

ALL = releases.known_versions()


@pytest.mark.parametrize("version", ALL)
def test_every_field_has_a_docstring(version: str) -> None:
    api = for_version(version)
    for cls in (api.KernelConfig, api.IrOpPriorityConfig):
        assert cls.__doc__
        for field in dataclasses.fields(cls):  # type: ignore[arg-type]
            info = getattr(cls, "__pydantic_fields__")[field.name]  # noqa: B009
            assert info.description, f"{version} {cls.__name__}.{field.name} has no doc"


@pytest.mark.parametrize("version", ALL)
def test_unknown_keys_are_refused(version: str) -> None:
    api = for_version(version)
    with pytest.raises(ValidationError, match="Unexpected keyword argument"):
        api.KernelConfig(moe_backendd="triton")
    with pytest.raises(ValidationError, match="Unexpected keyword argument"):
        api.IrOpPriorityConfig(not_an_op=["native"])


@pytest.mark.parametrize("version", ALL)
def test_release_file_is_well_formed(version: str) -> None:
    release = releases.load(version)
    data = release.data
    assert data["vllm_version"] == version
    assert {f["name"] for f in data["kernel_config"]["fields"]} >= {"moe_backend", "ir_op_priority"}
    for op in release.ir_ops:
        providers = release.providers(op)
        assert "native" in providers
        for facts in providers.values():
            assert len(facts["uuid"]) == 64
            assert facts["file"].startswith("vllm/")
    rules = release.rules
    for key in ("docs", "env_flags", "ir_defaults", "ir_providers", "compilation", "engine"):
        assert key in rules, key
    for name in release.choices("MoEBackend"):
        assert name == name.lower()
    json.dumps(data)


def test_versions_are_accepted_in_every_spelling() -> None:
    newest = releases.newest()
    major, minor, _ = newest.split(".")
    for spelling in (newest, f"v{newest}", f"{major}.{minor}"):
        assert for_version(spelling).version == newest


def test_unknown_version_lists_the_known_ones() -> None:
    with pytest.raises(UnknownVersionError) as info:
        for_version(
            f"{ALL[0].split('.')[0]}.{int(ALL[0].split('.')[1]) - 1}.0"
        )  # before the oldest
    for version in ALL:
        assert version in str(info.value)


def test_with_default_fills_missing_ops() -> None:
    api = for_version("0.33.0")
    ir = api.IrOpPriorityConfig.with_default(["native"], rms_norm=["vllm_c"])
    assert ir.op_lists() == {
        "rms_norm": ["vllm_c"],
        "fused_add_rms_norm": ["native"],
        "gelu_and_mul_sparse": ["native"],
    }


def test_public_names_survive_submodule_imports() -> None:
    import kernelcfg
    import kernelcfg.engine.resolution

    assert callable(kernelcfg.resolve)
    assert callable(kernelcfg.resolve_args)
    for name in kernelcfg.__all__:
        assert getattr(kernelcfg, name) is not None, name
