"""KernelConfig of each release against vectors computed by real vLLM: values, repr,
hash factors, hashes, and every invalid input rejected at the same stage."""

from __future__ import annotations

import ast
import re
from typing import Any

import pytest
from pydantic import ValidationError

from kernelcfg import for_version
from kernelcfg.base.errors import UnknownProviderError

from .conftest import golden, golden_versions

pytestmark = pytest.mark.golden


def _cases(kind: str) -> list[Any]:
    return [
        pytest.param(v, c, id=f"{v}:{c['id']}")
        for v in golden_versions()
        for c in golden(v, "cases")[kind]
    ]


def _build(version: str, case: dict[str, Any]) -> Any:
    api = for_version(version)
    kwargs = ast.literal_eval(case["kwargs_py"])
    via = case["ir_op_priority_via"]
    if via == "instance":
        kwargs["ir_op_priority"] = api.IrOpPriorityConfig(**kwargs["ir_op_priority"])
    elif via == "with_default":
        kwargs["ir_op_priority"] = api.IrOpPriorityConfig.with_default(
            case["with_default_arg"], **kwargs["ir_op_priority"]
        )
    return api.KernelConfig(**kwargs)


@pytest.mark.parametrize(("version", "case"), _cases("cases"))
def test_valid_case(version: str, case: dict[str, Any]) -> None:
    config = _build(version, case)
    assert config.values() == case["normalized"]
    assert repr(config) == case["repr"]
    if "ir_hash_input" in case:  # 0.29.0-0.33.0: IR sub-hash
        assert config.ir_op_priority.hash_factors() == case["ir_hash_input"]
        assert config.ir_op_priority.compute_hash() == case["ir_hash"]
    else:  # 0.34.0: nested IR factors
        assert config.hash_factors()["ir_op_priority"] == {
            **case["ir_get_compile_factors"],
            "_impls": case["kernel_hash_input"]["ir_op_priority"]["_impls"],
        }
    assert config.hash_factors() == case["kernel_hash_input"]
    if "kernel_hash_json" in case:
        import json

        assert json.dumps(config.hash_factors(), sort_keys=True) == case["kernel_hash_json"]
    assert sorted(config.ignored_factors()) == case["kernel_ignored_factors"]
    assert config.compute_hash() == case["hash"]


def _message(exc: ValidationError) -> str:
    return re.sub(r"\n    For further information visit \S+", "", str(exc))


@pytest.mark.parametrize(("version", "case"), _cases("invalid"))
def test_invalid_case(version: str, case: dict[str, Any]) -> None:
    api = for_version(version)
    kwargs = ast.literal_eval(case["kwargs_py"])
    cls = api.KernelConfig if case["target"] == "KernelConfig" else api.IrOpPriorityConfig
    if case["stage"] == "none":  # refused by 0.33.0, accepted by this release
        accepted = api.KernelConfig(**kwargs)
        assert accepted.values() == case["normalized"]
        assert accepted.compute_hash() == case["hash"]
        return
    if case["stage"] == "construct":
        with pytest.raises(ValidationError) as info:
            cls(**kwargs)
        assert _message(info.value) == case["error"]["message_no_url"]
    else:
        config = cls(**kwargs)
        with pytest.raises(KeyError) as key_info:
            config.compute_hash()
        assert isinstance(key_info.value, UnknownProviderError)
        assert "registered:" in str(key_info.value)
