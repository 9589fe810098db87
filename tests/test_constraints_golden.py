"""Explicit backend verdicts against vLLM 0.33.0's own support checks, executed on
simulated targets (``golden/vllm-0.33.0/constraints.json``).

The rule that matters: kernelcfg never says "error" where vLLM would start (a false
error stops a deployment that works), and it says "error" wherever every way vLLM can
read the value on that target refuses it. ``warning`` and ``ok`` may differ in
emphasis (a note where vLLM needs an optional library, say); that is counted, not
failed.
"""

from __future__ import annotations

from typing import Any

import pytest

from kernelcfg.checks.constraints import Context, check
from kernelcfg.targets.presets import PRESETS, Target

from .conftest import golden

pytestmark = pytest.mark.golden

DATA = golden("0.33.0", "constraints")


def _target(name: str) -> Target:
    """The kernelcfg preset that stands for a golden target (same kind and device)."""
    spec = DATA["meta"]["targets"][name]
    for preset in PRESETS.values():
        if preset.kind == spec["kind"] and preset.device == spec["device_name"]:
            return preset
    raise AssertionError(f"no preset for golden target {name}: {spec}")


def _severity(case: dict[str, Any]) -> str:
    ctx = Context(
        _target(case["device"]),
        "0.33.0",
        case["quantization"],
        expert_parallel=case["expert_parallel"],
    )
    problem = check(case["field"], case["value"], ctx).problem()
    return "ok" if problem is None else problem.severity


@pytest.mark.parametrize(
    "case",
    DATA["cases"],
    ids=[
        f"{c['device']}:{c['field']}={c['value']}:q={c['quantization']}:ep={c['expert_parallel']}"
        for c in DATA["cases"]
    ],
)
def test_error_exactly_where_vllm_refuses(case: dict[str, Any]) -> None:
    mine = _severity(case)
    if case["expected"] == "error":
        assert mine == "error", case["reason"]
    else:
        assert mine != "error", case["reason"]


def test_most_verdicts_agree_in_emphasis_too() -> None:
    """A note (``info``) stands for either; the known gap is a note where vLLM needs an
    optional library (FlashInfer's kernels, say), which ``--install`` will tell apart."""
    agree = {"error": {"error"}, "warning": {"warning", "info"}, "ok": {"ok", "info"}}
    same = sum(_severity(c) in agree[c["expected"]] for c in DATA["cases"])
    assert same / len(DATA["cases"]) >= 0.85, same
