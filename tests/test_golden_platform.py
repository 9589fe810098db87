"""Platform defaults and the rule functions against vectors computed by real vLLM."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from kernelcfg import for_version
from kernelcfg.base.errors import KernelcfgError
from kernelcfg.targets.presets import Target
from kernelcfg.vllm.context import Compilation, ResolutionContext
from kernelcfg.vllm.kernel_config.defaults import default_ir_op_priority
from kernelcfg.vllm.kernel_config.rules import RuleError

from .conftest import PLATFORM_KIND, enum_name, golden, golden_versions

pytestmark = pytest.mark.golden


def _params(section: str) -> list[Any]:
    return [
        pytest.param(v, c, id=f"{v}:{section}:{i}")
        for v in golden_versions()
        for i, c in enumerate(golden(v, "platform-cases")[section])
    ]


def _context(case: dict[str, Any], all2all: str = "allgather_reducescatter") -> ResolutionContext:
    kind = PLATFORM_KIND[case["platform"]]
    target = Target(
        kind,  # type: ignore[arg-type]
        case["platform"],
        capability="9.0" if kind == "cuda" else None,
        gfx_arch=case.get("gcn_arch"),
    )
    cc = case["compilation_config"]
    compilation = Compilation(cc["backend"], enum_name(cc["mode"]), enum_name(cc["cudagraph_mode"]))
    return ResolutionContext(
        target,
        compilation,
        all2all,
        case.get("model_architectures"),
        case["env"],
    )


@pytest.mark.parametrize(("version", "case"), _params("default_ir_op_priority"))
def test_default_ir_op_priority(version: str, case: dict[str, Any]) -> None:
    release = for_version(version).release
    found = default_ir_op_priority(release, _context(case))
    assert {op: list(providers) for op, providers in found.items()} == case["result"]


@pytest.mark.parametrize(("version", "case"), _params("set_platform_defaults"))
def test_set_platform_defaults(version: str, case: dict[str, Any]) -> None:
    api = for_version(version)
    kwargs = dict(case["kernel_kwargs"])
    if case["user_ir_op_priority"] is not None:
        kwargs["ir_op_priority"] = case["user_ir_op_priority"]
    if case.get("construct_error"):
        with pytest.raises(ValidationError):
            api.KernelConfig(**kwargs)
        return
    config = api.KernelConfig(**kwargs)
    if "None assigned" in (case.get("note") or ""):
        config.ir_op_priority.rms_norm = None  # type: ignore[attr-defined]
    assert config.ir_op_priority.op_lists() == case["ir_before"]
    if case.get("hash_before"):
        assert config.compute_hash() == case["hash_before"]
    ctx = _context(case, case["all2all_backend_in"])
    if case.get("error"):
        with pytest.raises(RuleError) as info:
            config.set_platform_defaults(ctx)
        assert str(info.value) == case["error"]["message"]
        if case.get("ir_after_error") is not None:
            assert config.ir_op_priority.op_lists() == case["ir_after_error"]
        if case.get("all2all_after_error") is not None:
            assert ctx.all2all_backend == case["all2all_after_error"]
        return
    config.set_platform_defaults(ctx)
    assert config.ir_op_priority.op_lists() == case["ir_after_1"]
    assert ctx.all2all_backend == case["all2all_after_1"]
    config.set_platform_defaults(ctx)
    assert config.ir_op_priority.op_lists() == case["ir_after_2"]
    assert ctx.all2all_backend == case["all2all_after_2"]
    assert config.compute_hash() == case["hash_after"]


@pytest.mark.parametrize(("version", "case"), _params("bind_passthrough_all2all_backend"))
def test_bind_passthrough(version: str, case: dict[str, Any]) -> None:
    api = for_version(version)
    ctx = ResolutionContext(Target("cuda", "x"), all2all_backend=case["all2all_backend"])
    if case["ok"]:
        api.bind_passthrough_all2all_backend(case["moe_backend"], ctx)
        assert ctx.all2all_backend == case["all2all_after"]
        api.bind_passthrough_all2all_backend(case["moe_backend"], ctx)
        assert ctx.all2all_backend == case["all2all_after_second"]
    else:
        with pytest.raises(ValueError, match="all2all_backend=") as info:
            api.bind_passthrough_all2all_backend(case["moe_backend"], ctx)
        assert str(info.value) == case["error"]["message"]
        assert isinstance(info.value, KernelcfgError)
        assert ctx.all2all_backend == case["all2all_after"]


@pytest.mark.parametrize(("version", "case"), _params("validate_flashinfer_moe_ep_model"))
def test_validate_moe_ep_model(version: str, case: dict[str, Any]) -> None:
    api = for_version(version)
    if case["ok"]:
        api.validate_flashinfer_moe_ep_model(case["moe_backend"], case["architectures"])
    else:
        with pytest.raises(ValueError, match="DeepSeek-V4") as info:
            api.validate_flashinfer_moe_ep_model(case["moe_backend"], case["architectures"])
        assert str(info.value) == case["error"]["message"]


def test_bind_is_absent_where_the_release_lacks_it() -> None:
    for version in golden_versions():
        api = for_version(version)
        expected = bool(golden(version, "platform-cases")["bind_passthrough_all2all_backend"])
        assert api.release.has_function("bind_passthrough_all2all_backend") == expected
