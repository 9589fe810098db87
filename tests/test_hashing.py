"""The hash contract: dict order is irrelevant, hashed fields matter, ignored ones
do not, and two fresh processes agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from kernelcfg import for_version
from kernelcfg.vllm.kernel_config import hashing

from .conftest import golden_versions


def test_digest_ignores_dict_order() -> None:
    assert hashing.digest({"a": 1, "b": [1, 2]}) == hashing.digest({"b": [1, 2], "a": 1})


def test_normalize_mapping_is_sorted_pairs() -> None:
    assert hashing.normalize_value({"b": "x", "a": "y"}) == [["a", "y"], ["b", "x"]]
    assert hashing.normalize_value(("a", "a")) == ["a", "a"]


def test_normalize_rejects_the_unknown() -> None:
    with pytest.raises(TypeError, match="unsupported type"):
        hashing.normalize_value(object())


def _alternative(release: Any, name: str, kind: str, default: Any) -> Any:
    if kind == "bool":
        return not default if default is not None else True
    if kind == "choice":
        return next(c for c in release.choices(name) if c != default)
    return {"fp8": "triton"}


@pytest.mark.parametrize("version", golden_versions())
def test_each_hashed_field_changes_the_hash(version: str) -> None:
    api = for_version(version)
    base = api.KernelConfig()
    for facts in api.release.kernel_fields:
        if facts.kind == "ir_op_priority":
            continue
        changed = api.KernelConfig(
            **{facts.name: _alternative(api.release, facts.name, facts.kind, facts.default)}
        )
        ignored = facts.name in api.release.hash_ignored
        assert (changed.compute_hash() == base.compute_hash()) == ignored, facts.name
        assert (facts.name in changed.hash_factors()) != ignored


@pytest.mark.parametrize("version", golden_versions())
def test_ir_lists_change_the_hash(version: str) -> None:
    api = for_version(version)
    op = api.release.ir_ops[0]
    a = api.KernelConfig(ir_op_priority={op: ["native"]})
    b = api.KernelConfig(ir_op_priority={op: ["vllm_c", "native"]})
    assert a.compute_hash() != b.compute_hash()
    assert a.compute_hash() != api.KernelConfig().compute_hash()


def test_per_quant_leaves_the_hash_only_when_none() -> None:
    api = for_version("0.33.0")
    none = api.KernelConfig()
    some = api.KernelConfig(linear_backend_per_quant={"fp8": "triton"})
    assert "linear_backend_per_quant" not in none.hash_factors()
    assert some.hash_factors()["linear_backend_per_quant"] == [["fp8", "triton"]]


_SCRIPT = """
import json, kernelcfg
c = kernelcfg.KernelConfig(moe_backend="Flashinfer-TRTLLM",
    linear_backend_per_quant={"b": "triton", "a": "marlin"},
    ir_op_priority={"rms_norm": "vllm_c, native"})
print(json.dumps([c.compute_hash(), c.hash_factors()]))
"""


def test_two_processes_with_different_hash_seeds_agree() -> None:
    outputs = []
    for seed in ("1", "987654"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        outputs.append(json.loads(proc.stdout))
    assert outputs[0] == outputs[1]
    assert len(outputs[0][0]) == 64


def _sha256_of_json(factors: Any) -> str:
    """vLLM's digest, written out with ``json`` itself (not kernelcfg's encoder)."""
    import hashlib

    return hashlib.sha256(json.dumps(factors, sort_keys=True).encode()).hexdigest()


def _variants(release: Any) -> list[dict[str, Any]]:
    """Kernel configs that each change one field from the defaults (every choice of
    every field), plus IR-op lists of several shapes."""
    api = for_version(release.version)
    base = api.KernelConfig().values()
    out = [base]
    for facts in release.kernel_fields:
        if facts.kind == "choice":
            out += [{**base, facts.name: c} for c in release.choices(facts.name)]
        elif facts.kind == "bool":
            out += [{**base, facts.name: v} for v in (True, False, None)]
        elif facts.kind == "choice_map":
            out += [{**base, facts.name: v} for v in (None, {}, {"fp8": "triton", "a": "marlin"})]
    for op in release.ir_ops:
        known = list(release.providers(op))
        for lst in (known[:1], known[:2], known[:1] * 2, known[::-1], []):
            ir = {**base.get("ir_op_priority", {}), op: lst}
            if "ir_op_priority" in base:
                out.append({**base, "ir_op_priority": ir})
    return out


@pytest.mark.parametrize("version", golden_versions())
def test_kernel_hash_is_the_digest_of_its_factors(version: str) -> None:
    """The digest composed from pre-encoded parts equals sha256 of json.dumps of the factors."""
    release = for_version(version).release
    for values in _variants(release):
        factors, digest = hashing.kernel_hash(release, values)
        assert factors == hashing.kernel_factors(release, values)
        assert digest == _sha256_of_json(factors) == hashing.digest(factors), values


def test_factors_handed_out_are_the_callers_own() -> None:
    api = for_version("0.34.0")
    first = api.KernelConfig().hash_factors()
    first["ir_op_priority"]["_impls"].clear()
    assert api.KernelConfig().hash_factors()["ir_op_priority"]["_impls"]
